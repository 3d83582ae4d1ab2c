package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Network partitions between nodes (Options.Partitionable). Every node connects from a
// loopback address of its own (bind-source-addr 127.0.0.N) and sits behind two proxies: the
// client proxy of Options.Proxy, which replicas dial too, and a bus proxy it announces as its
// cluster bus port. Every connection one node opens to another therefore arrives at a proxy of
// the other from the first node's source address, and a proxy refuses the sources on the other
// side of a partition; clients, which connect from 127.0.0.1, always pass.

// memberProxies starts node i's proxies and picks its source address: nothing without
// Options.Proxy; the client proxy with it; with Options.Partitionable also the bus proxy and
// source address 127.0.0.(i+2). The proxies are closed by Close, whatever happens to the node.
func (l *Local) memberProxies(i int) (px, bus *proxy, src netip.Addr, err error) {
	if !l.opts.Proxy {
		return nil, nil, netip.Addr{}, nil
	}
	if px, err = newProxy(); err != nil {
		return nil, nil, netip.Addr{}, err
	}
	l.mu.Lock()
	l.proxies = append(l.proxies, px)
	l.mu.Unlock()
	if !l.opts.Partitionable {
		return px, nil, netip.Addr{}, nil
	}
	if bus, err = newProxy(); err != nil {
		return nil, nil, netip.Addr{}, err
	}
	l.mu.Lock()
	l.proxies = append(l.proxies, bus)
	l.mu.Unlock()
	return px, bus, sourceAddr(i), nil
}

// sourceAddr is node i's source address under Options.Partitionable: 127.0.0.(i+2), never
// 127.0.0.1, which clients use (Validate bounds i).
func sourceAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 2)}) }

// Partition cuts every link between a node in isolated (addresses as Nodes and Addrs report
// them, or real addresses) and a node outside it, in both directions: the cluster bus (gossip,
// failure reports, failover votes) and replication. Open connections across the cut are closed
// at once and new ones are refused (accepted and reset) until Heal or another Partition, which
// replaces this one. Links within each side stay up, and so do all client connections (any
// source other than a node's, such as 127.0.0.1): a client still reaches every node, on both
// sides, through the same addresses; nor are this package's control connections cut (they go to
// the real addresses).
// What the nodes make of the cut (fail? after cluster-node-timeout, fail once a majority of
// primaries agrees, a failover on the majority side, CLUSTERDOWN on the minority side) is
// theirs: Partition does not wait for it (see NodesSeenBy, WaitHealthy). Meanwhile Nodes,
// Primaries and PrimaryFor read the first node that answers, whichever side it is on; ask a
// given side with NodesSeenBy. A restarted node stays on its side. An empty isolated set,
// or one holding every node, cuts nothing. It wraps ErrUnsupported unless the cluster was
// started with Options.Partitionable, and ErrUnknownNode for an address not in the cluster.
func (l *Local) Partition(ctx context.Context, isolated []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: Partition(%v): %w", isolated, err)
	}
	members, err := l.partitionable("Partition")
	if err != nil {
		return err
	}
	in := map[*member]bool{}
	for _, a := range isolated {
		m, err := l.member(a)
		if err != nil {
			return fmt.Errorf("cluster: Partition: isolated = %v: %w", isolated, err)
		}
		in[m] = true
	}
	l.partMu.Lock()
	defer l.partMu.Unlock()
	for _, m := range members {
		across := map[netip.Addr]bool{}
		for _, o := range members {
			if in[o] != in[m] {
				across[o.source] = true
			}
		}
		m.proxy.setCut(false, across)
		m.busProxy.setCut(false, across)
	}
	if len(in) > 0 {
		l.opts.Logf("cluster: partition: %s cut off from the other nodes", strings.Join(isolated, " "))
	}
	return nil
}

// Heal restores every link Partition cut: the nodes reconnect on their own (the bus within a
// tenth of a second, a replica within a second). It does not wait for the cluster to converge:
// a node the majority flagged as failed is cleared once it is reachable again and a former
// primary whose replica was promoted rejoins as its replica (use WaitHealthy). It wraps
// ErrUnsupported unless the cluster was started with Options.Partitionable.
func (l *Local) Heal(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster: Heal: %w", err)
	}
	members, err := l.partitionable("Heal")
	if err != nil {
		return err
	}
	l.partMu.Lock()
	defer l.partMu.Unlock()
	for _, m := range members {
		m.proxy.setCut(false, nil)
		m.busProxy.setCut(false, nil)
	}
	l.opts.Logf("cluster: partition healed")
	return nil
}

// partitionable returns every node when the cluster can be partitioned, or the error saying
// why not.
func (l *Local) partitionable(what string) ([]*member, error) {
	if l.adopted {
		return nil, fmt.Errorf("cluster: %s: %w: the nodes run outside this process, without the local provider's proxies (use their provider)", what, ErrUnsupported)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("cluster: %s: the cluster is closed", what)
	}
	for _, m := range l.members {
		if m == nil || m.busProxy == nil || m.proxy == nil || !m.source.IsValid() {
			return nil, fmt.Errorf("cluster: %s: %w: the local cluster was started without Options.Partitionable = true", what, ErrUnsupported)
		}
	}
	return slices.Clone(l.members), nil
}

// checkBusProxied is true of a Partitionable cluster once every node's bus proxy holds a
// connection from every other node's source address. It proves that bind-source-addr took
// effect and that the bus goes through the proxies: otherwise Partition would cut nothing.
func (l *Local) checkBusProxied(context.Context) error {
	var probs []string
	for _, m := range l.members {
		from := m.busProxy.sources()
		var missing []string
		for _, o := range l.members {
			if o != m && from[o.source] == 0 {
				missing = append(missing, o.Addr+" ("+o.source.String()+")")
			}
		}
		if len(missing) > 0 {
			probs = append(probs, fmt.Sprintf("the bus proxy of %s has no connection from %s", m.Addr, strings.Join(missing, ", ")))
		}
	}
	return joinProbs(probs)
}

// sources counts the proxy's open connections by source address.
func (p *proxy) sources() map[netip.Addr]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[netip.Addr]int{}
	for l := range p.links {
		out[l.src]++
	}
	return out
}
