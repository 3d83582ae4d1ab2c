package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"ratelab/cluster/gubernator"
	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/check"
	"ratelab/run/faults"
	"ratelab/scenarios"
	"ratelab/workload/trace"
)

// A Session is one run between Open and Finish: its directory, the system under test (the
// cluster, its client, the limiter behind every gateway) and the instruments that watch it (the
// overspend checker, the fault runner, the per-second marks). Drive runs the in-process
// schedule on it; the HTTP driver serves its gateways and drives them itself.
type Session struct {
	// Spec is the resolved scenario: with a trace, its duration, rate and tenants are the trace's.
	Spec *scenarios.Spec
	// Dir is the run directory; scenario.yaml is written by Open.
	Dir string
	// Tenants are the tenants' names by dense index (tenant-0 is the hottest); Endpoints the
	// endpoints' names in spec order. Key k is tenant k/len(Endpoints), endpoint k%len(Endpoints).
	Tenants, Endpoints []string

	opts    Options
	logf    func(string, ...any)
	started time.Time
	secs    int                 // whole seconds of the schedule
	env     results.Environment // what Open learnt of the environment
	replay  *replay             // nil unless the spec replays a trace
	policy  limiter.BucketPolicy
	tariffs *tariffRun // nil without tariffs
	store   *store     // nil without Redis
	// gateways are the limiters the gateways decide with, one per gateway; leases are the same
	// limiters in lease mode (their lease state is what a gateway fault destroys).
	gateways []limiter.Limiter
	leases   []*limiter.LeaseLimiter
	checker  check.Checker
	faults   *faults.Runner // nil without faults
	// skew is each gateway's clock offset in ns (a clock-skew fault sets it); nil without one.
	skew  []atomic.Int64
	marks *marks
	tally *tally // decisions and overspend per key (the in-process driver's)
	// back counts the tokens the store allowed and the unknown outcomes per key, against the
	// debit audit (limiter.audit, in-process runs); nil otherwise.
	back *clientDebits
	// cuts are the gateways' cut switches of a gateway partition; nil without one.
	cuts []atomic.Bool
	// regions is a multi-region run's layout and accounts (regions.go); nil without regions.
	regions *regionRun
	// guber is kind gubernator's cluster (wild.go); nil otherwise.
	guber *gubernator.Cluster
	// closers release what Open started, last started first.
	closers []func() error
}

// Open prepares a run of spec: it resolves a trace replay, creates the run directory with
// scenario.yaml, starts or attaches to the cluster, and builds the limiters, the checker and the
// fault runner. Close releases everything it started, also when a later step fails.
func Open(ctx context.Context, spec *scenarios.Spec, opts Options) (_ *Session, err error) {
	s := &Session{opts: opts, logf: opts.Logf, started: time.Now()}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	if err := s.resolve(spec); err != nil {
		return nil, err
	}
	if err := s.makeDir(); err != nil {
		return nil, err
	}
	s.env = results.Environment{Cores: runtime.NumCPU(), Go: runtime.Version(), Ratelab: opts.Version,
		Mode: string(s.Spec.Limiter.Kind), Provider: "none", Via: viaOf(s.Spec)}
	s.policy = s.Spec.BucketPolicy()
	if s.Spec.HasTariffs() {
		if err := s.startTariffs(ctx); err != nil {
			return nil, err
		}
	}
	if s.Spec.NeedsCluster() {
		if s.store, err = s.openStore(ctx); err != nil {
			return nil, err
		}
	}
	if s.Spec.Limiter.Audit && s.store != nil && s.Spec.Via != scenarios.ViaHTTP {
		s.back = newClientDebits(s.Tenants, s.Endpoints, newAuditRun())
	}
	if err := s.buildGateways(ctx); err != nil {
		return nil, err
	}
	s.marks = newMarks(s.secs)
	s.tally = newTally(s.Tenants, s.Endpoints)
	s.checker = s.NewChecker()
	tick := s.JudgeTick()
	perMs := int64(time.Millisecond / tick)
	s.checker.SetReorderWindow(int64(s.ReorderWindow()/tick), func(at, n int64) { s.marks.withdraw(at/perMs, n) })
	s.wireFaults()
	return s, nil
}

