package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/scenarios"
)

// execute performs the fault on its target, holding its cause while it lasts. An error means
// the fault was not carried out (or not wholly): the run records it as failed.
func (r *Runner) execute(ctx context.Context, f scenarios.FaultSpec, tg target) error {
	targets := tg.addrs
	switch f.Kind {
	case scenarios.FaultKillPrimary:
		return r.killPrimary(ctx, f, targets[0])
	case scenarios.FaultFailover:
		return r.failover(ctx, f, targets[0])
	case scenarios.FaultPartition:
		return r.partitionNode(ctx, f, targets[0])
	case scenarios.FaultPause:
		return r.pause(ctx, targets, time.Duration(f.For))
	case scenarios.FaultLatency:
		return r.latency(ctx, targets, f)
	case scenarios.FaultReshard:
		return r.reshard(ctx, f, tg.from, tg.to)
	case scenarios.FaultScriptFlush:
		return r.scriptFlush(ctx, targets)
	case scenarios.FaultRestart:
		defer r.holdUntilHealthy(ctx, "restart")()
		return r.cl.Restart(ctx, targets[0])
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

// killPrimary SIGKILLs the primary on addr; its replica takes over. The replication gap read
// right before the kill bounds the debits the promotion may lose.
func (r *Runner) killPrimary(ctx context.Context, f scenarios.FaultSpec, addr string) error {
	if err := r.requirePrimary(addr); err != nil {
		return err
	}
	slots := r.slotsOf(ctx, addr)
	gap, gapErr := r.replicationGap(ctx, addr)
	defer r.holdUntilHealthy(ctx, "failover")()
	r.mu.Lock()
	r.killed = addr
	r.mu.Unlock()
	err := r.cl.Kill(addr)
	r.noteGap(f, addr, slots, gap, gapErr)
	return err
}

// noteGap records what a fault that took the primary on addr away may lose: the replication
// gap read before it, in the overspend bound (or why it was not measured) and as the loss of
// slots for tokens back.
func (r *Runner) noteGap(f scenarios.FaultSpec, addr string, slots []cluster.SlotRange, gap float64, err error) {
	r.addBound(results.BoundReplicationGap, f, addr, gap, err)
	r.noteLoss(f, slots, gap)
}

// failover asks a running replica of the primary on addr to take over (CLUSTER FAILOVER [mode])
// and waits until it has: Redis accepts the command at once and fails over later, or not at all
// (a replica that cannot reach its primary refuses a default failover), so only the new role
// shows that the fault happened.
func (r *Runner) failover(ctx context.Context, f scenarios.FaultSpec, addr string) error {
	if err := r.requirePrimary(addr); err != nil {
		return err
	}
	var rep cluster.Node
	running := runningFunc(r.cl.Nodes())
	for _, n := range r.cl.ReplicasOf(addr) {
		if running(n) {
			rep = n
			break
		}
	}
	if rep.Addr == "" {
		return fmt.Errorf("%s has no running replica to fail over to", addr)
	}
	slots := r.slotsOf(ctx, addr)
	gap, gapErr := r.replicationGap(ctx, addr)
	defer r.holdUntilHealthy(ctx, "failover")()
	err := r.clusterFailover(ctx, rep.Addr, f.Mode)
	r.noteGap(f, addr, slots, gap, gapErr)
	if err != nil {
		return err
	}
	return r.awaitPromotion(ctx, rep.Addr)
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

// reshard migrates f.Slots of the busiest slots of shard from to shard to, one slot at a time,
// each held migrating for its ask window (scenarios.DefaultAskWindow by default), so that a
// running load meets ASK — a slot with few keys would otherwise move in well under a
// millisecond — before the MOVED that follows. A slot under way when the run ends is finished,
// never left half-moved (migrating on one primary, importing on the other: the cluster would
// answer ASK for it until someone fixed it); the slots after it are not moved, and the fault
// fails with how many were.
func (r *Runner) reshard(ctx context.Context, f scenarios.FaultSpec, from, to cluster.Shard) error {
	defer r.hold("reshard")()
	slots := r.busiestSlots(from, f.Slots)
	window := time.Duration(f.AskWindow)
	if window == 0 {
		window = scenarios.DefaultAskWindow
	}
	for i, sl := range slots {
		if ctx.Err() != nil {
			return fmt.Errorf("the run ended after %d of the %d slots moved", i, len(slots))
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotMigrateWait)
		_, err := r.cl.MigrateSlots(sctx, 1, from.Primary.Addr, to.Primary.Addr,
			cluster.WithSlotRange(cluster.SlotRange{Start: sl, End: sl}), cluster.WithAskWindow(window))
		cancel()
		if err != nil {
			return fmt.Errorf("%d of the %d slots moved, then: %w", i, len(slots), err)
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

// slotMigrateWait bounds the migration of one slot, which goes on after the run's end: a few
// MIGRATE batches (each bounded by cluster.DefaultMigrateTimeout) and the ask window.
const slotMigrateWait = 3 * cluster.DefaultMigrateTimeout

// busiestSlots picks n slots of shard from (which serves at least n), the ones with the most
// decisions so far first (then the highest numbers): moving hot slots is what a resharding does
// to a limiter, and it makes the ASK and MOVED replies visible.
func (r *Runner) busiestSlots(from cluster.Shard, n int) []int {
	traffic := r.run.SlotTraffic()
	owned := make([]int, 0, from.SlotCount())
	for i := len(from.Slots) - 1; i >= 0; i-- {
		for sl := from.Slots[i].End; sl >= from.Slots[i].Start; sl-- {
			owned = append(owned, sl)
		}
	}
	sort.SliceStable(owned, func(i, j int) bool { return traffic[owned[i]] > traffic[owned[j]] })
	return owned[:min(n, len(owned))]
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

// promotionWait bounds how long a replica may take to become a primary after CLUSTER FAILOVER:
// Redis gives a manual failover 5 s to complete, and a loaded machine answers late.
const promotionWait = 15 * time.Second

// promotionPoll is how often awaitPromotion asks the replica for its role.
const promotionPoll = 50 * time.Millisecond

// awaitPromotion returns once the node on addr reports the master role (ROLE), or an error when
// it has not within promotionWait or by the end of the run.
func (r *Runner) awaitPromotion(ctx context.Context, addr string) error {
	c := r.nodeClient(addr)
	defer c.Close()
	isPrimary := func(ctx context.Context) bool {
		role, err := c.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	}
	wctx, cancel := context.WithTimeout(ctx, promotionWait)
	defer cancel()
	t := time.NewTicker(promotionPoll)
	defer t.Stop()
	for !isPrimary(wctx) {
		select {
		case <-t.C:
		case <-wctx.Done():
			// One last look, on a context of its own: the promotion may have landed meanwhile.
			lctx, lcancel := context.WithTimeout(context.Background(), time.Second)
			promoted := isPrimary(lctx)
			lcancel()
			switch {
			case promoted:
				return nil
			case ctx.Err() != nil:
				return fmt.Errorf("CLUSTER FAILOVER on %s: the run ended before it became a primary", addr)
			}
			return fmt.Errorf("CLUSTER FAILOVER on %s: still not a primary %s after it was accepted", addr, promotionWait)
		}
	}
	return nil
}
