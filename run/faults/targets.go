package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// Fault targets resolve at injection, against the cluster's roles and slot map of that moment:
//
//   - hottest, slot:N and primary-of:TENANT name the primary that serves the slot now;
//   - node:N of a fault that needs a primary (kill-primary, failover, partition, a reshard's from and to)
//     names shard N: the N-th shard in slot order (cluster.Cluster.Shards) when the run started,
//     and resolves to whichever of that shard's nodes is its primary now. On a cluster ratelab
//     started that shard's first primary is the N-th node as started; on an external cluster it
//     is the primary that served the N-th lowest range of slots (redis-cli --cluster create gives
//     its primaries ranges in the order of its arguments). After a failover it is the replica
//     that took the shard's slots over; a reshard changes the shard's slots, not which shard it
//     is;
//   - node:N of any other fault (pause, latency, restart, script-flush) names the N-th node of
//     cluster.Cluster.Nodes, whatever its role: as started for the local, docker and running
//     providers, in slot order as found at connect for an external cluster;
//   - all and killed name every running node and the node an earlier kill-primary took down.

// target is what a fault's target resolved to.
type target struct {
	addrs []string // the nodes the fault acts on
	desc  string   // the target as written and what it resolved to, for the summary
	// from and to are a reshard's source and destination shards.
	from, to cluster.Shard
}

// needsPrimary reports whether faults of kind act on a primary: for them node:N names a shard.
func needsPrimary(kind scenarios.FaultKind) bool {
	return kind == scenarios.FaultKillPrimary || kind == scenarios.FaultFailover || kind == scenarios.FaultReshard ||
		kind == scenarios.FaultPartition
}

// resolve turns a fault's target into node addresses and a readable description. On error the
// description is the target as written.
func (r *Runner) resolve(ctx context.Context, f scenarios.FaultSpec) (target, error) {
	if f.Kind == scenarios.FaultReshard {
		return r.resolveReshard(ctx, f)
	}
	t := f.Target
	if t == "" {
		t = "hottest"
	}
	fail := func(err error) (target, error) { return target{desc: t}, err }
	switch {
	case t == "hottest":
		return r.primaryOfKey(t, r.run.HotKey())
	case strings.HasPrefix(t, "primary-of:"):
		return r.primaryOfKey(t, r.run.KeyOf(strings.TrimPrefix(t, "primary-of:")))
	case strings.HasPrefix(t, "slot:"):
		slot, _ := strconv.Atoi(strings.TrimPrefix(t, "slot:"))
		n, err := r.cl.PrimaryFor(slot)
		if err != nil {
			return fail(err)
		}
		return target{addrs: []string{n.Addr}, desc: fmt.Sprintf("%s = %s", t, n.Addr)}, nil
	case t == "killed":
		r.mu.Lock()
		k := r.killed
		r.mu.Unlock()
		if k == "" {
			return fail(fmt.Errorf("target killed: no kill-primary ran before this fault"))
		}
		return target{addrs: []string{k}, desc: "killed = " + k}, nil
	case t == "all":
		addrs := r.all(f.Kind == scenarios.FaultScriptFlush)
		return target{addrs: addrs, desc: fmt.Sprintf("all (%d nodes)", len(addrs))}, nil
	case strings.HasPrefix(t, "node:") && needsPrimary(f.Kind):
		sh, err := r.shard(ctx, t)
		if err != nil {
			return fail(err)
		}
		return target{addrs: []string{sh.Primary.Addr}, desc: t + " = " + shardDesc(sh)}, nil
	case strings.HasPrefix(t, "node:"):
		n, err := r.node(t)
		if err != nil {
			return fail(err)
		}
		return target{addrs: []string{n.Addr}, desc: fmt.Sprintf("%s = %s (%s)", t, n.Addr, n.Role)}, nil
	}
	return fail(fmt.Errorf("unknown target %q", t))
}

// primaryOfKey resolves target t to the primary that serves key's slot now.
func (r *Runner) primaryOfKey(t, key string) (target, error) {
	slot := cluster.KeySlot(key)
	n, err := r.cl.PrimaryFor(slot)
	if err != nil {
		return target{desc: t}, err
	}
	return target{addrs: []string{n.Addr}, desc: fmt.Sprintf("%s = %s (primary of slot %d)", t, n.Addr, slot)}, nil
}

// resolveReshard resolves a reshard's from and to to two shards; from must serve at least the
// slots to move.
func (r *Runner) resolveReshard(ctx context.Context, f scenarios.FaultSpec) (target, error) {
	tg := target{desc: fmt.Sprintf("%d slots %s -> %s", f.Slots, f.From, f.To)}
	from, err := r.shard(ctx, f.From)
	if err != nil {
		return tg, fmt.Errorf("from: %w", err)
	}
	to, err := r.shard(ctx, f.To)
	if err != nil {
		return tg, fmt.Errorf("to: %w", err)
	}
	tg.desc = fmt.Sprintf("%d slots from %s = %s to %s = %s", f.Slots, f.From, shardDesc(from), f.To, shardDesc(to))
	switch {
	case from.Primary.ID == to.Primary.ID:
		return tg, fmt.Errorf("from %s and to %s are the same primary %s", f.From, f.To, from.Primary.Addr)
	case from.SlotCount() < f.Slots:
		return tg, fmt.Errorf("%s (%s) serves %d slots, fewer than the %d to move", f.From, from.Primary.Addr, from.SlotCount(), f.Slots)
	}
	tg.addrs, tg.from, tg.to = []string{from.Primary.Addr, to.Primary.Addr}, from, to
	return tg, nil
}

