package engine

import (
	"context"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/limiter"
	"ratelab/scenarios"
)

// parkLimiter parks every decision for delay and then allows it from a timer's goroutine, as
// the lease limiter parks a request on a fetch: pure logic standing in for a slow store. It
// counts the decisions parked at once.
type parkLimiter struct {
	delay            time.Duration
	parked, mostSeen atomic.Int64
	answers          atomic.Int64
}

func (p *parkLimiter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	panic("parkLimiter: the engine must use AllowAsync")
}

func (p *parkLimiter) AllowAsync(ctx context.Context, r limiter.Request, done limiter.Deferred) (limiter.Decision, bool, error) {
	n := p.parked.Add(1)
	for {
		most := p.mostSeen.Load()
		if n <= most || p.mostSeen.CompareAndSwap(most, n) {
			break
		}
	}
	time.AfterFunc(p.delay, func() {
		p.parked.Add(-1)
		p.answers.Add(1)
		done.Decided(limiter.Decision{Allowed: true, Source: limiter.Local, At: r.Now}, nil)
	})
	return limiter.Decision{}, true, nil
}

// TestDriverParkedDecisions: with a limiter that parks every decision for 20 ms, one worker
// keeps up with 1000 requests/s (it would serve 50/s waiting for each), every sent request is
// decided exactly once, and each one's latency runs from its intended start through its park.
// With max_inflight 8 the parked decisions fill the bound: at most 8 are parked at once and
// the rest of the offered load is dropped at the bound, counted.
func TestDriverParkedDecisions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name              string
		maxInflight       int
		minSent, maxSent  int64
		wantMostParkedMax int64
	}{
		{"under the bound", 256, 1990, 2000, 256},
		// 8 parked for 20 ms each: at most 400 decisions/s of the 1000 offered.
		{"at the bound", 8, 200, 900, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := testSpec(t, "noop", 1000, 2*time.Second)
			spec.Load.Concurrency, spec.Load.MaxInflight = 1, tt.maxInflight
			lim := &parkLimiter{delay: 20 * time.Millisecond}
			d, rows, total := runDriver(t, spec, lim, context.Background())
			var offered, sent, dropped int64
			for _, r := range rows {
				offered += r.Offered
				sent += r.Sent
				dropped += r.Dropped
			}
			if offered != 2000 || sent+dropped != offered {
				t.Fatalf("offered %d sent %d dropped %d, want 2000 = sent + dropped", offered, sent, dropped)
			}
			if sent < tt.minSent || sent > tt.maxSent {
				t.Errorf("sent %d, want %d..%d", sent, tt.minSent, tt.maxSent)
			}
			if a := lim.answers.Load(); total.allowed != sent || a != sent {
				t.Errorf("allowed %d, limiter answers %d, sent %d: every sent request must be decided exactly once", total.allowed, a, sent)
			}
			if n := d.inflight.Load(); n != 0 {
				t.Errorf("in flight at the end: %d, want 0", n)
			}
			if most := lim.mostSeen.Load(); most > tt.wantMostParkedMax {
				t.Errorf("at most %d decisions parked at once, want <= %d: parked decisions count against max_inflight", most, tt.wantMostParkedMax)
			}
			if p50 := total.hist.QuantileMs(50); p50 < 20 {
				t.Errorf("p50 = %.3f ms, want >= 20 ms: a parked decision's latency runs from its intended start to its answer", p50)
			}
		})
	}
}

// TestEngineLeaseParksOnARealCluster runs the lease limiter, which parks the requests its lease
// cannot pay, on a real cluster: every sent request ends in exactly one outcome, in the rows and
// the totals, and some decisions did wait for a fetch.
func TestEngineLeaseParksOnARealCluster(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: cluster.NoReplicas})
	state := filepath.Join(t.TempDir(), "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t, scenarios.KindLease, 2000, 3*time.Second)
	spec.Cluster.Provider = "running"
	spec.Load.Concurrency = 4
	spec.Limiter.Timeout = scenarios.Duration(time.Second) // decisions, not timeouts, are checked
	spec.Limiter.Lease = &scenarios.LeaseCfg{Size: 10, Gateways: 2, TTL: scenarios.Duration(time.Second)}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	if sum.Outcomes.Errors != 0 || sum.Outcomes.Allowed == 0 || sum.Outcomes.Denied == 0 {
		t.Errorf("outcomes %+v: want allowed and denied, no errors", sum.Outcomes)
	}
	if sum.Load.Sent != sum.Load.Completed || sum.Load.Sent < 5900 {
		t.Errorf("sent %d, decisions %d: want the ~6000 offered all sent and decided", sum.Load.Sent, sum.Load.Completed)
	}
	m := regexp.MustCompile(`; (\d+) decisions \([0-9.]+%\) waited for a lease fetch`).FindStringSubmatch(sum.Load.Note)
	if m == nil || m[1] == "0" {
		t.Errorf("note %q: want some decisions that waited for a fetch (the parked path)", sum.Load.Note)
	}
}
