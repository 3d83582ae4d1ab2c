//go:build faults

package engine

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/results"
	"ratelab/run/faults"
)

// partitionRun runs a partition of the hottest primary (5 s cut; 1 s node timeout unless extra
// has a cluster section) with the debit audit and extra's limiter section, and returns the
// summary and each side's views.
func partitionRun(t *testing.T, extra string) (*results.Summary, []faults.PartitionView) {
	t.Helper()
	clustertest.Watch(t)
	spec := faultSpec(t, 12*time.Second, extra+"faults: [{at: 3s, kind: partition, target: hottest, for: 5s}]\n")
	ctx := context.Background()
	s, err := Open(ctx, spec, Options{Out: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.Drive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Finish(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	clustertest.RecordLag(t, sum.Load.ScheduleLagP99Ms)
	if len(sum.Faults) != 1 || sum.Faults[0].Failed || sum.Faults[0].Kind != "partition" {
		t.Fatalf("faults %+v, want one partition carried out", sum.Faults)
	}
	if sum.TokensBack == nil {
		t.Fatal("no tokens_back with limiter.audit")
	}
	t.Logf("tokens back %+v (durability %s), overspend by cause %v", *sum.TokensBack, sum.Environment.Durability, sum.Overspend.ByCause)
	return sum, s.faults.Views()
}

// TestPartitionTokensBack: a partition of the hottest primary under async replication returns
// debits — the isolated primary acknowledged them for about node_timeout, and the replica the
// majority promoted never saw them — within the bound (node_timeout x the rate on its slots +
// the replication gap), all of them the partition's; the overspend while it lasts is the
// partition's. Each side's CLUSTER NODES shows the cut (the isolated primary suspects everyone,
// the majority failed it over) and the heal (nobody flagged, the old primary a replica). With
// durability wait the decisions the clients saw allowed were on a replica: far fewer tokens come
// back.
func TestPartitionTokensBack(t *testing.T) {
	async, views := partitionRun(t, "limiter: {audit: true, timeout: 500ms}\n")
	tb := async.TokensBack
	if tb.Min <= 0 || tb.Verdict != results.VerdictWithin {
		t.Errorf("async: tokens back %d..%d against bound %.1f; want some back, within the bound", tb.Min, tb.Max, tb.Bound)
	}
	// The same loss bounds the overspend: the isolated window and the gap are its sources.
	ob := async.Overspend.Bound
	if w, g := ob.Sources[results.BoundIsolatedWindow], ob.Sources[results.BoundReplicationGap]; w <= 0 || math.Abs(w+g-tb.Bound) > 1e-9 || len(ob.Unmeasured) != 0 {
		t.Errorf("overspend bound %+v (unmeasured %v): want the isolated window (> 0) and the gap, summing to tokens back's bound %.1f", ob, ob.Unmeasured, tb.Bound)
	}
	if tb.ByFault["partition hottest"] != tb.Min {
		t.Errorf("async: by fault %v, want all %d tokens the partition's", tb.ByFault, tb.Min)
	}
	if async.Environment.Durability != "async" {
		t.Errorf("environment.durability = %q, want async", async.Environment.Durability)
	}
	if async.Overspend.ByCause["partition"] <= 0 {
		t.Errorf("overspend by cause %v: the promoted replica re-spends the lost debits, want some under partition", async.Overspend.ByCause)
	}
	checkViews(t, views)

	wait, _ := partitionRun(t, "limiter: {audit: true, timeout: 500ms, durability: wait, durability_timeout: 100ms}\n")
	if w := wait.TokensBack; w.Min*10 > tb.Min || w.Max >= tb.Max {
		t.Errorf("wait: %d..%d tokens back, async %d..%d: WAIT should keep all but a few, and its unknown outcomes (unreplicated) leave a narrower range", w.Min, w.Max, tb.Min, tb.Max)
	}
	if wait.Environment.Durability != "wait" {
		t.Errorf("environment.durability = %q, want wait", wait.Environment.Durability)
	}
}

// checkViews checks what each side saw before the heal and after it.
func checkViews(t *testing.T, views []faults.PartitionView) {
	t.Helper()
	find := func(when, side string) faults.PartitionView {
		for _, v := range views {
			if v.When == when && v.Side == side {
				return v
			}
		}
		t.Fatalf("no view %s from the %s side in %+v", when, side, views)
		return faults.PartitionView{}
	}
	iso := find("before the heal", "isolated")
	for _, n := range iso.Nodes {
		if !n.Myself() && !n.Suspected() && !n.Failed() {
			t.Errorf("before the heal the isolated %s still hears from %s: %+v", iso.From, n.Addr, n)
		}
	}
	maj := find("before the heal", "majority")
	isolated := slices.IndexFunc(maj.Nodes, func(n cluster.NodeView) bool { return n.Addr == iso.From })
	if isolated < 0 || !maj.Nodes[isolated].Failed() || len(maj.Nodes[isolated].Slots) != 0 {
		t.Errorf("before the heal the majority (%s) sees %+v: want %s failed and its slots given to its replica", maj.From, maj.Nodes, iso.From)
	}
	for _, side := range []string{"isolated", "majority"} {
		after := find("after the heal", side)
		for _, n := range after.Nodes {
			if n.Suspected() || n.Failed() {
				t.Errorf("after the heal the %s side (%s) still flags %s: %v", side, after.From, n.Addr, n.Flags)
			}
			if n.Addr == iso.From && n.Role != cluster.RoleReplica {
				t.Errorf("after the heal the %s side sees the old primary %s as %q, want a replica", side, n.Addr, n.Role)
			}
		}
	}
}

// TestGatewayPartition: two of four lease gateways lose Redis for 2 s. While cut, their store
// calls fail as connection errors and the other two go on deciding; once healed, no connection
// error is left; the burst excess stays within the leases' bound.
func TestGatewayPartition(t *testing.T) {
	spec := faultSpec(t, 7*time.Second, "limiter: {kind: lease, lease: {size: 10, gateways: 4, ttl: 1s}}\n"+
		"cluster: {primaries: 3, replicas: 0}\n"+
		"faults: [{at: 2s, kind: partition, target: gateways:2, for: 2s}]\n")
	sum, rows := runFaults(t, spec)
	var cutConn, cutAllowed, afterConn int64
	for _, r := range rows {
		switch {
		case r.TS >= 2 && r.TS < 4:
			cutConn += r.Conn
			cutAllowed += r.Allowed
		case r.TS >= 5:
			afterConn += r.Conn
		}
	}
	if cutConn == 0 || cutAllowed == 0 {
		t.Errorf("while cut: %d connection errors, %d allowed; want the cut gateways failing and the others deciding", cutConn, cutAllowed)
	}
	if afterConn != 0 {
		t.Errorf("%d connection errors a second after the heal, want none", afterConn)
	}
	if w := sum.Overspend.Bound.Within; w == nil || !*w {
		t.Errorf("burst excess %.1f against the lease bound %.1f: want within", sum.Overspend.BurstExcess.WorstTokens, sum.Overspend.Bound.Tokens)
	}
	if f := sum.Faults[0]; f.Kind != "partition" || f.DetectedS == 0 {
		t.Errorf("fault %+v, want the partition detected", f)
	}
}

// TestPartitionMinReplicas: with min-replicas-to-write 1 the isolated primary refuses debits
// (NOREPLICAS, counted as unreplicated) instead of acknowledging them for the node timeout, so
// what comes back stays within the shorter window's bound.
func TestPartitionMinReplicas(t *testing.T) {
	sum, _ := partitionRun(t, "limiter: {audit: true, timeout: 500ms}\n"+
		"cluster: {primaries: 3, replicas: 1, node_timeout: 2s, min_replicas_to_write: 1, min_replicas_max_lag: 1s}\n")
	if sum.Environment.Durability != "min-replicas" {
		t.Errorf("environment.durability = %q, want min-replicas", sum.Environment.Durability)
	}
	if sum.Errors.Unreplicated == 0 {
		t.Errorf("errors %+v: want the isolated primary's NOREPLICAS counted as unreplicated", sum.Errors)
	}
	// The cut resets the replica's connection: the primary drops it from its good replicas at
	// once and refuses nearly everything the async window would have lost.
	if tb := sum.TokensBack; tb.Verdict != results.VerdictWithin || tb.Min*4 > int64(tb.Bound) {
		t.Errorf("tokens back %d..%d against bound %.1f: want within, and far fewer certainly back than the window allows", tb.Min, tb.Max, tb.Bound)
	}
}
