package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/scenarios"
	"ratelab/workload/trace"
)

func readTraceFile(t *testing.T, path string) *trace.Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The recorded schedule is the seeded one: the same requests TraceOf (what the HTTP driver
// replays and `trace gen` writes) draws for the spec, one per offered request — at a Poisson
// rate and along load stages (a ramp the HTTP driver once replayed as a constant rate).
func TestRecordTraceIsTheSeededSchedule(t *testing.T) {
	t.Parallel()
	poisson := testSpec(t, "noop", 3000, 2*time.Second)
	poisson.Load.Pacer = "poisson"
	ramp := testSpec(t, "noop", 500, 2*time.Second) // the ramp starts at load.rate
	ramp.Load.Stages = []scenarios.Stage{scenarios.Ramp(3000, 2*time.Second)}
	for name, spec := range map[string]*scenarios.Spec{"poisson": poisson, "stages": ramp} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			recordedIsTraceOf(t, spec)
		})
	}
}

func recordedIsTraceOf(t *testing.T, spec *scenarios.Spec) {
	path := filepath.Join(t.TempDir(), "run.trace")
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), RecordTrace: path})
	if err != nil {
		t.Fatal(err)
	}
	got := readTraceFile(t, path)
	want, err := TraceOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got.Requests)) != res.Summary.Load.Sent+res.Summary.Load.Dropped {
		t.Errorf("trace holds %d requests, the run offered %d", len(got.Requests), res.Summary.Load.Sent+res.Summary.Load.Dropped)
	}
	if len(got.Requests) != len(want.Requests) {
		t.Fatalf("recorded %d requests, the seeded schedule has %d", len(got.Requests), len(want.Requests))
	}
	for i := range want.Requests {
		if got.Requests[i] != want.Requests[i] {
			t.Fatalf("record %d = %+v, the seeded schedule's is %+v", i, got.Requests[i], want.Requests[i])
		}
	}
	if !strings.Contains(res.Summary.Load.Note, "schedule recorded to "+path) {
		t.Errorf("note %q does not say where the schedule went", res.Summary.Load.Note)
	}
}

// Record -> replay reproduces a run's allowed and denied counts exactly, in-process and on a
// real Redis Cluster, with limiter.clock: schedule (decision time = start + intended offset,
// each tenant's requests in order on one worker). The envelope sees the decisions in the order
// and at the times the limiter made them, so it must also find no overspend and no false deny.
func TestRecordReplayIsExact(t *testing.T) {
	t.Parallel()
	var state string
	var addrs []string
	if !testing.Short() {
		l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
		state = filepath.Join(t.TempDir(), "state.json")
		if err := l.SaveState(state); err != nil {
			t.Fatal(err)
		}
		addrs = l.Addrs()
	}
	flush := func(t *testing.T) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		defer c.Close()
		if err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
			return n.FlushAll(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, kind, pacer string
	}{
		{"memory constant", "memory", "constant"},
		{"memory poisson", "memory", "poisson"},
		{"redis token-bucket poisson", "token-bucket", "poisson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.kind != "memory" && state == "" {
				t.Skip("-short: no Redis Cluster")
			}
			spec := testSpec(t, scenarios.LimiterKind(tc.kind), 800, 2*time.Second)
			spec.Load.Pacer = tc.pacer
			// Few tenants near their limit, a small burst: whether a request finds a token
			// depends on its time to the millisecond, so wall-clock jitter would show.
			// A tenant's requests are decided one at a time (that is how their order is kept):
			// the hottest, ~40% of the load, must fit one worker even under -race, so the
			// rate is modest and a backlog may queue instead of being dropped.
			spec.Tenants.Count = 5
			spec.Policy.Rate, spec.Policy.Burst = 150, 2
			spec.Load.MaxInflight = 4096
			spec.Limiter.Clock = scenarios.ClockSchedule
			// Generous: a timed-out decision's effect is unknown, and that is not what this tests.
			spec.Limiter.Timeout = scenarios.Duration(time.Second)
			if tc.kind != "memory" {
				spec.Cluster.Provider = "running"
			}
			path := filepath.Join(t.TempDir(), "run.trace")
			run := func(s *scenarios.Spec, rec string) *Result {
				if tc.kind != "memory" {
					flush(t)
				}
				res, err := Run(context.Background(), s, Options{Out: t.TempDir(), StateFile: state, RecordTrace: rec})
				if err != nil {
					t.Fatal(err)
				}
				sum, rows := readRun(t, res.Dir)
				checkConsistent(t, sum, rows)
				if sum.Load.Dropped != 0 || sum.Outcomes.Errors != 0 {
					t.Fatalf("dropped %d, errors %d: the machine was too busy for an exact comparison (load %+v)", sum.Load.Dropped, sum.Outcomes.Errors, sum.Load)
				}
				if o := sum.Overspend; o.Requests != 0 || o.FalseDenies != 0 {
					t.Errorf("overspend %+v: in schedule order at schedule time the check.Checker must agree with every decision", o)
				}
				return res
			}
			orig := run(spec, path).Summary
			replaySpec := *spec
			replaySpec.Trace = &scenarios.TraceCfg{File: path, Speed: 1}
			replaySpec.Tenants.Count = 0 // the trace names them
			replaySpec.Load.Rate = 0
			if err := replaySpec.Validate(); err != nil {
				t.Fatal(err)
			}
			rep := run(&replaySpec, "").Summary
			if rep.Outcomes != orig.Outcomes {
				t.Errorf("replay outcomes %+v, the recorded run's %+v: want them equal", rep.Outcomes, orig.Outcomes)
			}
			if rep.Outcomes.Allowed == 0 || rep.Outcomes.Denied == 0 {
				t.Errorf("outcomes %+v: want both allowed and denied, or the comparison shows little", rep.Outcomes)
			}
			if !strings.Contains(rep.Load.Note, "replay of "+path) {
				t.Errorf("note %q does not name the replayed trace", rep.Load.Note)
			}
		})
	}
}

