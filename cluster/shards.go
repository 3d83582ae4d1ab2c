package cluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
)

// Shard is one shard of the cluster: a primary, the slots it serves and its replicas.
type Shard struct {
	// Primary is the node that serves Slots.
	Primary Node
	// Slots are the ranges Primary serves, ascending.
	Slots []SlotRange
	// Replicas are the nodes that follow Primary, by address.
	Replicas []Node
}

// SlotCount is the number of slots the shard serves.
func (s Shard) SlotCount() int {
	n := 0
	for _, r := range s.Slots {
		n += r.Len()
	}
	return n
}

// FirstSlot is the lowest slot the shard serves (-1 when it serves none).
func (s Shard) FirstSlot() int {
	if len(s.Slots) == 0 {
		return -1
	}
	return s.Slots[0].Start
}

// Shards returns the shards of the cluster in slot order — by the lowest slot each primary
// serves — as CLUSTER NODES of the first node that answers shows them now (roles are refreshed
// as Nodes does). A primary that serves no slot is no shard. In a cluster ratelab formed, while
// no failover has moved a role, shard i's primary is the i-th node as started (formation gives
// primary i the i-th range of slots); after a failover it is the node that took those slots
// over. The fault runner numbers shards by this order as a run starts: node:N of a kill, a
// failover or a reshard names shard N.
func (l *Local) Shards(ctx context.Context) ([]Shard, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	view, err := l.refresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: Shards: %w", err)
	}
	known := map[string]Node{}
	for _, n := range l.current() {
		known[n.ID] = n
	}
	node := func(v nodeLine) Node {
		if n, ok := known[v.ID]; ok {
			return n
		}
		// A node that joined after this handle was made: what CLUSTER NODES says of it.
		_, p, _ := net.SplitHostPort(v.Addr)
		port, _ := strconv.Atoi(p)
		return Node{ID: v.ID, Addr: v.Addr, Port: port, RealAddr: v.Addr, RealPort: port, Role: v.role(), PrimaryID: v.PrimaryID}
	}
	var out []Shard
	for _, v := range slotOrder(view) {
		if v.role() != RolePrimary || len(v.Slots) == 0 {
			continue
		}
		sh := Shard{Primary: node(v), Slots: slices.Clone(v.Slots)}
		slices.SortFunc(sh.Slots, func(a, b SlotRange) int { return a.Start - b.Start })
		for _, r := range view {
			if r.role() == RoleReplica && r.PrimaryID == v.ID {
				sh.Replicas = append(sh.Replicas, node(r))
			}
		}
		slices.SortFunc(sh.Replicas, func(a, b Node) int { return compareAddr(a.Addr, b.Addr) })
		out = append(out, sh)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster: Shards: no primary serves a slot in CLUSTER NODES: %w", ErrNoOwner)
	}
	return out, nil
}

// slotOrder orders a CLUSTER NODES view the way ratelab starts a cluster: first the primaries
// that serve slots, by the lowest slot they serve; then primaries that serve none, by address;
// then the replicas in rounds — the first replica (by address) of each of those primaries in
// that order, then the second, and so on; last any node whose primary is not in the view, or
// that has no role yet, by address. For a cluster ratelab formed, with no role moved, this is
// the order its nodes were started in (primary i serves the i-th range; replica r follows
// primary r mod primaries).
func slotOrder(view []nodeLine) []nodeLine {
	var primaries, rest []nodeLine
	replicasOf := map[string][]nodeLine{}
	for _, v := range view {
		switch v.role() {
		case RolePrimary:
			primaries = append(primaries, v)
		case RoleReplica:
			replicasOf[v.PrimaryID] = append(replicasOf[v.PrimaryID], v)
		default:
			rest = append(rest, v)
		}
	}
	first := func(v nodeLine) int {
		lo := TotalSlots
		for _, r := range v.Slots {
			lo = min(lo, r.Start)
		}
		return lo // TotalSlots when it serves none: after every primary that does
	}
	slices.SortStableFunc(primaries, func(a, b nodeLine) int {
		return cmp.Or(first(a)-first(b), compareAddr(a.Addr, b.Addr))
	})
	for _, reps := range replicasOf {
		slices.SortFunc(reps, func(a, b nodeLine) int { return compareAddr(a.Addr, b.Addr) })
	}
	out := append([]nodeLine(nil), primaries...)
	for round := 0; ; round++ {
		added := false
		for _, p := range primaries {
			if reps := replicasOf[p.ID]; round < len(reps) {
				out = append(out, reps[round])
				added = true
			}
		}
		if !added {
			break
		}
	}
	for id, reps := range replicasOf {
		if !slices.ContainsFunc(primaries, func(p nodeLine) bool { return p.ID == id }) {
			rest = append(rest, reps...)
		}
	}
	slices.SortFunc(rest, func(a, b nodeLine) int { return compareAddr(a.Addr, b.Addr) })
	return append(out, rest...)
}

// compareAddr orders "host:port" addresses by host, then by port as a number (so that
// 127.0.0.1:7000 comes before 127.0.0.1:10000).
func compareAddr(a, b string) int {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return cmp.Compare(a, b)
	}
	na, _ := strconv.Atoi(pa)
	nb, _ := strconv.Atoi(pb)
	return cmp.Or(cmp.Compare(ha, hb), cmp.Compare(na, nb))
}
