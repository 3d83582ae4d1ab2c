package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/check"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/faults"
	"ratelab/workload/trace"
)

// Target is a scenario's limiter, on its cluster, for a driver outside this package: via: http,
// where the attack package serves Limiter behind ratelab's gateway and drives it with vegeta.
// It is what Run builds before its engine starts — run directory, cluster, client with
// redirect counters, preloaded script, fail policy, fault schedule — without the engine.
//
// The split exists because of the import direction: the attack package imports this one (for
// the spec, the overspend checker and these pieces), so Run cannot call into attack; instead
// the CLI calls attack.RunScenario for via: http, and attack.RunScenario calls OpenTarget.
type Target struct {
	// Spec is the resolved scenario (with a trace: its duration, rate and tenants).
	Spec *scenarios.Spec
	// Dir is the run directory; scenario.yaml is already written.
	Dir string
	// Limiter decides; Policy is the bucket the overspend envelope judges against.
	Limiter limiter.Limiter
	Policy  limiter.BucketPolicy
	// Trace is the replayed trace when Spec.Trace is set, nil otherwise.
	Trace *trace.Trace
	// Environment is the run's environment as far as the target knows it (cluster, mode).
	Environment results.Environment

	logf    func(string, ...any)
	cl      cluster.Cluster
	client  *redis.ClusterClient
	redir   *redirects
	faults  *faults.Runner
	stop    []func()
	started bool
	done    chan struct{}
	cancelF context.CancelFunc
	closers []func() error
	errs    *kindCounter // the limiter's errors by kind (the gateway answers them all with 503)
}

// kindCounter wraps the target's limiter and counts its errors by kind: over HTTP they all
// arrive as 503, and the summary should still say which were timeouts.
type kindCounter struct {
	limiter.Limiter
	n [limiter.NumErrorKinds]atomic.Int64
}

func (k *kindCounter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	d, err := k.Limiter.Allow(ctx, r)
	if err != nil && !errors.Is(err, limiter.ErrBadRequest) {
		k.n[limiter.ClassifyError(err)].Add(1)
	}
	return d, err
}

