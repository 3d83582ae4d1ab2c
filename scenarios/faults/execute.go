package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
)

// execute performs the fault on its targets, holding its cause while it lasts.
func (r *Runner) execute(ctx context.Context, f scenarios.FaultSpec, targets []string) error {
	switch f.Kind {
	case scenarios.FaultKillPrimary:
		return r.killPrimary(ctx, targets[0])
	case scenarios.FaultFailover:
		return r.failover(ctx, targets[0], f.Mode)
	case scenarios.FaultPause:
		return r.pause(ctx, targets, time.Duration(f.For))
	case scenarios.FaultLatency:
		return r.latency(ctx, targets, f)
	case scenarios.FaultReshard:
		return r.reshard(ctx, f)
	case scenarios.FaultScriptFlush:
		return r.scriptFlush(ctx, targets)
	case scenarios.FaultRestart:
		defer r.holdUntilHealthy(ctx, "restart")()
		return r.cl.Restart(ctx, targets[0])
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

// killPrimary SIGKILLs the primary on addr; its replica takes over. The replication gap before
// the kill bounds the debits the promotion may lose.
func (r *Runner) killPrimary(ctx context.Context, addr string) error {
	if err := r.requirePrimary(addr); err != nil {
		return err
	}
	r.noteReplicationGap(ctx, addr)
	defer r.holdUntilHealthy(ctx, "failover")()
	r.mu.Lock()
	r.killed = addr
	r.mu.Unlock()
	return r.cl.Kill(addr)
}

// failover asks a replica of the primary on addr to take over (CLUSTER FAILOVER [mode]).
func (r *Runner) failover(ctx context.Context, addr, mode string) error {
	if err := r.requirePrimary(addr); err != nil {
		return err
	}
	reps := r.cl.ReplicasOf(addr)
	if len(reps) == 0 {
		return fmt.Errorf("%s has no replica to fail over to", addr)
	}
	r.noteReplicationGap(ctx, addr)
	defer r.holdUntilHealthy(ctx, "failover")()
	return r.clusterFailover(ctx, reps[0].Addr, mode)
}

// pause SIGSTOPs the targets for d, then SIGCONTs them.
func (r *Runner) pause(ctx context.Context, targets []string, d time.Duration) error {
	defer r.hold("pause")()
	for _, a := range targets {
		if err := r.cl.Pause(a); err != nil {
			return err
		}
	}
	sleepCtx(ctx, d)
	var first error
	for _, a := range targets {
		if err := r.cl.Resume(a); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// latency delays every byte through the targets' proxies for f.For (0: until the run ends).
func (r *Runner) latency(ctx context.Context, targets []string, f scenarios.FaultSpec) error {
	defer r.hold("latency")()
	for _, a := range targets {
		if err := r.cl.SetLatency(a, time.Duration(f.Delay), time.Duration(f.Jitter)); err != nil {
			return err
		}
	}
	if d := time.Duration(f.For); d == 0 {
		<-ctx.Done()
	} else {
		sleepCtx(ctx, d)
	}
	var first error
	for _, a := range targets {
		if err := r.cl.SetLatency(a, 0, 0); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// reshard migrates f.Slots of the busiest slots of f.From to f.To, one slot at a time, each held
// migrating for its ask window.
func (r *Runner) reshard(ctx context.Context, f scenarios.FaultSpec) error {
	from, err := r.nodeAddr(f.From)
	if err != nil {
		return err
	}
	to, err := r.nodeAddr(f.To)
	if err != nil {
		return err
	}
	defer r.hold("reshard")()
	slots, err := r.busiestSlots(from, f.Slots)
	if err != nil {
		return err
	}
	window := time.Duration(f.AskWindow)
	if window == 0 {
		window = scenarios.DefaultAskWindow
	}
	for _, sl := range slots {
		if _, err := r.cl.MigrateSlots(ctx, 1, from, to, cluster.WithSlotRange(cluster.SlotRange{Start: sl, End: sl}),
			cluster.WithSlotPause(reshardSlotPause), cluster.WithAskWindow(window)); err != nil {
			return err
		}
	}
	return nil
}

// scriptFlush empties the script cache of the targets: their next EVALSHA answers NOSCRIPT.
func (r *Runner) scriptFlush(ctx context.Context, targets []string) error {
	defer r.hold("noscript")()
	for _, a := range targets {
		c := r.nodeClient(a)
		err := c.ScriptFlush(ctx).Err()
		c.Close()
		if err != nil {
			return fmt.Errorf("SCRIPT FLUSH on %s: %w", a, err)
		}
	}
	return nil
}

// reshardSlotPause spaces slot migrations; the ask window (scenarios.DefaultAskWindow) holds each
// slot in the migrating state a moment after its keys moved, so a running load meets ASK (a slot
// with few keys would otherwise migrate in well under a millisecond) before the MOVED that follows.
const reshardSlotPause = 20 * time.Millisecond

// busiestSlots picks n slots that from serves, the ones with the most decisions so far first (then
// the highest numbers): moving hot slots is what a resharding does to a limiter, and it makes the
// ASK and MOVED replies visible.
func (r *Runner) busiestSlots(from string, n int) ([]int, error) {
	var traffic map[int]int64
	if r.h.SlotTraffic != nil {
		traffic = r.h.SlotTraffic()
	}
	// One CLUSTER SLOTS from the source: asking per slot would take longer than the run.
	c := r.nodeClient(from)
	defer c.Close()
	ranges, err := c.ClusterSlots(context.Background()).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS on %s: %w", from, err)
	}
	var owned []int
	for _, rg := range ranges {
		if len(rg.Nodes) == 0 || rg.Nodes[0].Addr != from {
			continue
		}
		for sl := rg.End; sl >= rg.Start; sl-- {
			owned = append(owned, int(sl))
		}
	}
	if len(owned) < n {
		return nil, fmt.Errorf("%s serves %d slots, fewer than the %d to move", from, len(owned), n)
	}
	sort.SliceStable(owned, func(i, j int) bool { return traffic[owned[i]] > traffic[owned[j]] })
	return owned[:n], nil
}

// clusterFailover asks a replica to take over its primary's slots.
func (r *Runner) clusterFailover(ctx context.Context, replica, mode string) error {
	c := r.nodeClient(replica)
	defer c.Close()
	args := []any{"cluster", "failover"}
	if mode == "force" || mode == "takeover" {
		args = append(args, strings.ToUpper(mode))
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("CLUSTER FAILOVER on %s: %w", replica, err)
	}
	return nil
}
