//go:build faults

package attack_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"ratelab/cluster/clustertest"
	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/report/live"
	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// chaosSeeds seed the fault schedules TestChaosAccounting runs. A seed that once broke an
// identity stays here as a regression case, with what it broke.
var chaosSeeds = []uint64{
	// Its lease runs break overspend.bound in both drivers: the bound is leases only (gateways x
	// lease size), with nothing for the debits a failover, a kill or a primary's partition
	// returns, and the burst excess it is judged against counts every unknown outcome debited.
	1,
}

// chaosLength is each run's length: long enough for every fault kind of the schedule and the
// cluster's recovery from each, short enough for four runs on this machine's two cores.
const chaosLength = 30 * time.Second

// chaosLimiter is one limiter set-up of the chaos runs, with the fault kinds it can take.
type chaosLimiter struct {
	name string
	// spec is the scenario's limiter, endpoints and policy.
	spec string
	// lease: gateway-kill and gateway partitions apply (gateways hold leases); otherwise the
	// endpoints' fail policies answer the store's failures.
	lease bool
}

var chaosLimiters = []chaosLimiter{
	{name: "central", spec: `
endpoints:
  - {name: read, weight: 2}
  - {name: write, weight: 1, fail: open, budget: 50ms}
  - {name: admin, weight: 1, fail: closed, budget: 50ms}
limiter: {kind: token-bucket, timeout: 100ms}
`},
	{name: "lease", lease: true, spec: `
endpoints: [{name: read, weight: 1}]
limiter: {kind: lease, timeout: 200ms, lease: {size: 5, gateways: 3}}
`},
}

// chaosFaults draws a schedule from seed: every fault kind the limiter and the driver can take
// (via: http refuses clock-skew), each at least once. The faults that change which node is a
// shard's primary (kill-primary and the restart of the killed node, failover, a primary's
// partition) follow one another with time to recover between them, so the cluster stays
// whole; the others (pause, latency, reshard, script-flush, clock-skew, gateway-kill, a
// gateway partition) fall anywhere, over them and over each other. The last fault ends 8 s
// before the run does, so the run's end sees the cluster settled.
func chaosFaults(seed uint64, lim chaosLimiter, via string) []scenarios.FaultSpec {
	rng := rand.New(rand.NewPCG(seed, 40))
	at := func(d time.Duration) scenarios.Duration { return scenarios.Duration(d.Round(100 * time.Millisecond)) }
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	primary := func() string { return fmt.Sprintf("node:%d", rng.IntN(3)) }
	last := chaosLength - 8*time.Second
	var out []scenarios.FaultSpec

	// The primaries' lane, in a random order.
	t := 3 * time.Second
	for _, k := range rng.Perm(3) {
		switch k {
		case 0:
			out = append(out, scenarios.FaultSpec{At: at(t), Kind: scenarios.FaultKillPrimary, Target: primary()},
				scenarios.FaultSpec{At: at(t + 4*time.Second), Kind: scenarios.FaultRestart, Target: "killed"})
			t += 9 * time.Second
		case 1:
			out = append(out, scenarios.FaultSpec{At: at(t), Kind: scenarios.FaultFailover, Target: primary()})
			t += 5 * time.Second
		case 2:
			d := between(2*time.Second, 3*time.Second)
			out = append(out, scenarios.FaultSpec{At: at(t), Kind: scenarios.FaultPartition, Target: primary(), For: at(d)})
			t += d + 5*time.Second
		}
	}

	// The free lane: every kind once, then as many again drawn at random.
	kinds := []scenarios.FaultKind{scenarios.FaultPause, scenarios.FaultLatency, scenarios.FaultReshard, scenarios.FaultScriptFlush}
	if via == scenarios.ViaProcess {
		kinds = append(kinds, scenarios.FaultClockSkew)
	}
	if lim.lease {
		kinds = append(kinds, scenarios.FaultGatewayKill, "gateway-partition")
	}
	for i := range 2 * len(kinds) {
		k := kinds[i%len(kinds)]
		if i >= len(kinds) {
			k = kinds[rng.IntN(len(kinds))]
		}
		f := scenarios.FaultSpec{At: at(between(2*time.Second, last-3*time.Second)), Kind: k}
		switch k {
		case scenarios.FaultPause:
			f.Target, f.For = fmt.Sprintf("node:%d", rng.IntN(6)), at(between(300*time.Millisecond, 1200*time.Millisecond))
		case scenarios.FaultLatency:
			f.Target, f.For = fmt.Sprintf("node:%d", rng.IntN(6)), at(between(2*time.Second, 3*time.Second))
			f.Delay = scenarios.Duration(between(time.Millisecond, 4*time.Millisecond).Round(100 * time.Microsecond))
			f.Jitter = f.Delay / 2
		case scenarios.FaultReshard:
			from := rng.IntN(3)
			f.Slots, f.From, f.To = 5+rng.IntN(40), fmt.Sprintf("node:%d", from), fmt.Sprintf("node:%d", (from+1+rng.IntN(2))%3)
		case scenarios.FaultScriptFlush:
			f.Target = "all"
		case scenarios.FaultClockSkew:
			off := between(200*time.Millisecond, 2*time.Second)
			if rng.IntN(2) == 0 {
				off = -off
			}
			f.Offset, f.For = scenarios.Duration(off.Round(time.Millisecond)), at(between(2*time.Second, 3*time.Second))
		case scenarios.FaultGatewayKill:
			f.Target = fmt.Sprintf("gateway:%d", rng.IntN(3))
		case "gateway-partition":
			f.Kind, f.Target, f.For = scenarios.FaultPartition, fmt.Sprintf("gateway:%d", rng.IntN(3)), at(between(time.Second, 3*time.Second))
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b scenarios.FaultSpec) int { return int(a.At - b.At) })
	return out
}