// lineage is a shard as the run found it: its primary's and replicas' node IDs.
type lineage struct {
	primary  string
	replicas []string
}

// startLineage reads the shards of cl in slot order, or nil (logged) when it cannot.
func startLineage(cl cluster.Cluster, logf func(string, ...any)) []lineage {
	shards, err := cl.Shards(context.Background())
	if err != nil {
		logf("faults: cannot read the cluster's shards before the run (%v): node:N of a kill, failover or reshard names the N-th shard in slot order when the fault comes", err)
		return nil
	}
	out := make([]lineage, len(shards))
	for i, sh := range shards {
		out[i].primary = sh.Primary.ID
		for _, n := range sh.Replicas {
			out[i].replicas = append(out[i].replicas, n.ID)
		}
	}
	return out
}

// shard resolves node:N, for a fault that needs a primary, to shard N as it is now: the shard
// that was N-th in slot order when the run started, followed through failovers — the shard that
// now holds that shard's first primary (as primary or, after a failover, as a replica), or else
// the one one of its first replicas is primary of (its first primary was killed and is gone).
// Its slots may have changed meanwhile (a reshard); its replication group has not.
func (r *Runner) shard(ctx context.Context, t string) (cluster.Shard, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(t, "node:"))
	if !strings.HasPrefix(t, "node:") || err != nil || i < 0 {
		return cluster.Shard{}, fmt.Errorf("%q: name a primary as node:N", t)
	}
	now, err := r.cl.Shards(ctx)
	if err != nil {
		return cluster.Shard{}, fmt.Errorf("%s: %w", t, err)
	}
	if r.shards == nil { // the start could not be read: the slot map now
		if i >= len(now) {
			return cluster.Shard{}, fmt.Errorf("%s names shard %d in slot order, but %d primaries serve slots now: %s", t, i, len(now), shardsDesc(now))
		}
		return now[i], nil
	}
	if i >= len(r.shards) {
		return cluster.Shard{}, fmt.Errorf("%s names shard %d in slot order, but %d primaries served slots when the run started; now: %s",
			t, i, len(r.shards), shardsDesc(now))
	}
	first := r.shards[i]
	for _, sh := range now {
		if sh.Primary.ID == first.primary || slices.ContainsFunc(sh.Replicas, func(n cluster.Node) bool { return n.ID == first.primary }) {
			return sh, nil
		}
	}
	for _, sh := range now {
		if slices.Contains(first.replicas, sh.Primary.ID) {
			return sh, nil
		}
	}
	return cluster.Shard{}, fmt.Errorf("%s: no node of shard %d (as the run started) serves slots now: %s", t, i, shardsDesc(now))
}

// shardsDesc lists shards with shardDesc.
func shardsDesc(shards []cluster.Shard) string {
	out := make([]string, len(shards))
	for i, sh := range shards {
		out[i] = shardDesc(sh)
	}
	return strings.Join(out, ", ")
}

// node resolves node:N, for a fault that needs no primary, to the N-th node of the provider's
// order, whatever its role.
func (r *Runner) node(t string) (cluster.Node, error) {
	nodes := r.cl.Nodes()
	i, err := strconv.Atoi(strings.TrimPrefix(t, "node:"))
	if err != nil || i < 0 || i >= len(nodes) {
		return cluster.Node{}, fmt.Errorf("%s: the cluster has %d nodes (node:0 .. node:%d)", t, len(nodes), len(nodes)-1)
	}
	return nodes[i], nil
}

// all lists the running nodes (only the primaries when primariesOnly).
func (r *Runner) all(primariesOnly bool) []string {
	var addrs []string
	nodes := r.cl.Nodes()
	running := runningFunc(nodes)
	for _, n := range nodes {
		if running(n) && (!primariesOnly || n.Role == cluster.RolePrimary) {
			addrs = append(addrs, n.Addr)
		}
	}
	return addrs
}

// runningFunc tells which of nodes run. Local and docker nodes carry a pid, 0 while a node is
// down; an external cluster's never do, so without any pid every node counts as running.
func runningFunc(nodes []cluster.Node) func(cluster.Node) bool {
	pids := false
	for _, n := range nodes {
		pids = pids || n.Pid != 0
	}
	return func(n cluster.Node) bool { return n.Pid != 0 || !pids }
}

// shardDesc names a shard's primary and its slots, e.g. "127.0.0.1:7000 (primary of 5461 slots
// from 0)".
func shardDesc(sh cluster.Shard) string {
	return fmt.Sprintf("%s (primary of %d slots from %d)", sh.Primary.Addr, sh.SlotCount(), sh.FirstSlot())
}

// requirePrimary checks that addr is a primary now: a role may have moved since it resolved.
func (r *Runner) requirePrimary(addr string) error {
	for _, n := range r.cl.Nodes() {
		if n.Addr == addr {
			if n.Role != cluster.RolePrimary {
				return fmt.Errorf("%s is a %s, not a primary", addr, n.Role)
			}
			return nil
		}
	}
	return fmt.Errorf("%s is not a node of this cluster", addr)
}