// OpenTarget prepares spec's limiter for an external driver (see Target). It refuses a spec
// whose via is not http, and the provider external (its run-key prefix lives in the engine's
// client). Close releases everything it started.
func OpenTarget(ctx context.Context, spec *scenarios.Spec, opts RunOptions) (_ *Target, err error) {
	if spec.Via != scenarios.ViaHTTP {
		return nil, fmt.Errorf("OpenTarget: via %q: only via: http runs outside the engine", spec.Via)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	t := &Target{logf: opts.Logf, done: make(chan struct{})}
	if t.logf == nil {
		t.logf = func(string, ...any) {}
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	var rp *replay
	if spec.Trace != nil {
		if spec, rp, err = loadReplay(spec); err != nil {
			return nil, err
		}
		t.Trace = rp.tr
	}
	t.Spec = spec
	t.Dir = opts.Out
	if t.Dir == "" {
		t.Dir = filepath.Join("out", spec.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(t.Dir, results.ScenarioFile), spec.YAML()); err != nil {
		return nil, err
	}
	t.Policy = spec.BucketPolicy()
	t.Environment = results.Environment{Cores: runtime.NumCPU(), Go: runtime.Version(), Ratelab: opts.Version, Provider: "none"}
	switch spec.Limiter.Kind {
	case "noop":
		t.Limiter = limiter.Noop{}
		t.Environment.Mode = "http gateway, noop"
		return t, nil
	case "memory":
		tb, err := limiter.NewTokenBucket(t.Policy)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		t.Limiter = tb
		t.Environment.Mode = "http gateway, local"
		return t, nil
	}
	if err := checkProviderFaults(spec, opts); err != nil {
		return nil, err
	}
	if t.cl, err = openCluster(ctx, spec, opts, t.logf); err != nil {
		return nil, err
	}
	t.closers = append(t.closers, t.cl.Close)
	t.Environment.Provider = spec.Cluster.Provider
	t.Environment.RedisVersion = t.cl.RedisVersion()
	t.Environment.Primaries = len(t.cl.Primaries())
	if p := len(t.cl.Primaries()); p > 0 {
		t.Environment.Replicas = (len(t.cl.Nodes()) - p) / p
	}
	t.Environment.Mode = "http gateway, central"
	secs := int((time.Duration(spec.Duration) + time.Second - 1) / time.Second)
	t.redir = newRedirects(secs)
	t.client = newClusterClient(t.cl.ClientOptions(), time.Duration(spec.Limiter.Timeout), spec.Load.Concurrency, t.redir)
	t.closers = append([]func() error{t.client.Close}, t.closers...)
	warmPools(ctx, t.client, spec.Load.Concurrency)
	if err := preloadScript(ctx, t.client); err != nil {
		return nil, err
	}
	rb, mode, closeBucket, err := newCentralBucket(spec, t.client, t.Policy, nil)
	if err != nil {
		return nil, err
	}
	t.Environment.Mode += mode
	t.closers = append([]func() error{func() error { closeBucket(); return nil }}, t.closers...)
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = append(t.stop, cancel)
	policy := t.Policy
	if t.Limiter, err = withFailPolicy(bg, spec, rb, t.client, func(string, string) limiter.BucketPolicy { return policy }, nil); err != nil {
		return nil, fmt.Errorf("fail policy: %w", err)
	}
	if len(spec.Faults) > 0 {
		names := endpointNames(spec)
		keyOf := func(tenant string) string { return limiter.KeyFor(tenant, names[0]) }
		first := "tenant-0"
		if rp != nil {
			first = rp.tenants[0]
		}
		// Fault causes are not attached to decisions over HTTP (the gateway's X-RateLimit-Source
		// is all the driver sees); a private checker only hands out cause numbers.
		causes := check.NewBucket(0, func(int) limiter.BucketPolicy { return policy })
		t.faults = faults.New(t.cl, spec.Faults, faults.Hooks{HotKey: keyOf(first), KeyOf: keyOf, CauseFor: causes.CauseFor, Logf: t.logf})
	}
	t.errs = &kindCounter{Limiter: t.Limiter}
	t.Limiter = t.errs
	return t, nil
}

// StartFaults starts the fault schedule with its offset 0 at base (the driver's start). Call it
// once, right before the first request; without faults it does nothing.
func (t *Target) StartFaults(base time.Time) {
	if t.faults == nil || t.started {
		return
	}
	t.started = true
	t.faults.Start(base)
}

// StopFaults ends the schedule, ends the running faults (a latency fault is removed, a paused
// node resumed) and waits for them. Idempotent.
func (t *Target) StopFaults() {
	if !t.started {
		return
	}
	t.started = false
	t.faults.Stop()
}

// Finish completes a driver's summary with what the target knows: the environment (via: http),
// the faults and their recovery (from rows), the store's ops, redirects and per-node counts, the
// hot keys' nodes, and the SLO verdict. It stops the faults first.
func (t *Target) Finish(ctx context.Context, sum *results.Summary, rows []results.Interval) {
	t.StopFaults()
	env := t.Environment
	env.Via = scenarios.ViaHTTP
	sum.Environment = env
	sum.Scenario, sum.Seed = t.Spec.Name, int64(t.Spec.Seed)
	if t.faults != nil {
		var bound float64
		sum.Faults, bound = t.faults.Recorded()
		sum.Overspend.BoundTokens += bound
		faults.MeasureRecovery(sum.Faults, rows)
	}
	if t.client != nil {
		var ops int64
		var byKind [limiter.NumErrorKinds]int64
		for _, n := range t.redir.snapshot() {
			ops += n.ops.Load()
			for k := range n.errs {
				byKind[k] += n.errs[k].Load()
			}
			ns := results.NodeStats{Addr: n.addr, Ops: n.ops.Load()}
			ns.Moved, ns.Ask, ns.NoScript = n.errs[limiter.KindMoved].Load(), n.errs[limiter.KindAsk].Load(), n.errs[limiter.KindNoScript].Load()
			ns.Timeout, ns.Conn = n.errs[limiter.KindTimeout].Load(), n.errs[limiter.KindConn].Load()
			sum.Nodes = append(sum.Nodes, ns)
		}
		for i := range sum.Nodes {
			sum.Nodes[i].Share = results.Ratio(sum.Nodes[i].Ops, ops)
		}
		sum.Central = results.Central{Ops: ops}
		if sum.DurationS > 0 {
			sum.Central.OpsPerS = float64(ops) / sum.DurationS
		}
		// The driver counted the gateway's 503s as other errors: name their kinds.
		var classified int64
		for k := range t.errs.n {
			if limiter.ErrorKind(k) != limiter.KindOther {
				classified += t.errs.n[k].Load()
			}
		}
		e := &sum.Errors
		e.Other = max(0, e.Other-classified)
		e.Timeout += t.errs.n[limiter.KindTimeout].Load()
		e.Conn += t.errs.n[limiter.KindConn].Load()
		e.TryAgain += t.errs.n[limiter.KindTryAgain].Load()
		e.ClusterDown += t.errs.n[limiter.KindClusterDown].Load()
		e.Moved += t.errs.n[limiter.KindMoved].Load()
		e.Ask += t.errs.n[limiter.KindAsk].Load()
		e.NoScript += t.errs.n[limiter.KindNoScript].Load()
		sum.Errors.Moved = max(sum.Errors.Moved, byKind[limiter.KindMoved])
		sum.Errors.Ask = max(sum.Errors.Ask, byKind[limiter.KindAsk])
		sum.Errors.NoScript = max(sum.Errors.NoScript, byKind[limiter.KindNoScript])
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		for i := range sum.HotKeys {
			sum.HotKeys[i].Node = nodeOf(nctx, t.client, sum.HotKeys[i].Key)
		}
		cancel()
	}
	sum.SLO = t.Spec.SLO.Evaluate(sum)
}

// Close stops the faults and releases the client and the cluster (local nodes are stopped).
// Idempotent.
func (t *Target) Close() error {
	t.StopFaults()
	for _, f := range t.stop {
		f()
	}
	t.stop = nil
	var errs []error
	for _, c := range t.closers {
		errs = append(errs, c())
	}
	t.closers = nil
	return errors.Join(errs...)
}
