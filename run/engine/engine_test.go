package engine

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
)

// testSpec is a small valid scenario; tests adjust it.
func testSpec(t *testing.T, kind scenarios.LimiterKind, rate float64, dur time.Duration) *scenarios.Spec {
	t.Helper()
	s, err := scenarios.Parse("test", []byte(`
name: test
load: {rate: 1000, concurrency: 16, max_inflight: 256}
tenants: {count: 200, theta: 0.99}
endpoints: [{name: read, weight: 3}, {name: write, weight: 1}]
policy: {rate: 20, burst: 40}
cluster: {primaries: 2, replicas: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	s.Limiter.Kind = kind
	s.Load.Rate = rate
	s.Duration = scenarios.Duration(dur)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func readRun(t *testing.T, dir string) (*results.Summary, []results.Interval) {
	t.Helper()
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := results.ReadTimeseries(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{results.ScenarioFile, results.HistogramFile, results.LatencyLogFile, results.PercentilesFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("run directory lacks %s: %v", name, err)
		}
	}
	checkRunFiles(t, dir, sum, rows)
	return sum, rows
}

// checkConsistent asserts the bookkeeping identities every run must satisfy.
func checkConsistent(t *testing.T, sum *results.Summary, rows []results.Interval) {
	t.Helper()
	var offered, sent, dropped, allowed, denied, errs int64
	for i, r := range rows {
		if r.TS != float64(i) {
			t.Errorf("row %d has t_s %v", i, r.TS)
		}
		if r.Offered != r.Sent+r.Dropped {
			t.Errorf("row %d: offered %d != sent %d + dropped %d", i, r.Offered, r.Sent, r.Dropped)
		}
		offered += r.Offered
		sent += r.Sent
		dropped += r.Dropped
		allowed += r.Allowed
		denied += r.Denied
		errs += r.Errors
	}
	o := sum.Outcomes
	if sum.Load.Sent != sent || sum.Load.Dropped != dropped {
		t.Errorf("summary sent/dropped %d/%d, rows say %d/%d", sum.Load.Sent, sum.Load.Dropped, sent, dropped)
	}
	if got := o.Allowed + o.Denied + o.FailedOpen + o.FailedClosed + o.Errors; got != sum.Load.Completed || got != sent {
		t.Errorf("outcomes add up to %d, decisions %d, sent %d: every sent request must end in exactly one outcome", got, sum.Load.Completed, sent)
	}
	// Rows may miss only decisions that finished after their second was written.
	if allowed > o.Allowed || denied > o.Denied || errs > o.Errors {
		t.Errorf("rows count more than the totals: allowed %d/%d denied %d/%d errors %d/%d", allowed, o.Allowed, denied, o.Denied, errs, o.Errors)
	}
}

func TestEngineMemoryLimiterHasNoOverspend(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "memory", 4000, 3*time.Second)
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	if len(rows) != 3 {
		t.Errorf("%d rows, want 3 (one per second)", len(rows))
	}
	if want := int64(12000); sum.Load.Sent+sum.Load.Dropped != want {
		t.Errorf("offered %d requests, want %d (4000/s for 3 s)", sum.Load.Sent+sum.Load.Dropped, want)
	}
	if sum.Outcomes.Denied == 0 || sum.Outcomes.Allowed == 0 {
		t.Errorf("outcomes %+v: the hot keys must be limited and the cold ones allowed", sum.Outcomes)
	}
	// ~0, not 0: the limiter reads its clock before it takes the key's lock, so on a loaded
	// machine two requests of one key can be decided in the other order from their times, and
	// the checker (in time order) scores such a pair as one overspend and one false deny. At
	// these 12,000 requests a clean-clone `make test` under parallel packages once saw 1
	// overspend of ~7,760 allowed (1.3e-4) and 11 false denies of ~4,240 denied (2.6e-3), so
	// the limits are 5e-4 and 5e-3 (~4 and ~21 requests here); a limiter that ignores its
	// burst scores above 5e-2 (TestEngineDetectsOverspendOfAnUnlimitedLimiter).
	t.Logf("overspend %d of %d allowed, false denies %d of %d denied", sum.Overspend.Requests, sum.Outcomes.Allowed, sum.Overspend.FalseDenies, sum.Outcomes.Denied)
	if sum.Overspend.Ratio > 5e-4 || sum.Overspend.FalseDenyRatio > 5e-3 {
		t.Errorf("overspend %+v: an exact limiter must score ~0", sum.Overspend)
	}
	if len(sum.HotKeys) == 0 || !strings.HasPrefix(sum.HotKeys[0].Key, "rl:{tenant-0}:") {
		t.Errorf("hot keys %+v: tenant-0 (Zipf rank 0) must be the hottest", sum.HotKeys)
	}
	if sum.Environment.Mode != "local" || sum.Environment.Cores == 0 || sum.Environment.Go == "" {
		t.Errorf("environment %+v", sum.Environment)
	}
	// No memory SLO: the footprint is read without forcing a collection in the middle of the load.
	if sum.Process.Settled || sum.Process.RSSEndMB <= 0 || sum.Process.GoroutinesEnd <= 0 {
		t.Errorf("process %+v: want raw (unsettled) samples with RSS and goroutines read", sum.Process)
	}
}

func TestEngineDetectsOverspendOfAnUnlimitedLimiter(t *testing.T) {
	t.Parallel()
	// noop allows everything: every request beyond rate 20 burst 40 per key is overspend.
	spec := testSpec(t, "noop", 4000, 2*time.Second)
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	if sum.Outcomes.Denied != 0 || sum.Overspend.Requests == 0 || sum.Overspend.ByCause["local"] == 0 {
		t.Errorf("overspend %+v, outcomes %+v: an unlimited limiter must overspend", sum.Overspend, sum.Outcomes)
	}
	// Most of tenant-0's traffic (~10% of 4000/s, far above 20/s) is beyond the envelope.
	if sum.Overspend.Ratio < 0.05 {
		t.Errorf("overspend ratio %v, want well above 0.05", sum.Overspend.Ratio)
	}
}

// slowLimiter answers after a fixed delay: it stands in for a saturated store.
type slowLimiter struct{ delay time.Duration }

func (s slowLimiter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	time.Sleep(s.delay)
	return limiter.Decision{Allowed: true}, nil
}

func runDriver(t *testing.T, spec *scenarios.Spec, lim limiter.Limiter, ctx context.Context) (*driver, []results.Interval, *Account) {
	t.Helper()
	s, err := Open(context.Background(), spec, Options{Out: t.TempDir(), Wrap: func(limiter.Limiter) limiter.Limiter { return lim }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pacer, keys, err := newSchedule(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(s)
	var rows []results.Interval
	total := &Account{hist: results.NewHistogram()}
	d.run(ctx, time.Now(), pacer, keys, func(sec int, st *Account) {
		rows = append(rows, d.row(sec, st))
		total.Add(st)
	})
	total.Add(d.rec.late())
	return d, rows, total
}

func TestDriverCountsDropsAtTheInflightBound(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "noop", 1000, 2*time.Second)
	spec.Load.Concurrency, spec.Load.MaxInflight = 2, 2
	d, rows, total := runDriver(t, spec, slowLimiter{delay: 10 * time.Millisecond}, context.Background())
	var offered, sent, dropped int64
	for _, r := range rows {
		offered += r.Offered
		sent += r.Sent
		dropped += r.Dropped
	}
	if offered != 2000 || sent+dropped != offered {
		t.Fatalf("offered %d sent %d dropped %d, want 2000 = sent + dropped", offered, sent, dropped)
	}
	// Two workers at 10 ms each serve at most ~200/s: most of the 1000/s must be dropped, counted.
	if sent > 600 || dropped < 1400 {
		t.Errorf("sent %d dropped %d: two 10 ms workers cannot serve 1000/s", sent, dropped)
	}
	if got := total.allowed; got != sent {
		t.Errorf("allowed %d, want every sent request (%d) decided", got, sent)
	}
	sum := results.NewSummary("t", 1, time.Now())
	d.summarize(sum, total, 2*time.Second, counts{offered: offered, sent: sent, dropped: dropped})
	// The dispatcher kept its schedule: the drops at max_inflight name the limiter, not the
	// generator.
	if sum.Load.GeneratorLimited || sum.Load.Limit != results.LimitLimiter || !strings.Contains(sum.Load.Note, "max_inflight") {
		t.Errorf("load %+v: a run that could not reach its offered rate must say so and why (a slow limiter)", sum.Load)
	}
	var kinds []results.NoteKind
	for _, n := range sum.Load.Notes {
		kinds = append(kinds, n.Kind)
	}
	if want := []results.NoteKind{results.NoteLoad, results.NoteDrops, results.NoteLag}; !slices.Equal(kinds, want) {
		t.Errorf("notes of kinds %v, want %v: the shortfall, its drops, the schedule lag", kinds, want)
	}
}

// stallLimiter stalls every decision that starts during [from, from+d) until the stall ends,
// like a paused Redis primary.
type stallLimiter struct {
	start    time.Time
	from, d  time.Duration
	inStall  atomic.Int64
	stallEnd sync.Once
}

func (s *stallLimiter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	if e := time.Since(s.start); e >= s.from && e < s.from+s.d {
		s.inStall.Add(1)
		time.Sleep(s.from + s.d - e)
	}
	return limiter.Decision{Allowed: true}, nil
}

// TestDriverLatencyIsFreeOfCoordinatedOmission: during a 300 ms stall the schedule goes on; every
// request scheduled in the stall waits, and each wait counts from its intended start. A closed-loop
// tool would record one slow request per worker instead.
func TestDriverLatencyIsFreeOfCoordinatedOmission(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "noop", 1000, 2*time.Second)
	spec.Load.Concurrency, spec.Load.MaxInflight = 4, 4096
	lim := &stallLimiter{start: time.Now(), from: 800 * time.Millisecond, d: 300 * time.Millisecond}
	_, _, total := runDriver(t, spec, lim, context.Background())
	// ~300 requests were scheduled inside the stall (1000/s x 0.3 s); their latencies spread
	// from ~300 ms down to ~0. So ~15% of 2000 requests took > 1 ms... p90 must be well above
	// a millisecond and p99 above 100 ms.
	if p99 := total.hist.QuantileMs(99); p99 < 100 {
		t.Errorf("p99 = %.3f ms, want > 100 ms: requests queued behind the stall must count their wait", p99)
	}
	if p90 := total.hist.QuantileMs(90); p90 < 5 {
		t.Errorf("p90 = %.3f ms, want > 5 ms (10%% of requests were scheduled inside the stall)", p90)
	}
	if mx := total.hist.MaxMs(); mx < 250 || mx > 1000 {
		t.Errorf("max = %.3f ms, want about the stall (300 ms)", mx)
	}
}

func TestEngineInterruptKeepsWhatWasMeasured(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "memory", 2000, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Int64
	var cancelledAt atomic.Int64
	onRow := func(results.Interval) {
		// The first row is written just after second 1: interrupt half a second later.
		if seen.Add(1) == 1 {
			time.AfterFunc(500*time.Millisecond, func() { cancelledAt.Store(time.Now().UnixNano()); cancel() })
		}
	}
	res, err := Run(ctx, spec, Options{Out: t.TempDir(), OnInterval: onRow})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(time.Unix(0, cancelledAt.Load())); el > 3*time.Second {
		t.Errorf("the run ended %v after the interrupt, want it to stop promptly", el)
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	if !sum.Interrupted {
		t.Error("summary.interrupted = false, want true")
	}
	// The interrupt comes about half a second after the first row (later on a loaded machine):
	// the run keeps every second it started, the last one partial, and no more.
	if want := int(math.Ceil(sum.DurationS)); len(rows) != want || seen.Load() != int64(want) {
		t.Errorf("%d rows (%d reported) for %.3f s, want %d: every second started, the last one partial", len(rows), seen.Load(), sum.DurationS, want)
	}
	if sum.DurationS < 1.4 || sum.DurationS > 4 {
		t.Errorf("duration_s %v, want about 1.5", sum.DurationS)
	}
	if sum.Load.Completed < 2500 {
		t.Errorf("decisions %d, want the ~3000 made before the interrupt", sum.Load.Completed)
	}
}

// TestEngineCentralTokenBucket runs the real thing: the Lua bucket on a real local cluster.
func TestEngineCentralTokenBucket(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
	state := filepath.Join(t.TempDir(), "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, rate float64, workers int) *results.Summary {
		spec := testSpec(t, "token-bucket", rate, 3*time.Second)
		spec.Load.Concurrency = workers
		spec.Cluster.Provider = "running"
		// A generous timeout: on a loaded 2-core machine under -race a 50 ms deadline expires now
		// and then, and a timed-out decision's effect is unknown, which these checks are not about.
		spec.Limiter.Timeout = scenarios.Duration(time.Second)
		res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
		if err != nil {
			t.Fatal(err)
		}
		sum, rows := readRun(t, res.Dir)
		checkConsistent(t, sum, rows)
		if sum.Environment.Mode != "central" || sum.Environment.Primaries != 2 || !strings.HasPrefix(sum.Environment.RedisVersion, "7.") {
			t.Errorf("environment %+v", sum.Environment)
		}
		if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
			t.Errorf("outcomes %+v: want both allowed and denied", sum.Outcomes)
		}
		if sum.Central.Ops < sum.Load.Completed {
			t.Errorf("central ops %d < decisions %d: every decision is one EVALSHA", sum.Central.Ops, sum.Load.Completed)
		}
		if sum.Errors.NoScript != 0 || sum.Errors.Moved != 0 {
			t.Errorf("errors %+v: a quiet cluster with a preloaded script has no NOSCRIPT or MOVED", sum.Errors)
		}
		if len(sum.HotKeys) == 0 || sum.HotKeys[0].Node == "" {
			t.Errorf("hot keys %+v: want the hottest key with its node", sum.HotKeys)
		}
		checkCPU(t, sum, 2)
		return sum
	}
	t.Run("serial decisions agree exactly with the envelope", func(t *testing.T) {
		// One worker: the envelope sees decisions in the order Redis made them, so the Lua and
		// the envelope's arithmetic must agree on every single one.
		sum := run(t, 500, 1)
		if o := sum.Overspend; o.Requests != 0 || o.FalseDenies != 0 {
			t.Errorf("overspend %+v: serial central decisions must match the exact envelope", o)
		}
	})
	t.Run("concurrent decisions leave only a reordering residue", func(t *testing.T) {
		// Requests in flight together on one key may reach Redis in another order than the
		// envelope sees them; that residue must stay small.
		sum := run(t, 2000, 32)
		if o := sum.Overspend; o.Ratio > 2e-3 {
			t.Errorf("overspend %+v: more than a reordering residue", o)
		}
	})
	t.Run("a kind changed after parsing gets its defaults", func(t *testing.T) {
		// ratelab run NAME --limiter lease changes the kind of a parsed spec: the run must use
		// the lease defaults, not dereference the missing lease block.
		spec := testSpec(t, "token-bucket", 200, time.Second)
		spec.Cluster.Provider = "running"
		spec.Limiter.Kind = scenarios.KindLease
		res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Environment.Mode != "lease" || res.Summary.Load.Completed == 0 {
			t.Errorf("mode %q, %d decisions: want a lease run", res.Summary.Environment.Mode, res.Summary.Load.Completed)
		}
	})
	t.Run("leases cut central calls and stay near the envelope", func(t *testing.T) {
		spec := testSpec(t, "lease", 2000, 3*time.Second)
		spec.Load.Concurrency = 8
		spec.Cluster.Provider = "running"
		spec.Limiter.Timeout = scenarios.Duration(time.Second)
		spec.Limiter.Lease = &scenarios.LeaseCfg{Size: 10, Gateways: 2, TTL: scenarios.Duration(2 * time.Second)}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
		if err != nil {
			t.Fatal(err)
		}
		sum, rows := readRun(t, res.Dir)
		checkConsistent(t, sum, rows)
		if sum.Environment.Mode != "lease" || sum.Outcomes.Allowed == 0 {
			t.Errorf("mode %q outcomes %+v", sum.Environment.Mode, sum.Outcomes)
		}
		// The hot keys fetch 10 tokens per call: far fewer Redis calls than decisions.
		if sum.Central.Ops*2 > sum.Load.Completed {
			t.Errorf("central ops %d for %d decisions: leases must cut central calls", sum.Central.Ops, sum.Load.Completed)
		}
		if sum.Overspend.Bound.Sources["leases"] <= 0 || !strings.Contains(sum.Load.Note, "lease fetches") {
			t.Errorf("bound %+v, note %q: want the leases' part of the bound and the lease figures in the note", sum.Overspend.Bound, sum.Load.Note)
		}
	})
	t.Run("algorithms side by side on the same traffic", func(t *testing.T) {
		over := map[scenarios.LimiterKind]float64{}
		for _, kind := range []scenarios.LimiterKind{"gcra", "fixed-window", "sliding-window", "sliding-log"} {
			spec := testSpec(t, "token-bucket", 2000, 3*time.Second)
			spec.Limiter.Kind = kind
			spec.Load.Concurrency = 4
			spec.Cluster.Provider = "running"
			spec.Limiter.Timeout = scenarios.Duration(time.Second)
			if kind != "gcra" {
				spec.Policy = scenarios.Policy{Limit: 20, Window: scenarios.Duration(time.Second)}
			}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			sum, rows := readRun(t, res.Dir)
			checkConsistent(t, sum, rows)
			if sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 || sum.Outcomes.Errors != 0 {
				t.Errorf("%s: outcomes %+v", kind, sum.Outcomes)
			}
			if sum.Environment.Mode != "central "+string(kind) {
				t.Errorf("%s: mode %q", kind, sum.Environment.Mode)
			}
			over[kind] = sum.Overspend.Ratio
		}
		t.Logf("overspend ratio by algorithm: %v", over)
		// The fixed window lets up to twice the limit through around each window edge; the
		// sliding log is exact for "at most L in any window"; GCRA is the token bucket's limit.
		if over["fixed-window"] < 0.01 || over["fixed-window"] < 5*over["sliding-log"] {
			t.Errorf("overspend %v: want the fixed window's edge bursts to stand out", over)
		}
		if over["sliding-log"] > 5e-3 || over["gcra"] > 5e-3 {
			t.Errorf("overspend %v: sliding log and GCRA must stay near zero", over)
		}
	})
	// The attached cluster is still there: Run closes only what it started.
	if err := l.WaitHealthy(context.Background()); err != nil {
		t.Errorf("attached cluster after the run: %v", err)
	}
	// Every key any algorithm wrote expires: idle tenants never pile up in Redis.
	c := clustertest.Client(t, l)
	var keys, noTTL atomic.Int64 // ForEachMaster runs the primaries concurrently
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, "rl:*", 1000).Iterator()
		for iter.Next(ctx) {
			keys.Add(1)
			ttl, err := n.PTTL(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			if ttl < 0 && ttl != -2 { // -2: expired between SCAN and PTTL
				noTTL.Add(1)
				t.Errorf("key %s has no TTL (%v)", iter.Val(), ttl)
			}
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys.Load() == 0 {
		t.Error("SCAN found no rl:* keys after the runs")
	}
	t.Logf("%d keys scanned, %d without a TTL", keys.Load(), noTTL.Load())
}

// checkCPU checks a local run's CPU section: this process and each of the cluster's nodes
// used some CPU over about the run's length, a node's main thread at most its process (to
// INFO's microseconds, which it rounds for each separately).
func checkCPU(t *testing.T, sum *results.Summary, nodes int) {
	t.Helper()
	c := sum.CPU
	if c == nil {
		t.Fatal("summary has no cpu section")
	}
	if c.WallS < sum.DurationS*0.9 || c.WallS > sum.DurationS+10 || c.Generator <= 0 || len(c.Nodes) != nodes {
		t.Errorf("cpu %+v: want about %.1f s of wall, the generator's CPU and %d nodes", c, sum.DurationS, nodes)
	}
	for _, n := range c.Nodes {
		if n.Role != cluster.RolePrimary || n.MainThread <= 0 || n.MainThread > n.Process*1.01+1e-4 {
			t.Errorf("node %+v: want a primary whose main thread worked, within its process", n)
		}
		// One script call per read, less the reads of INFO, PING and slot-map requests; a
		// pipeline's worth at most.
		if n.CallsPerRead < 0.5 || n.CallsPerRead > 64 {
			t.Errorf("node %+v: want about one script call per read of a plain transport", n)
		}
	}
	p := c.PerDecision
	if p == nil {
		t.Fatal("cpu section has no us_per_decision")
	}
	if p.Generator <= 0 || p.Primaries <= 0 || p.Replicas != 0 || math.Abs(p.Total-(p.Generator+p.Primaries)) > 1e-9 ||
		math.Abs(p.Generator-sum.GeneratorUsPerDecision()) > 1e-9 || p.Total > 1e5 {
		t.Errorf("us per decision %+v: want generator and primaries > 0, no replicas, their sum as the total, under 0.1 s", p)
	}
}
