package faults

import (
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/run/check"
	"ratelab/scenarios"

	"github.com/redis/go-redis/v9"
)

// healthyWait bounds how long a fault's cause stays attached to decisions while the cluster heals.
const healthyWait = 30 * time.Second

// causeGrace keeps a fault's cause on decisions for a moment after the cluster reports healthy:
// clients learn the new slot map a little later than the nodes agree on it.
const causeGrace = time.Second

// Runner injects a scenario's faults into its cluster (or its gateways) on schedule and records
// each as an event. While a fault is active its cause is current (CurrentCause), so the engine
// attributes the overspend of the decisions made meanwhile to it.
type Runner struct {
	cl    cluster.Cluster
	specs []scenarios.FaultSpec // sorted by At
	run   Run
	gw    Gateways
	cfg   Config
	// shards are the cluster's shards when the run started, in slot order (nil when they could
	// not be read): node:N of a fault that needs a primary follows shard N (targets.go).
	shards []lineage
	base   time.Time

	active atomic.Int32 // number of faults whose cause is current
	cause  atomic.Int32 // the newest active fault's Cause

	mu     sync.Mutex
	killed string // the node the last kill-primary took down
	events []results.Fault
	// sources are what the faults add to the overspend bound (results.Bound.Sources names);
	// unmeasured, the sources they have that could not be measured.
	sources    map[string]float64
	unmeasured []results.Unmeasured
	losses     []Loss // the faults that took a primary away, for tokens back
	// probes are connections to every node, opened when the schedule starts, that read the
	// replication gap right before a fault (replication.go); nil when no fault needs one.
	probes  map[string]*redis.Client
	tenures map[string]tenure // by primary address, guarded by mu
	views   []PartitionView
	wg      sync.WaitGroup

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Runner for specs on cl (nil when the run has no cluster: gateway faults only),
// disturbing run and its gateways gw (nil: a run with no such features; a gateway fault then
// records itself as failed). It reads cl's shards now, before the load starts: node:N of a
// kill, a failover or a reshard names the N-th of them, whichever of its nodes is the primary
// when the fault comes.
func New(cl cluster.Cluster, specs []scenarios.FaultSpec, run Run, gw Gateways, cfg Config) *Runner {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if run == nil {
		run = noRun{}
	}
	if gw == nil {
		gw = noGateways{}
	}
	r := &Runner{cl: cl, specs: append([]scenarios.FaultSpec(nil), specs...), run: run, gw: gw, cfg: cfg,
		sources: map[string]float64{}, tenures: map[string]tenure{}}
	if cl != nil && slices.ContainsFunc(specs, func(f scenarios.FaultSpec) bool { return needsPrimary(f.Kind) }) {
		r.shards = startLineage(cl, cfg.Logf)
	}
	sort.SliceStable(r.specs, func(i, j int) bool { return r.specs[i].At < r.specs[j].At })
	return r
}

// CurrentCause is the cause to attach to a decision now; ok is false when no fault is active.
// Two atomic loads: cheap enough for every decision. A nil Runner has no cause.
func (r *Runner) CurrentCause() (check.Cause, bool) {
	if r == nil || r.active.Load() == 0 {
		return 0, false
	}
	return check.Cause(r.cause.Load()), true
}

// ActiveKind names the fault active at elapsed: the kind of the latest one started by then,
// while any fault still holds its cause on the decisions; "" when none is active.
func (r *Runner) ActiveKind(elapsed time.Duration) string {
	if _, ok := r.CurrentCause(); !ok {
		return ""
	}
	kind := ""
	for _, f := range r.specs {
		if time.Duration(f.At) > elapsed {
			break
		}
		kind = string(f.Kind)
	}
	return kind
}

// Start injects every fault at base + At in the background, each in its own goroutine so a long
// pause does not delay the next one. Call it once; Stop ends it.
func (r *Runner) Start(base time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done, r.base = cancel, make(chan struct{}), base
	go func() {
		defer close(r.done)
		if r.openProbes(r.specs) {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.sampleTenures(ctx)
			}()
		}
		r.schedule(ctx)
	}()
}

// Stop ends the schedule and the faults still running — a latency fault is removed, a paused
// node resumed — and waits for them. It does nothing before Start, and is idempotent.
func (r *Runner) Stop() {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.wg.Wait()
	r.closeProbes()
}

func (r *Runner) schedule(ctx context.Context) {
	for _, f := range r.specs {
		if wait := time.Until(r.base.Add(time.Duration(f.At))); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.inject(ctx, f)
		}()
	}
}

// inject resolves one fault's target against the cluster as it is now, executes the fault and
// records its event. A fault that could not be carried out — its target does not resolve, or
// the cluster refused or did not complete it — is recorded with Failed and the reason in Error;
// Target stays the target as written and, when it resolved, the nodes it named.
func (r *Runner) inject(ctx context.Context, f scenarios.FaultSpec) {
	at := time.Since(r.base).Seconds()
	r.run.OnInject(at)
	switch {
	case f.OnDaemon():
		r.injectDaemon(ctx, f, at)
		return
	case f.OnRegion():
		r.injectRegion(ctx, f, at)
		return
	case f.OnGateways():
		r.injectGateway(ctx, f, at)
		return
	}
	tg, err := r.resolve(ctx, f)
	ev := results.Fault{AtS: at, Kind: string(f.Kind), Target: tg.desc, ForS: time.Duration(f.For).Seconds()}
	if err == nil {
		r.cfg.Logf("fault at %.1fs: %s %s", at, f.Kind, tg.desc)
		err = r.execute(ctx, f, tg)
	}
	if err != nil {
		ev.Failed, ev.Error = true, err.Error()
		r.cfg.Logf("fault %s at %.1fs on %s failed: %v", f.Kind, at, tg.desc, err)
	}
	r.record(ev)
}

func (r *Runner) record(ev results.Fault) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// hold attaches cause to decisions until the returned func is called.
func (r *Runner) hold(cause string) func() {
	r.cause.Store(int32(r.run.CauseFor(cause)))
	r.active.Add(1)
	return func() { r.active.Add(-1) }
}

// holdUntilHealthy attaches cause to decisions until the cluster is healthy again (bounded) plus
// causeGrace; the returned func starts that wait in the background.
func (r *Runner) holdUntilHealthy(ctx context.Context, cause string) func() {
	release := r.hold(cause)
	return func() {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer release()
			hctx, cancel := context.WithTimeout(ctx, healthyWait)
			defer cancel()
			if err := r.waitHealthy(hctx); err != nil {
				if ctx.Err() == nil { // not the run's end cutting the wait short
					r.cfg.Logf("cluster not healthy %s after the %s: %v", healthyWait, cause, err)
				}
				return
			}
			sleepCtx(ctx, causeGrace)
		}()
	}
}

// waitHealthy waits until the run's Redis Cluster is healthy, or else its gubernator daemons
// all serve.
func (r *Runner) waitHealthy(ctx context.Context) error {
	if r.cl == nil && r.cfg.Daemons != nil {
		err := r.cfg.Daemons.WaitServing(ctx)
		if err == nil {
			r.cfg.Logf("every daemon decides again at %.1fs", time.Since(r.base).Seconds())
		}
		return err
	}
	return r.cl.WaitHealthy(ctx)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Recorded returns the faults as injected, sorted by time (Bound has what they add to the
// overspend bound).
func (r *Runner) Recorded() []results.Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]results.Fault(nil), r.events...)
	sort.Slice(out, func(i, j int) bool { return out[i].AtS < out[j].AtS })
	return out
}