// chaosSpec is the scenario of one chaos run: a 3x1 cluster at a rate this machine carries
// over HTTP under -race, the limiter's set-up, the seed's faults.
func chaosSpec(t *testing.T, seed uint64, lim chaosLimiter, via string) *scenarios.Spec {
	t.Helper()
	spec := parseSpec(t, fmt.Sprintf(`
name: chaos-%s-%s-%d
seed: %d
duration: %s
via: %s
load: {rate: 1000, concurrency: 32, max_inflight: 512}
tenants: {count: 200, theta: 0.99}
policy: {rate: 20, burst: 40}
cluster: {primaries: 3, replicas: 1, node_timeout: 1s}
`, lim.name, via, seed, seed, chaosLength, via)+lim.spec)
	// Tokens back (in process, central): its bound is one more the run prints.
	spec.Limiter.Audit = !lim.lease && via == scenarios.ViaProcess
	spec.Faults = chaosFaults(seed, lim, via)
	if err := spec.Validate(); err != nil {
		t.Fatalf("seed %d: the drawn schedule is invalid: %v", seed, err)
	}
	return spec
}

// TestChaosAccounting runs each seed's random schedule of every fault kind, for each limiter
// set-up, through the in-process driver and the HTTP driver, and checks the identities that
// hold whatever happened (checkAccounting).
func TestChaosAccounting(t *testing.T) {
	for _, seed := range chaosSeeds {
		for _, lim := range chaosLimiters {
			for _, via := range []string{scenarios.ViaProcess, scenarios.ViaHTTP} {
				t.Run(fmt.Sprintf("seed=%d/%s/%s", seed, lim.name, via), func(t *testing.T) {
					clustertest.Watch(t)
					spec := chaosSpec(t, seed, lim, via)
					for _, f := range spec.Faults {
						t.Logf("fault %+v", f)
					}
					run := runChaos(t, spec)
					clustertest.RecordLag(t, run.sum.Load.ScheduleLagP99Ms)
					checkAccounting(t, run)
				})
			}
		}
	}
}

// chaosRun is one finished run: its directory and summary read back, its rows, the live
// metrics that heard it (before and after Finish), and what the test itself saw of every
// request (the oracle).
type chaosRun struct {
	spec      *scenarios.Spec
	dir       string
	sum       *results.Summary
	rows      []results.Interval
	liveRows  map[string]float64 // the live metrics before Finish: the rows as published
	liveFinal map[string]float64 // after Finish
	oracle    oracle
}

// oracle is the test's own count of a run's requests, from the records (in process) or from
// vegeta's results file (over HTTP): outcomes in engine.Outcome order; store failures by kind,
// those that ended the request and those a fail policy answered; failures whose kind the test
// cannot tell (a request with no HTTP status); and the range of unknown outcomes it sees.
type oracle struct {
	outcomes               [5]int64
	kinds                  [limiter.NumErrorKinds]int64
	unkinded               int64
	unknownMin, unknownMax int64
}