// A replay at speed 2 sends the same requests in half the time.
func TestReplaySpeed(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "memory", 1000, 4*time.Second)
	path := filepath.Join(t.TempDir(), "run.trace")
	if _, err := Run(context.Background(), spec, Options{Out: t.TempDir(), RecordTrace: path}); err != nil {
		t.Fatal(err)
	}
	fast := *spec
	fast.Trace = &scenarios.TraceCfg{File: path, Speed: 2}
	res, err := Run(context.Background(), &fast, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Load.Sent+s.Load.Dropped != 4000 {
		t.Errorf("offered %d, want the trace's 4000", s.Load.Sent+s.Load.Dropped)
	}
	if s.DurationS != 2 {
		t.Errorf("duration %v s, want the trace's 4 s at speed 2", s.DurationS)
	}
}

func TestReplayRefusesBadTraces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, tr *trace.Trace) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := trace.Write(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	other := write("other.trace", &trace.Trace{Header: trace.Header{TenantPrefix: "t", Endpoints: []string{"search"}},
		Requests: []trace.Request{{At: time.Millisecond, Cost: 1}}})
	big := write("big.trace", &trace.Trace{Header: trace.Header{TenantPrefix: "t", Endpoints: []string{"read"}},
		Requests: []trace.Request{{At: time.Millisecond, Cost: 70000}}})
	cut := filepath.Join(dir, "cut.trace")
	data, _ := os.ReadFile(big)
	if err := os.WriteFile(cut, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{other, `endpoints "search" are not in the scenario's endpoints [read write]`},
		{big, "costs 70000 tokens"},
		{cut, "ratelab trace info"},
		{filepath.Join(dir, "missing.trace"), "no such file"},
	} {
		spec := testSpec(t, "memory", 100, time.Second)
		spec.Trace = &scenarios.TraceCfg{File: tc.file, Speed: 1}
		_, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Run = %v, want an error containing %q", filepath.Base(tc.file), err, tc.want)
		}
	}
}

// A trace that fills a fractional window replays over that window: 1,500 requests at 1,000/s
// (offsets 0..1.499 s) offer 1,000/s over 1.5 s, not 750/s over two whole seconds.
func TestReplayFractionalWindow(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "noop", 1000, 1500*time.Millisecond)
	keys, mix, names, err := traffic(spec)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := trace.Generate(trace.GenOptions{Rate: 1000, Duration: 1500 * time.Millisecond, Seed: 1, Keys: keys, Mix: mix, Endpoints: names})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "frac.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Write(f, gen); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		speed      float64
		wantRate   float64
		wantWindow float64
	}{{1, 1000, 1.5}, {2, 2000, 0.75}} {
		s := *spec
		s.Trace = &scenarios.TraceCfg{File: path, Speed: tc.speed}
		s.Tenants.Count = 0
		res, err := Run(context.Background(), &s, Options{Out: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		l := res.Summary.Load
		if l.Offered != 1500 || res.Summary.DurationS != tc.wantWindow || l.OfferedRPS < tc.wantRate-0.01 || l.OfferedRPS > tc.wantRate+0.01 {
			t.Errorf("speed %v: offered %d over %v s at %.3f/s; want 1500 over %v s at %v/s",
				tc.speed, l.Offered, res.Summary.DurationS, l.OfferedRPS, tc.wantWindow, tc.wantRate)
		}
	}
}
