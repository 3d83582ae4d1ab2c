package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// AdoptOptions describes Redis nodes that run outside this process — in containers (the docker
// provider) or on someone else's machines (ConnectExternal) — for Adopt.
type AdoptOptions struct {
	// Nodes are the nodes' addresses (Node.Addr; RealAddr defaults to it) and, when known, their
	// Pid. With Form they must be fresh cluster-enabled nodes, primaries first.
	Nodes []Node
	// Form forms the cluster as StartLocal does (config epochs, ADDSLOTSRANGE, MEET, REPLICATE,
	// then waits for one agreed slot map). Without Form the nodes must already be a cluster.
	Form bool
	// Primaries is how many of Nodes become primaries with Form; the others replicate them in
	// turn. Ignored without Form.
	Primaries int
	// Live reports whether a node runs (e.g. its container is not stopped); nil means every node
	// runs. It is called with the Local's lock held: it must not call back into the Local.
	Live func(Node) bool
	// User and Password authenticate control connections ("" = default user / no AUTH).
	User, Password string
	// TLS, when set, is used for every control connection.
	TLS *tls.Config
	// Logf receives progress messages; nil is silent.
	Logf func(format string, args ...any)
}

// Adopt returns a Local that controls nodes running elsewhere through Redis commands only:
// Nodes, Primaries, PrimaryFor, ReplicasOf, ReplOffsets, WaitHealthy, MigrateSlots and Status
// work as for a local cluster; Signal, Kill, Pause, Resume, Restart and Stop wrap ErrUnsupported
// (the provider that runs the nodes does those); Close releases the clients only. The Redis
// version is read from the first node. ctx bounds the formation (DefaultStartTimeout when it has
// no deadline).
func Adopt(ctx context.Context, o AdoptOptions) (_ *Local, err error) {
	if len(o.Nodes) == 0 {
		return nil, errors.New("cluster: Adopt: AdoptOptions.Nodes is empty: give every node's address")
	}
	if o.Form && (o.Primaries < 1 || o.Primaries > len(o.Nodes)) {
		return nil, fmt.Errorf("cluster: Adopt: AdoptOptions.Primaries = %d: want 1..%d (the number of nodes)", o.Primaries, len(o.Nodes))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	primaries := o.Primaries
	if !o.Form {
		primaries = 0 // unknown until asked; Primaries() asks the cluster
	}
	opts := Options{Primaries: max(primaries, 1), Replicas: NoReplicas, Logf: o.Logf}.withDefaults()
	if o.Form && primaries > 0 {
		opts.Replicas = (len(o.Nodes) - primaries) / primaries
	}
	live := o.Live
	if live == nil {
		// No provider to ask: every node runs (an adopted node has no process of ours to look at).
		live = func(Node) bool { return true }
	}
	l := &Local{
		opts: opts, adopted: true, live: live,
		auth: auth{user: o.User, password: o.Password, tls: o.TLS},
	}
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	for _, n := range o.Nodes {
		_, port, err := net.SplitHostPort(n.Addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: Adopt: node address %q: %w; want host:port", n.Addr, err)
		}
		if n.Port == 0 {
			n.Port, _ = strconv.Atoi(port)
		}
		if n.RealAddr == "" {
			n.RealAddr, n.RealPort = n.Addr, n.Port
		}
		l.members = append(l.members, &member{Node: n, client: l.controlClient(n.RealAddr)})
	}
	vctx, cancel := context.WithTimeout(ctx, probeTimeout)
	info, err := l.members[0].client.Info(vctx, "server").Result()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("cluster: Adopt: INFO server on %s: %w", l.members[0].Addr, err)
	}
	l.version = parseInfo(info)["redis_version"]
	if o.Form {
		began := time.Now()
		if err := l.form(ctx); err != nil {
			return nil, err
		}
		l.opts.Logf("cluster: %d adopted nodes formed a cluster in %v", len(l.members), time.Since(began).Round(time.Millisecond))
		return l, nil
	}
	// An existing cluster: learn IDs and roles now, so that Nodes and ReplicasOf work at once.
	if _, err := l.refresh(ctx); err != nil {
		return nil, fmt.Errorf("cluster: Adopt: CLUSTER NODES: %w", err)
	}
	return l, nil
}
