package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/scenarios"
)

// partitioner is a cluster that can cut the links between its nodes — cluster bus and
// replication — while clients still reach every node (cluster.Local started partitionable).
type partitioner interface {
	Partition(ctx context.Context, isolated []string) error
	Heal(ctx context.Context) error
	NodesSeenBy(ctx context.Context, addr string) ([]cluster.NodeView, error)
}

// healWait bounds the heal of a partition, which runs also after the run's end.
const healWait = 30 * time.Second

// PartitionView is the cluster as one node saw it at a moment of a partition: at the cut,
// before the heal, after the heal.
type PartitionView struct {
	When  string // "at the cut", "before the heal", "after the heal"
	From  string // the node asked
	Side  string // "isolated" or "majority"
	Nodes []cluster.NodeView
	Err   string // set when the node could not be asked
}

// Views returns what each side of every partition saw, in the order asked.
func (r *Runner) Views() []PartitionView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]PartitionView(nil), r.views...)
}

// partitionNode cuts the primary on addr off every other node for f.For, then heals the cut.
// It records what the cut may lose (the replication gap at the cut and the isolated window),
// holds the partition cause from the cut until the cluster is healthy again after the heal, and
// logs each side's CLUSTER NODES at the cut, before the heal and after it.
func (r *Runner) partitionNode(ctx context.Context, f scenarios.FaultSpec, addr string) error {
	p, ok := r.cl.(partitioner)
	if !ok {
		return fmt.Errorf("partition of %s: %w: this cluster's node links cannot be cut (use cluster.provider: local)", addr, cluster.ErrUnsupported)
	}
	if err := r.requirePrimary(addr); err != nil {
		return err
	}
	other := r.otherPrimary(addr)
	slots := r.slotsOf(ctx, addr)
	gap, gapErr := r.replicationGap(ctx, addr)
	defer r.holdUntilHealthy(ctx, "partition")()
	err := p.Partition(ctx, []string{addr})
	window, windowErr := r.windowLoss(addr, slots)
	r.addBound(results.BoundReplicationGap, f, addr, gap, gapErr)
	r.addBound(results.BoundIsolatedWindow, f, addr, window, windowErr)
	r.noteLoss(f, slots, gap+window)
	if err != nil {
		return fmt.Errorf("partition of %s: %w", addr, err)
	}
	r.look(ctx, p, "at the cut", addr, other)
	sleepCtx(ctx, time.Duration(f.For))
	r.look(context.WithoutCancel(ctx), p, "before the heal", addr, other)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healWait)
	defer cancel()
	if err := p.Heal(hctx); err != nil {
		return fmt.Errorf("healing the partition of %s: %w", addr, err)
	}
	r.cfg.Logf("partition of %s healed", addr)
	if err := r.cl.WaitHealthy(hctx); err != nil {
		r.cfg.Logf("cluster not healthy %s after healing the partition of %s: %v", healWait, addr, err)
	}
	r.look(hctx, p, "after the heal", addr, other)
	return nil
}

// otherPrimary is a running primary other than addr: the majority side's witness ("" if none).
func (r *Runner) otherPrimary(addr string) string {
	nodes := r.cl.Nodes()
	running := runningFunc(nodes)
	for _, n := range nodes {
		if n.Addr != addr && n.Role == cluster.RolePrimary && running(n) {
			return n.Addr
		}
	}
	return ""
}

// look asks the isolated node and the majority's witness for CLUSTER NODES, logs what each
// sees and keeps it (Views).
func (r *Runner) look(ctx context.Context, p partitioner, when, isolated, majority string) {
	for _, side := range []struct{ name, addr string }{{"isolated", isolated}, {"majority", majority}} {
		if side.addr == "" {
			continue
		}
		v := PartitionView{When: when, From: side.addr, Side: side.name}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, err := p.NodesSeenBy(lctx, side.addr)
		cancel()
		if err != nil {
			v.Err = err.Error()
			r.cfg.Logf("partition %s: %s side (%s): CLUSTER NODES failed: %v", when, side.name, side.addr, err)
		} else {
			v.Nodes = nodes
			r.cfg.Logf("partition %s: %s side (%s) sees %s", when, side.name, side.addr, describeViews(nodes))
		}
		r.mu.Lock()
		r.views = append(r.views, v)
		r.mu.Unlock()
	}
}

// describeViews is a view for the log: each node's address, flags and slots.
func describeViews(nodes []cluster.NodeView) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		slots := 0
		for _, sr := range n.Slots {
			slots += sr.Len()
		}
		parts[i] = fmt.Sprintf("%s %s %d slots", n.Addr, strings.Join(n.Flags, ","), slots)
	}
	return strings.Join(parts, "; ")
}

// cutGateways cuts the target gateways off Redis for d, holding the partition cause, then
// reconnects them.
func (r *Runner) cutGateways(ctx context.Context, targets []int, d time.Duration) {
	release := r.hold("partition")
	defer release()
	for _, g := range targets {
		r.gw.Cut(g, true)
	}
	sleepCtx(ctx, d)
	for _, g := range targets {
		r.gw.Cut(g, false)
	}
}

// injectRegion executes a partition of a region through the multi-region run's hook and
// records its event; a run without regions records it as failed.
func (r *Runner) injectRegion(ctx context.Context, f scenarios.FaultSpec, at float64) {
	ev := results.Fault{AtS: at, Kind: string(f.Kind), Target: f.Target, ForS: time.Duration(f.For).Seconds()}
	name := strings.TrimPrefix(f.Target, "region:")
	if !r.gw.Has(Regions) {
		ev.Failed, ev.Error = true, "the run has no regions to partition"
	} else {
		r.cfg.Logf("fault at %.1fs: %s %s", at, f.Kind, f.Target)
		release := r.hold("partition")
		err := r.gw.PartitionRegion(ctx, name, true)
		if err == nil {
			sleepCtx(ctx, time.Duration(f.For))
			err = r.gw.PartitionRegion(context.WithoutCancel(ctx), name, false)
		}
		release()
		if err != nil {
			ev.Failed, ev.Error = true, err.Error()
		}
	}
	if ev.Failed {
		r.cfg.Logf("fault %s at %.1fs on %s failed: %s", f.Kind, at, f.Target, ev.Error)
	}
	r.record(ev)
}
