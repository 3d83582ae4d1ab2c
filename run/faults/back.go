package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// clusterCron is how often a Redis Cluster node re-evaluates its state (clusterCron runs ten
// times a second): an isolated primary refuses writes at the first evaluation after it flags
// its peers as failing.
const clusterCron = 100 * time.Millisecond

// pingSlack is how late after a cut a node may flag a peer as failing, in node timeouts: it
// flags a peer whose oldest unanswered ping (or last data) is older than node_timeout, and it
// pings a peer once its last pong is older than half the node timeout, so a cut just after a
// pong is flagged up to 1.5 x node_timeout later.
const pingSlack = 1.5

// minReplicasSlack is how late after its replicas' last acknowledgement, beyond the max lag, a
// primary with min-replicas-to-write may still take writes: it counts the lag in whole seconds
// and recounts its good replicas once a second (replicationCron). A replica that disconnects is
// dropped from the count at once; one cut without a reset is dropped this late.
const minReplicasSlack = 2 * time.Second

// Loss is a fault that can return debits: it took a primary away (a kill, a failover, a
// partition), and the slots that primary served then. A debit the primary acknowledged that its
// replica never applied is lost with it.
type Loss struct {
	// Fault names the fault as the summary's tokens_back.by_fault does: "kind target".
	Fault string
	// Slots are the slots the lost primary served at the fault.
	Slots []cluster.SlotRange
	// Bound is what the cluster's design lets this fault lose, in tokens: the replication
	// gap read right before the fault, plus for a partition the isolated primary's window
	// times the tokens its slots were allowed per second before the cut (0 for a part that
	// was not measured: the overspend bound lists it as such).
	Bound float64
}

// Losses lists the faults that could return debits, in the order they happened.
func (r *Runner) Losses() []Loss {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Loss(nil), r.losses...)
}

// faultName is a fault as tokens_back.by_fault names it: its kind and its target as written.
func faultName(f scenarios.FaultSpec) string {
	t := f.Target
	if t == "" {
		t = "hottest"
	}
	return string(f.Kind) + " " + t
}

// noteLoss records that f takes away a primary serving slots, with what it may lose (bound, in
// tokens).
func (r *Runner) noteLoss(f scenarios.FaultSpec, slots []cluster.SlotRange, bound float64) {
	l := Loss{Fault: faultName(f), Slots: slots, Bound: bound}
	r.mu.Lock()
	r.losses = append(r.losses, l)
	r.mu.Unlock()
}

// slotsOf is the slots the primary on addr serves now (none when the slot map cannot be read).
func (r *Runner) slotsOf(ctx context.Context, addr string) []cluster.SlotRange {
	shards, err := r.cl.Shards(ctx)
	if err != nil {
		return nil
	}
	var slots []cluster.SlotRange
	for _, sh := range shards {
		if sh.Primary.Addr == addr {
			slots = append(slots, sh.Slots...)
		}
	}
	return slots
}

// Covers reports whether slot is one of the slots the lost primary served.
func (l Loss) Covers(slot int) bool {
	for _, sr := range l.Slots {
		if sr.Start <= slot && slot <= sr.End {
			return true
		}
	}
	return false
}

// isolatedWindow is how long a primary cut off the rest of the cluster goes on acknowledging
// writes nobody else sees: until it counts the other primaries as unreachable (up to 1.5 x
// node_timeout, plus one cron period) or, with min-replicas-to-write, until its replicas'
// acknowledgements are older than the max lag — whichever comes first.
func (r *Runner) isolatedWindow() time.Duration {
	w := time.Duration(pingSlack*float64(r.cfg.NodeTimeout)) + clusterCron
	if lag := r.cfg.MinReplicasLag; lag > 0 {
		w = min(w, lag+minReplicasSlack)
	}
	return w
}

// allowedRate is the tokens per second the store allowed on slots, averaged from the start of
// the run to now, from allowed (Run.SlotAllowed).
func (r *Runner) allowedRate(allowed map[int]int64, slots []cluster.SlotRange) float64 {
	elapsed := time.Since(r.base).Seconds()
	if elapsed <= 0 {
		return 0
	}
	mine := Loss{Slots: slots}
	var tokens int64
	for slot, n := range allowed {
		if mine.Covers(slot) {
			tokens += n
		}
	}
	return float64(tokens) / elapsed
}

// windowLoss is the tokens the primary on addr, cut off the others, may acknowledge that its
// promoted replica never sees: its isolated window times the tokens per second allowed on its
// slots before the cut. An error says why it cannot be measured (the run counts allowed tokens
// per slot only with limiter.audit).
func (r *Runner) windowLoss(addr string, slots []cluster.SlotRange) (float64, error) {
	allowed, ok := r.run.SlotAllowed()
	if !ok {
		return 0, errors.New("the tokens allowed per slot, which the isolated window's loss is counted from, are kept only with limiter.audit: true")
	}
	rate := r.allowedRate(allowed, slots)
	w := r.isolatedWindow()
	b := rate * w.Seconds()
	r.cfg.Logf("partition of %s: the isolated window may lose %.1f tokens = window %s x %.1f tokens/s allowed on its slots", addr, b, w, rate)
	return b, nil
}

// String is a loss for the log.
func (l Loss) String() string {
	return fmt.Sprintf("%s: %d slot ranges, bound %.1f tokens", l.Fault, len(l.Slots), l.Bound)
}