// resolve fixes the spec the run follows — a copy of spec with its defaults (a caller may have
// changed its kind after parsing), validated, with a trace replay's duration, rate and tenants —
// and refuses a part the spec cannot be split by.
func (s *Session) resolve(orig *scenarios.Spec) error {
	spec := *orig
	spec.ApplyDefaults()
	if err := spec.Validate(); err != nil {
		return err
	}
	s.Spec = &spec
	if spec.Trace != nil {
		var err error
		if s.Spec, s.replay, err = loadReplay(&spec); err != nil {
			return err
		}
	}
	if err := checkPart(s.Spec, s.opts); err != nil {
		return err
	}
	s.secs = int((time.Duration(s.Spec.Duration) + time.Second - 1) / time.Second)
	s.Endpoints = endpointNames(s.Spec)
	s.Tenants = tenantNames(s.Spec.Tenants.Count)
	if s.replay != nil {
		s.Tenants = s.replay.tenants
	}
	return nil
}

// DefaultDir is a run's directory without Options.Out: out/<name>-<time>, the time to the
// second. Its last element is the run's id.
func DefaultDir(name string, at time.Time) string {
	return filepath.Join("out", name+"-"+at.Format("20060102-150405"))
}

// makeDir creates the run directory and writes the resolved scenario into it.
func (s *Session) makeDir() error {
	s.Dir = s.opts.Out
	if s.Dir == "" {
		s.Dir = DefaultDir(s.Spec.Name, s.started)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return results.WriteFileAtomic(filepath.Join(s.Dir, results.ScenarioFile), s.Spec.YAML())
}

// Gateways returns the limiter each gateway decides with, one per gateway (limiter.gateways, or
// limiter.lease.gateways in lease mode).
func (s *Session) Gateways() []limiter.Limiter { return s.gateways }

// PolicyFunc gives the bucket policy of a tenant and endpoint, as a gateway looks it up: the
// tenant's tariff, or the scenario's policy.
func (s *Session) PolicyFunc() limiter.PolicyFunc {
	if s.tariffs != nil {
		return s.tariffs.cache.BucketPolicyFunc()
	}
	p := s.policy
	return func(string, string) limiter.BucketPolicy { return p }
}

// Trace is the trace the run replays, or nil.
func (s *Session) Trace() *trace.Trace {
	if s.replay == nil {
		return nil
	}
	return s.replay.tr
}

// Keys is the number of keys: tenants x endpoints.
func (s *Session) Keys() int { return len(s.Tenants) * len(s.Endpoints) }

// Start marks the run's time zero: the fault schedule and the per-second marks count from base.
// Call it once, right before the first request.
func (s *Session) Start(base time.Time) {
	s.marks.start(base)
	if s.store != nil {
		s.store.counters.baseNs.Store(base.UnixNano())
	}
	if s.faults != nil {
		s.faults.Start(base)
	}
	if s.regions != nil && s.regions.reb != nil {
		s.regions.reb.start(base)
	}
}

// Close stops the faults and releases what Open started: the limiters' background work, the
// client, the cluster (local nodes are stopped). Idempotent.
func (s *Session) Close() error {
	s.faults.Stop()
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

// onClose registers f to run at Close, before everything registered earlier.
func (s *Session) onClose(f func() error) { s.closers = append(s.closers, f) }

// viaOf is the summary's environment.via: "" for in-process runs.
func viaOf(spec *scenarios.Spec) string {
	if spec.Via == scenarios.ViaHTTP {
		return scenarios.ViaHTTP
	}
	return ""
}

// endpointNames are spec's endpoints' names, in order.
func endpointNames(spec *scenarios.Spec) []string {
	names := make([]string, len(spec.Endpoints))
	for i, e := range spec.Endpoints {
		names[i] = e.Name
	}
	return names
}

// tenantNames names tenants by Zipf rank: tenant-0 is the hottest.
func tenantNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "tenant-" + strconv.Itoa(i)
	}
	return out
}