// recordOracle is a Consumer that counts every record of an in-process run.
type recordOracle struct {
	mu sync.Mutex
	o  oracle
}

func (c *recordOracle) Consume(r *engine.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.o.outcomes[r.Outcome]++
	if k, ok := r.StoreFailure(); ok {
		c.o.kinds[k]++
	}
	if r.MayHaveDebited {
		c.o.unknownMin++
		c.o.unknownMax++
	}
}

// runChaos runs spec through its driver, live metrics fed as the CLI feeds them.
func runChaos(t *testing.T, spec *scenarios.Spec) *chaosRun {
	t.Helper()
	m := live.NewMetrics(spec.Name, "chaos", nil)
	rec := &recordOracle{}
	opts := engine.Options{Out: t.TempDir(), Logf: t.Logf, OnInterval: m.OnInterval, OnProgress: m.OnProgress,
		OnHistogram: func(_ int, h *results.Histogram) { m.ObserveHistogram(h) }}
	var res *engine.Result
	var err error
	if spec.Via == scenarios.ViaHTTP {
		res, err = attack.RunScenario(context.Background(), spec, opts)
	} else {
		opts.Consumers = []engine.Consumer{rec}
		res, err = engine.Run(context.Background(), spec, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	run := &chaosRun{spec: spec, dir: res.Dir, liveRows: gather(t, m)}
	m.Finish(res.Summary)
	run.liveFinal = gather(t, m)
	if run.sum, err = results.ReadSummary(filepath.Join(res.Dir, results.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	run.rows = readRows(t, res.Dir)
	if spec.Via == scenarios.ViaHTTP {
		run.oracle = resultsOracle(t, filepath.Join(res.Dir, attack.ResultsFile))
	} else {
		run.oracle = rec.o
	}
	return run
}

// resultsOracle counts vegeta's results file by status and ratelab's gateway headers: 2xx and
// 429 are answers (a fail policy's by X-RateLimit-Source), a 503 or another status an error of
// the kind X-RateLimit-Failure names (other without it), a request with no status an error of
// a kind the test does not tell; X-RateLimit-Unknown (or a status above 500 without it) marks
// an unknown outcome, and a request with no status may be one.
func resultsOracle(t *testing.T, path string) oracle {
	t.Helper()
	var o oracle
	for _, r := range decodeResults(t, path) {
		h := http.Header(r.Headers)
		failure, unknown := h.Get(gateway.HeaderFailure), h.Get(gateway.HeaderUnknown) == "1"
		switch {
		case r.Code >= 200 && r.Code < 300 || r.Code == http.StatusTooManyRequests:
			switch src := h.Get(gateway.HeaderSource); {
			case src == limiter.FailOpen.String():
				o.outcomes[engine.OutcomeFailedOpen]++
			case src == limiter.FailClosed.String():
				o.outcomes[engine.OutcomeFailedClosed]++
			case r.Code == http.StatusTooManyRequests:
				o.outcomes[engine.OutcomeDenied]++
			default:
				o.outcomes[engine.OutcomeAllowed]++
			}
		case r.Code == 0:
			o.outcomes[engine.OutcomeError]++
			o.unkinded++
			o.unknownMax++
			continue
		default:
			o.outcomes[engine.OutcomeError]++
			if failure == "" {
				o.kinds[limiter.KindOther]++
				unknown = r.Code > 500
			}
		}
		if failure != "" {
			o.kinds[kindNamed(t, failure)]++
		}
		if unknown {
			o.unknownMin++
			o.unknownMax++
		}
	}
	return o
}

// kindNamed is the ErrorKind an X-RateLimit-Failure value names.
func kindNamed(t *testing.T, name string) limiter.ErrorKind {
	for k := range limiter.NumErrorKinds {
		if limiter.ErrorKind(k).String() == name {
			return limiter.ErrorKind(k)
		}
	}
	t.Errorf("X-RateLimit-Failure %q names no error kind", name)
	return limiter.KindOther
}

// gather reads m's series as "name" or "name{label=value}" -> value (a histogram by its count).
func gather(t *testing.T, m *live.Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for _, l := range s.GetLabel() {
				if l.GetName() != live.LabelScenario && l.GetName() != live.LabelRunID {
					name += "{" + l.GetName() + "=" + l.GetValue() + "}"
				}
			}
			switch {
			case s.GetCounter() != nil:
				out[name] = s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				out[name] = s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				out[name] = float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
