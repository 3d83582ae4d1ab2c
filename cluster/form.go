package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster formation, from Go and without redis-cli:
//
//  1. CLUSTER MYID on every node; CLUSTER SET-CONFIG-EPOCH i+1 so that no two primaries share a
//     config epoch (otherwise the nodes spend a while resolving the collision);
//  2. CLUSTER ADDSLOTSRANGE on each primary: an even split of the 16384 slots (evenSlots);
//  3. CLUSTER MEET node 0 from every other node; wait until every node knows every other one;
//  4. CLUSTER REPLICATE on each replica: replica r follows primary r mod Primaries;
//  5. wait until every replica's link to its primary is up; then FLUSHALL each (empty) primary:
//     the only effect is a replicated write, which moves the replication offset off 0 — Redis 7
//     leaves replicas whose offset is 0 out of CLUSTER SLOTS, so clients would not see them;
//  6. wait until every node reports cluster_state:ok with all slots assigned, all nodes share the
//     same topology (IDs, roles, primaries, slot ranges), CLUSTER SLOTS (with every replica) and
//     current epoch.

// form runs the steps above; ctx bounds it.
func (l *Local) form(ctx context.Context) error {
	p := l.opts.Primaries
	ms := l.members
	for i, m := range ms {
		id, err := m.client.ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("cluster: CLUSTER MYID on %s: %w", m.Addr, err)
		}
		if err := m.client.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("cluster: CLUSTER SET-CONFIG-EPOCH %d on %s: %w", i+1, m.Addr, err)
		}
		l.mu.Lock()
		m.ID = id
		m.Role = RolePrimary
		l.mu.Unlock()
	}
	for i, r := range evenSlots(p) {
		if err := ms[i].client.ClusterAddSlotsRange(ctx, r.Start, r.End).Err(); err != nil {
			return fmt.Errorf("cluster: CLUSTER ADDSLOTSRANGE %d %d on %s: %w", r.Start, r.End, ms[i].Addr, err)
		}
	}
	for _, m := range ms[1:] {
		// The real port: MEET derives the bus port as port+10000. The announced (proxy) port
		// reaches the peers with the first PING/PONG, which checkMet waits for. Behind a bus
		// proxy (Options.Partitionable) the MEET goes through the proxies from the start.
		meet := []any{"CLUSTER", "MEET", "127.0.0.1", ms[0].RealPort}
		if ms[0].busProxy != nil {
			meet = []any{"CLUSTER", "MEET", "127.0.0.1", ms[0].Port, ms[0].busProxy.port}
		}
		if err := m.client.Do(ctx, meet...).Err(); err != nil {
			return fmt.Errorf("cluster: %v on %s: %w", meet, m.Addr, err)
		}
	}
	if err := l.waitFor(ctx, "all nodes to know each other", l.checkMet); err != nil {
		return err
	}
	for r, m := range ms[p:] {
		primary := ms[r%p]
		if err := m.client.ClusterReplicate(ctx, primary.ID).Err(); err != nil {
			return fmt.Errorf("cluster: CLUSTER REPLICATE %s (%s) on %s: %w", primary.ID, primary.Addr, m.Addr, err)
		}
		l.mu.Lock()
		m.Role, m.PrimaryID = RoleReplica, primary.ID
		l.mu.Unlock()
	}
	if p < len(ms) {
		if err := l.waitFor(ctx, "every replica to sync with its primary", l.checkReplicas); err != nil {
			return err
		}
		for _, m := range ms[:p] {
			if err := m.client.FlushAll(ctx).Err(); err != nil {
				return fmt.Errorf("cluster: FLUSHALL on new primary %s: %w", m.Addr, err)
			}
		}
	}
	return l.waitFor(ctx, "cluster_state:ok and one slot map on every node", l.checkReady)
}

