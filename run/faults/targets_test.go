package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/results"
	"ratelab/scenarios"
)

// injectOne injects f at once on r and returns its event.
func injectOne(t *testing.T, r *Runner, f scenarios.FaultSpec) results.Fault {
	t.Helper()
	r.mu.Lock()
	n := len(r.events)
	r.mu.Unlock()
	r.inject(t.Context(), f)
	evs := r.Recorded()
	if len(evs) != n+1 {
		t.Fatalf("%d events after one more fault, want %d", len(evs), n+1)
	}
	return evs[n]
}

func resolveAddrs(t *testing.T, r *Runner, f scenarios.FaultSpec) []string {
	t.Helper()
	tg, err := r.resolve(t.Context(), f)
	if err != nil {
		t.Fatalf("resolve %s %s: %v", f.Kind, f.Target, err)
	}
	return tg.addrs
}

// node:N of a fault that needs a primary names the N-th shard's primary now, so it follows a
// failover; node:N of another fault keeps naming the N-th node as started. A fault whose target
// does not resolve, or that the cluster cannot carry out, is recorded as failed with the reason.
func TestTargetsFollowRoles(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{})
	started := l.Nodes()
	// The schedule is never started: the test injects its faults itself. A fault that needs a
	// primary in it makes New record the shards as the run starts.
	r := New(l, []scenarios.FaultSpec{{Kind: scenarios.FaultFailover, Target: "node:0"}}, nil, nil, Config{Logf: t.Logf})
	r.base = time.Now()
	defer r.wg.Wait() // the failover's hold waits for a healthy cluster in the background

	if have := resolveAddrs(t, r, scenarios.FaultSpec{Kind: scenarios.FaultKillPrimary, Target: "node:2"}); !slices.Equal(have, []string{started[2].Addr}) {
		t.Errorf("kill-primary node:2 before any failover = %v, want node 2 as started %s", have, started[2].Addr)
	}
	ev := injectOne(t, r, scenarios.FaultSpec{Kind: scenarios.FaultFailover, Target: "node:0"})
	if ev.Failed || ev.Error != "" || !strings.Contains(ev.Target, started[0].Addr) {
		t.Fatalf("failover node:0 = %+v, want it carried out on %s", ev, started[0].Addr)
	}
	c := redis.NewClient(&redis.Options{Addr: started[3].Addr})
	defer c.Close()
	if role, err := c.Do(t.Context(), "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Fatalf("ROLE of node 3 after the failover = %v, %v: the fault returned before the promotion", role, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := l.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		f    scenarios.FaultSpec
		want string
	}{
		{scenarios.FaultSpec{Kind: scenarios.FaultKillPrimary, Target: "node:0"}, started[3].Addr}, // shard 0 moved to node 3
		{scenarios.FaultSpec{Kind: scenarios.FaultFailover, Target: "node:1"}, started[1].Addr},
		{scenarios.FaultSpec{Kind: scenarios.FaultPause, Target: "node:0"}, started[0].Addr}, // as started, now a replica
		{scenarios.FaultSpec{Kind: scenarios.FaultRestart, Target: "node:3"}, started[3].Addr},
	} {
		if have := resolveAddrs(t, r, tc.f); !slices.Equal(have, []string{tc.want}) {
			t.Errorf("%s %s after the failover = %v, want %s", tc.f.Kind, tc.f.Target, have, tc.want)
		}
	}

	ev = injectOne(t, r, scenarios.FaultSpec{Kind: scenarios.FaultReshard, Slots: 4, From: "node:0", To: "node:1"})
	if ev.Failed || !strings.Contains(ev.Target, "from node:0 = "+started[3].Addr) || !strings.Contains(ev.Target, "to node:1 = "+started[1].Addr) {
		t.Fatalf("reshard node:0 -> node:1 after the failover = %+v, want 4 slots moved from %s to %s", ev, started[3].Addr, started[1].Addr)
	}
	// The nodes outside the move learn its last slots by gossip: read the slot map once every
	// node shares it (a read before that once counted 2 of the 4 slots moved).
	if err := l.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	shards, err := l.Shards(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := shards[0].SlotCount() + 4; n != cluster.TotalSlots/3+1 && n != cluster.TotalSlots/3 {
		t.Errorf("shard 0 serves %d slots after moving 4, want 4 fewer than a third", shards[0].SlotCount())
	}

	// Slot 0 moves to shard 2, which now serves the lowest slot: node:N still names the shards
	// the run started with, not an order of slots that a reshard reshuffles.
	if _, err := l.MigrateSlots(t.Context(), 0, started[3].Addr, started[2].Addr, cluster.WithSlotRange(cluster.SlotRange{Start: 0, End: 0})); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{started[3].Addr, started[1].Addr, started[2].Addr} {
		f := scenarios.FaultSpec{Kind: scenarios.FaultKillPrimary, Target: fmt.Sprintf("node:%d", i)}
		if have := resolveAddrs(t, r, f); !slices.Equal(have, []string{want}) {
			t.Errorf("kill-primary node:%d once shard 2 serves slot 0 = %v, want %s", i, have, want)
		}
	}

	for _, tc := range []struct {
		f    scenarios.FaultSpec
		want string
	}{
		{scenarios.FaultSpec{Kind: scenarios.FaultFailover, Target: "node:3"}, "3 primaries served slots when the run started"},
		{scenarios.FaultSpec{Kind: scenarios.FaultReshard, Slots: 9000, From: "node:1", To: "node:2"}, "fewer than the 9000 to move"},
		{scenarios.FaultSpec{Kind: scenarios.FaultPause, Target: "node:6", For: scenarios.Duration(time.Second)}, "the cluster has 6 nodes"},
	} {
		ev := injectOne(t, r, tc.f)
		if !ev.Failed || !strings.Contains(ev.Error, tc.want) || strings.Contains(ev.Target, "failed") {
			t.Errorf("%s %s%s = %+v: want it failed, the error saying %q, the target readable", tc.f.Kind, tc.f.Target, tc.f.From, ev, tc.want)
		}
	}
}

// A failover of a primary without a replica cannot happen: the fault is recorded as failed.
func TestFailoverWithoutReplicaFails(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
	r := New(l, nil, nil, nil, Config{Logf: t.Logf})
	r.base = time.Now()
	ev := injectOne(t, r, scenarios.FaultSpec{Kind: scenarios.FaultFailover, Target: "node:1"})
	if !ev.Failed || !strings.Contains(ev.Error, "no running replica") || !strings.Contains(ev.Target, l.Nodes()[1].Addr) {
		t.Errorf("failover without replicas = %+v: want it failed for want of a replica, naming node 1", ev)
	}
}
