package attack_test

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/run/attack"
	"ratelab/workload"
	"ratelab/workload/trace"
)

// traceTimeKey carries a request's trace time from the handler to the limiter.
type traceTimeKey struct{}

// traceClock decides at the time the request carries (X-Trace-Ms) instead of the wall clock:
// a gateway whose limiter clock follows the trace.
type traceClock struct{ inner limiter.Limiter }

func (c traceClock) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	if ms, ok := ctx.Value(traceTimeKey{}).(int64); ok {
		r.Now = time.UnixMilli(ms)
	}
	return c.inner.Allow(ctx, r)
}

// traceGateway is the gateway's middleware over an in-memory bucket whose clock is the trace's.
func traceGateway(t *testing.T, policy limiter.BucketPolicy) string {
	t.Helper()
	tb, err := limiter.NewTokenBucket(policy)
	if err != nil {
		t.Fatal(err)
	}
	mw := gateway.Middleware(traceClock{tb}, gateway.WithPolicy(policy))(gateway.EchoUpstream())
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ms, err := strconv.ParseInt(r.Header.Get("X-Trace-Ms"), 10, 64); err == nil {
			r = r.WithContext(context.WithValue(r.Context(), traceTimeKey{}, ms))
		}
		mw.ServeHTTP(w, r)
	}))
}

// Replaying one trace twice, at twice its speed, against fresh gateways whose limiter clock
// follows the trace gives exactly the same allowed and denied counts — tenant order is kept,
// so each key sees the same requests at the same times — and the envelope, judging at the
// same times, finds neither overspend nor false denies.
func TestReplayIsExact(t *testing.T) {
	t.Parallel()
	keys, err := workload.NewZipf(20, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Generate(trace.GenOptions{Rate: 300, Duration: 2 * time.Second, Pacer: "poisson", Seed: 11, Keys: keys,
		Start: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	policy := limiter.BucketPolicy{Rate: 10, Burst: 5}
	var counts [2][2]int64
	for i := range counts {
		res, err := attack.Attack(context.Background(), attack.Options{
			URL: traceGateway(t, policy), Trace: tr, Speed: 2, TimeHeader: "X-Trace-Ms",
			Policy: policy, Out: t.TempDir(), Timeout: 30 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Load.Completed != int64(len(tr.Requests)) || s.Outcomes.Errors != 0 {
			t.Fatalf("replay %d: %d decisions, %d errors; want all %d requests answered", i, s.Load.Completed, s.Outcomes.Errors, len(tr.Requests))
		}
		if s.Overspend.Requests != 0 || s.Overspend.FalseDenies != 0 {
			t.Errorf("replay %d: overspend %d, false denies %d; the envelope judges at the limiter's own times, want 0 and 0",
				i, s.Overspend.Requests, s.Overspend.FalseDenies)
		}
		// At speed 2 the schedule spans half the trace: its rows are the seconds of that half.
		if rows := readRows(t, res.Dir); len(rows) != int(tr.Duration()/2/time.Second)+1 {
			t.Errorf("replay %d: %d timeseries rows for a %v trace at speed 2", i, len(rows), tr.Duration())
		}
		counts[i] = [2]int64{s.Outcomes.Allowed, s.Outcomes.Denied}
	}
	if counts[0] != counts[1] {
		t.Errorf("allowed/denied: first replay %v, second %v; want the same", counts[0], counts[1])
	}
	if counts[0][0] == 0 || counts[0][1] == 0 {
		t.Errorf("allowed/denied %v: want both, or the test shows nothing", counts[0])
	}
	t.Logf("%d requests, allowed/denied %v in both replays", len(tr.Requests), counts[0])
}

// A schedule over a fractional window offers its rate over that window: 1,500 requests at
// 1,000/s fill 1.5 s, whether the attack generates them or replays them from a file (which keeps
// no window), at any speed.
func TestAttackFractionalWindow(t *testing.T) {
	t.Parallel()
	url := startGateway(t, limiter.Noop{})
	keys, err := workload.NewZipf(10, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := trace.Generate(trace.GenOptions{Rate: 1000, Duration: 1500 * time.Millisecond, Seed: 1, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := trace.Write(&buf, gen); err != nil {
		t.Fatal(err)
	}
	file, err := trace.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		o          attack.Options
		wantRate   float64
		wantWindow time.Duration
	}{
		{"generated", attack.Options{Rate: 1000, Duration: 1500 * time.Millisecond, Tenants: 10, Seed: 1}, 1000, 1500 * time.Millisecond},
		{"file", attack.Options{Trace: file, NoTenantOrder: true}, 1000, 1500 * time.Millisecond},
		{"file at speed 2", attack.Options{Trace: file, Speed: 2, NoTenantOrder: true}, 2000, 750 * time.Millisecond},
	} {
		o := tc.o
		o.URL, o.Out, o.Timeout = url, t.TempDir(), 20*time.Second
		o.Policy = limiter.BucketPolicy{Rate: 1000, Burst: 1000}
		res, err := attack.Attack(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		l := res.Summary.Load
		if l.Offered != 1500 || l.OfferedRPS < tc.wantRate-0.01 || l.OfferedRPS > tc.wantRate+0.01 {
			t.Errorf("%s: offered %d at %.3f/s; want 1500 at %v/s over %v", tc.name, l.Offered, l.OfferedRPS, tc.wantRate, tc.wantWindow)
		}
	}
}