// waitFor polls check until it returns nil or ctx ends; the error then carries check's last answer,
// which names what was not ready on which node.
func (l *Local) waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	began := time.Now()
	var err error
	for {
		cerr := check(ctx)
		if cerr == nil {
			l.opts.Logf("cluster: %s after %v", what, time.Since(began).Round(time.Millisecond))
			return nil
		}
		if err == nil || ctx.Err() == nil {
			err = cerr // keep the last answer given before the deadline cut a probe short
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waited %v for %s: %w: %w (%w)", time.Since(began).Round(time.Millisecond), what, ErrNotReady, err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// checkMet: every node lists every node at its announced address (so that a replica told to
// REPLICATE connects through its primary's proxy), none still in handshake or without an address.
func (l *Local) checkMet(ctx context.Context) error {
	var probs []string
	announced := map[string]bool{}
	bus := map[string]int{} // announced address -> bus proxy port (Options.Partitionable)
	for _, m := range l.members {
		announced[m.Addr] = true
		if m.busProxy != nil {
			bus[m.Addr] = m.busProxy.port
		}
	}
	for _, m := range l.members {
		view, err := l.view(ctx, m)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		known := 0
		for _, v := range view {
			if !v.has("handshake") && !v.has("noaddr") && announced[v.Addr] && (bus[v.Addr] == 0 || bus[v.Addr] == v.BusPort) {
				known++
			}
		}
		if known != len(l.members) {
			probs = append(probs, fmt.Sprintf("%s knows %d of %d nodes", m.Addr, known, len(l.members)))
		}
	}
	return joinProbs(probs)
}

// checkReady is the final readiness test (step 5).
func (l *Local) checkReady(ctx context.Context) error {
	var probs []string
	want, wantSlots := l.wantTopology(), l.wantSlotsKey()
	epochs := map[string]bool{}
	for _, m := range l.members {
		s, err := m.client.ClusterInfo(ctx).Result()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: CLUSTER INFO: %v", m.Addr, err))
			continue
		}
		info := parseInfo(s)
		if st := info["cluster_state"]; st != "ok" {
			probs = append(probs, fmt.Sprintf("%s: cluster_state:%s", m.Addr, st))
		}
		if a := info["cluster_slots_assigned"]; a != strconv.Itoa(TotalSlots) {
			probs = append(probs, fmt.Sprintf("%s: cluster_slots_assigned:%s", m.Addr, a))
		}
		epochs[info["cluster_current_epoch"]] = true
		view, err := l.view(ctx, m)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		if got := topologyKey(view); got != want {
			probs = append(probs, fmt.Sprintf("%s: topology differs from the plan:\n%s\nwant:\n%s", m.Addr, got, want))
		}
		for _, v := range view {
			if v.has("fail") || v.has("fail?") || !v.Connected {
				probs = append(probs, fmt.Sprintf("%s sees %s as %s (link %v)", m.Addr, v.Addr, strings.Join(v.Flags, ","), v.Connected))
			}
		}
		slots, err := m.client.ClusterSlots(ctx).Result()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: CLUSTER SLOTS: %v", m.Addr, err))
			continue
		}
		if got := slotsKey(slots); got != wantSlots {
			probs = append(probs, fmt.Sprintf("%s: CLUSTER SLOTS (range: primary replicas...) is\n%s\nwant\n%s", m.Addr, got, wantSlots))
		}
	}
	if len(epochs) > 1 {
		probs = append(probs, fmt.Sprintf("nodes disagree on cluster_current_epoch (%d distinct values)", len(epochs)))
	}
	return joinProbs(probs)
}

// checkReplicas: every replica reports master_link_status:up.
func (l *Local) checkReplicas(ctx context.Context) error {
	var probs []string
	for _, m := range l.members[l.opts.Primaries:] {
		rs, err := m.client.Info(ctx, "replication").Result()
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: INFO replication: %v", m.Addr, err))
		} else if st := parseInfo(rs)["master_link_status"]; st != "up" {
			probs = append(probs, fmt.Sprintf("%s: master_link_status:%s", m.Addr, st))
		}
	}
	return joinProbs(probs)
}

// slotsKey renders CLUSTER SLOTS as sorted lines "start-end primary replica...", replicas sorted.
func slotsKey(slots []redis.ClusterSlot) string {
	lines := make([]string, 0, len(slots))
	for _, s := range slots {
		var b strings.Builder
		fmt.Fprintf(&b, "%d-%d", s.Start, s.End)
		addrs := make([]string, len(s.Nodes))
		for i, n := range s.Nodes {
			addrs[i] = n.Addr
		}
		if len(addrs) > 1 {
			slices.Sort(addrs[1:])
		}
		for _, a := range addrs {
			b.WriteString(" " + a)
		}
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// wantSlotsKey renders the planned CLUSTER SLOTS in slotsKey's form.
func (l *Local) wantSlotsKey() string {
	p := l.opts.Primaries
	var slots []redis.ClusterSlot
	for i, r := range evenSlots(p) {
		s := redis.ClusterSlot{Start: r.Start, End: r.End, Nodes: []redis.ClusterNode{{Addr: l.members[i].Addr}}}
		for j := p + i; j < len(l.members); j += p {
			s.Nodes = append(s.Nodes, redis.ClusterNode{Addr: l.members[j].Addr})
		}
		slots = append(slots, s)
	}
	return slotsKey(slots)
}

// wantTopology renders the planned topology in topologyKey's form.
func (l *Local) wantTopology() string {
	slots := evenSlots(l.opts.Primaries)
	view := make([]nodeLine, len(l.members))
	for i, m := range l.members {
		v := nodeLine{ID: m.ID, Addr: m.Addr}
		if i < l.opts.Primaries {
			v.Flags = []string{"master"}
			v.Slots = []SlotRange{slots[i]}
		} else {
			v.Flags = []string{"slave"}
			v.PrimaryID = l.members[(i-l.opts.Primaries)%l.opts.Primaries].ID
		}
		view[i] = v
	}
	return topologyKey(view)
}

// view returns m's CLUSTER NODES.
func (l *Local) view(ctx context.Context, m *member) ([]nodeLine, error) {
	s, err := m.client.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", m.Addr, err)
	}
	return parseClusterNodes(s)
}

// joinProbs turns a list of readiness problems into one error (nil when there are none).
func joinProbs(probs []string) error {
	if len(probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(probs, "; "))
}
