package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// Daemons is kind gubernator's cluster as its faults change it (cluster/gubernator.Cluster): a
// fault of target daemon:N kills, pauses or cuts off its peers the N-th daemon as started.
type Daemons interface {
	// HTTPAddrs are the daemons' client addresses by index: how many there are, and their names
	// in the summary.
	HTTPAddrs() []string
	// Kill SIGKILLs daemon i; Restart starts it again on its ports with an empty cache and
	// returns once every daemon is healthy.
	Kill(i int) error
	Restart(ctx context.Context, i int) error
	// Pause SIGSTOPs daemon i; Resume SIGCONTs it.
	Pause(i int) error
	Resume(i int) error
	// Partition cuts daemon i's links to and from every peer; clients still reach it. Heal
	// restores every link.
	Partition(i int) error
	Heal()
	// WaitServing returns once every daemon decides again, reaching every key's owner
	// (gubernator's health check reports a daemon unhealthy for minutes after a peer error).
	WaitServing(ctx context.Context) error
}

// errDaemonState is why a daemon kill's part of the overspend bound is not measured.
var errDaemonState = errors.New("a restarted daemon's keys start with a full burst each (its buckets live in memory); which keys it owned is gubernator's hash ring, not read by the run")

// injectDaemon executes a fault of a daemon (target daemon:N) and records its event; a run
// without daemons records it as failed.
func (r *Runner) injectDaemon(ctx context.Context, f scenarios.FaultSpec, at float64) {
	ev := results.Fault{AtS: at, Kind: string(f.Kind), Target: f.Target, ForS: time.Duration(f.For).Seconds()}
	i, err := r.daemon(f.Target)
	if err == nil {
		ev.Target = fmt.Sprintf("%s = %s", f.Target, r.cfg.Daemons.HTTPAddrs()[i])
		r.cfg.Logf("fault at %.1fs: %s %s", at, f.Kind, ev.Target)
		err = r.executeDaemon(ctx, f, i)
	}
	if err != nil {
		ev.Failed, ev.Error = true, err.Error()
		r.cfg.Logf("fault %s at %.1fs on %s failed: %v", f.Kind, at, ev.Target, err)
	}
	r.record(ev)
}

// daemon resolves daemon:N to the index of a daemon of the run.
func (r *Runner) daemon(t string) (int, error) {
	if r.cfg.Daemons == nil {
		return 0, fmt.Errorf("%s: the run has no gubernator daemons (limiter.kind gubernator)", t)
	}
	n := len(r.cfg.Daemons.HTTPAddrs())
	i, ok := scenarios.DaemonIndex(t)
	if !ok || i >= n {
		return 0, fmt.Errorf("%s: the run has daemons daemon:0 .. daemon:%d", t, n-1)
	}
	return i, nil
}

// executeDaemon carries out f on daemon i and ends it after f.For: a kill restarts the daemon,
// a pause resumes it, a partition heals. The fault's cause (kill, pause or partition) is held
// from the start until every daemon decides again with every key's owner (WaitServing: a
// daemon's peers dial it again with gRPC's backoff after it is back), plus causeGrace. A run that ends meanwhile still resumes and heals (no
// daemon stays stopped or cut while the run closes) but does not restart a killed daemon.
func (r *Runner) executeDaemon(ctx context.Context, f scenarios.FaultSpec, i int) error {
	d := r.cfg.Daemons
	defer r.holdUntilHealthy(ctx, string(f.Kind))()
	switch f.Kind {
	case scenarios.FaultKill:
		if err := d.Kill(i); err != nil {
			return err
		}
		r.addBound(results.BoundDaemonState, f, d.HTTPAddrs()[i], 0, errDaemonState)
		sleepCtx(ctx, time.Duration(f.For))
		if ctx.Err() != nil {
			r.cfg.Logf("daemon %d not restarted: the run ended first", i)
			return nil
		}
		return d.Restart(ctx, i)
	case scenarios.FaultPause:
		if err := d.Pause(i); err != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(f.For))
		return d.Resume(i)
	case scenarios.FaultPartition:
		if err := d.Partition(i); err != nil {
			return err
		}
		sleepCtx(ctx, time.Duration(f.For))
		d.Heal()
		r.cfg.Logf("partition of daemon %d healed", i)
		return nil
	}
	return fmt.Errorf("%s: a daemon's faults are kill, pause and partition", f.Kind)
}
