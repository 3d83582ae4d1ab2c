package check

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"ratelab/limiter"
)

// rangeStep is one observation: allowed or denied, or an unknown outcome (unknown true).
type rangeStep struct {
	ms, cost         int64
	allowed, unknown bool
	want             Verdict // ignored for unknown outcomes
}

// rangeFigures are the Totals figures the range tests pin.
type rangeFigures struct {
	over, possOver, overTok, possOverTok, falseDenies, possFalse, unknown int64
}

func figuresOf(t Totals) rangeFigures {
	return rangeFigures{t.OverspendRequests, t.PossibleOverspendRequests, t.OverspendTokens, t.PossibleOverspendTokens,
		t.FalseDenies, t.PossibleFalseDenies, t.Unknown}
}

// runRange feeds steps to c on key 0 and checks each verdict and the final figures.
func runRange(t *testing.T, c Checker, steps []rangeStep, want rangeFigures) {
	t.Helper()
	for i, s := range steps {
		if s.unknown {
			c.ObserveUnknown(0, s.ms, s.cost, true)
			continue
		}
		if have := c.ObserveAs(0, s.ms, s.cost, s.allowed, Cause(limiter.Central)); have != s.want {
			t.Errorf("step %d %+v: verdict %v, want %v", i, s, have, s.want)
		}
	}
	if have := figuresOf(c.Totals()); have != want {
		t.Errorf("figures %+v, want %+v", have, want)
	}
}

// TestBucketUnknownOutcomeIsARange: a timed-out decision's tokens are debited in D and not in N,
// and each figure is judged on the resolution that makes it least (confirmed) and most
// (possible).
func TestBucketUnknownOutcomeIsARange(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 1, Burst: 2} // 0.001 tokens/ms
	tests := []struct {
		name  string
		steps []rangeStep
		want  rangeFigures
	}{
		{
			// At 1000 the unknown takes both tokens in D. By 2000 N is full (it never lost them:
			// the refill of that second is lost at the cap), D has 1. Three allowed: N pays for
			// two, D for one. Refundable credit kept in one bucket would pay for all three.
			name: "an unknown outcome does not absorb later overspend",
			steps: []rangeStep{{ms: 1000, cost: 2, unknown: true},
				{2000, 1, true, false, Conforming}, {2000, 1, true, false, Conforming}, {2000, 1, true, false, Overspend}},
			want: rangeFigures{over: 1, possOver: 2, overTok: 1, possOverTok: 2, unknown: 1},
		},
		{
			// The unknown ran (D): the limiter rightly denies the third. It did not (N): the
			// denial is false. Confirmed no, possible yes.
			name: "a denial after an unknown outcome is a possible false deny",
			steps: []rangeStep{{1000, 1, true, false, Conforming}, {ms: 1000, cost: 1, unknown: true},
				{1000, 1, false, false, Denied}},
			want: rangeFigures{possFalse: 1, unknown: 1},
		},
		{
			// The unknown did not run (N): the limiter still had a token, the second allowed
			// conforms; had it run (D), that one overspends.
			name: "an allowed request after an unknown outcome is possible overspend",
			steps: []rangeStep{{1000, 1, true, false, Conforming}, {ms: 1000, cost: 1, unknown: true},
				{1000, 1, true, false, Conforming}, {1000, 1, true, false, Overspend}},
			want: rangeFigures{over: 1, possOver: 2, overTok: 1, possOverTok: 2, unknown: 1},
		},
		{
			// D debits an unknown only when it has the tokens (the script allows only then): an
			// unknown on an empty bucket changes nothing once the bucket refills.
			name: "an unknown outcome on an empty bucket is not debited",
			steps: []rangeStep{{1000, 2, true, false, Conforming}, {ms: 1000, cost: 1, unknown: true},
				{2000, 1, true, false, Conforming}, {2000, 1, false, false, Denied}},
			want: rangeFigures{unknown: 1},
		},
		{
			// No unknown outcome: the two resolutions agree on everything.
			name: "without unknown outcomes confirmed equals possible",
			steps: []rangeStep{{1000, 2, true, false, Conforming}, {1000, 1, true, false, Overspend},
				{3000, 1, false, false, FalseDeny}},
			want: rangeFigures{over: 1, possOver: 1, overTok: 1, possOverTok: 1, falseDenies: 1, possFalse: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runRange(t, NewBucket(1, func(int) limiter.BucketPolicy { return p }), tt.steps, tt.want)
		})
	}
}

// TestBucketUnknownOutcomeWithdrawsOnBothResolutions: a provisional false deny is withdrawn on
// each resolution by the allowed request that explains it there — and on D also by an unknown
// outcome, which in D took the token first.
func TestBucketUnknownOutcomeWithdrawsOnBothResolutions(t *testing.T) {
	t.Parallel()
	c := NewBucket(1, func(int) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 1, Burst: 1} })
	var cancelled int64
	c.SetReorderWindow(200, func(_, n int64) { cancelled += n })
	if v := c.ObserveAs(0, 1000, 1, false, 0); v != FalseDeny {
		t.Fatalf("denial with a token in both resolutions: %v, want false deny", v)
	}
	c.ObserveUnknown(0, 1001, 1, true) // D: it took the token; the denial is explained there
	if v := c.ObserveAs(0, 1002, 1, true, 0); v != Conforming {
		t.Fatalf("allowed with the token in N: %v, want conforming", v)
	}
	tot := c.Totals()
	if tot.FalseDenies != 0 || tot.PossibleFalseDenies != 0 || tot.Withdrawn != 1 || cancelled != 1 {
		t.Errorf("totals %+v, cancelled %d: want the denial withdrawn in D (by the unknown outcome, reported) and in N (by the allowed request)",
			tot, cancelled)
	}
	if tot.OverspendRequests != 0 || tot.PossibleOverspendRequests != 1 {
		t.Errorf("totals %+v: want the allowed request possible (D) but not confirmed (N) overspend", tot)
	}
}

func TestTwoTierUnknownOutcomeIsARange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy limiter.BucketPolicy
		quota  int64
		steps  []rangeStep
		want   rangeFigures
	}{
		{
			// The quota tier: one unknown in a quota of 2.
			name: "quota", policy: limiter.BucketPolicy{Rate: 100, Burst: 100}, quota: 2,
			steps: []rangeStep{{6_000_000, 1, true, false, Conforming}, {ms: 6_000_001, cost: 1, unknown: true},
				{6_000_002, 1, true, false, Conforming}, {6_000_003, 1, true, false, Overspend},
				{6_000_004, 1, false, false, Denied}},
			want: rangeFigures{over: 1, possOver: 2, overTok: 1, possOverTok: 2, unknown: 1},
		},
		{
			// The bucket tier, as in TestBucketUnknownOutcomeIsARange.
			name: "bucket", policy: limiter.BucketPolicy{Rate: 1, Burst: 2}, quota: 100,
			steps: []rangeStep{{ms: 6_000_000, cost: 2, unknown: true},
				{6_001_000, 1, true, false, Conforming}, {6_001_000, 1, true, false, Conforming},
				{6_001_000, 1, true, false, Overspend}},
			want: rangeFigures{over: 1, possOver: 2, overTok: 1, possOverTok: 2, unknown: 1},
		},
		{
			// The quota has room in N only: N asks the bucket, which has the token; D's full
			// quota explains the denial.
			name: "a denial the quota explains in D only", policy: limiter.BucketPolicy{Rate: 100, Burst: 100}, quota: 2,
			steps: []rangeStep{{6_000_000, 1, true, false, Conforming}, {ms: 6_000_001, cost: 1, unknown: true},
				{6_000_002, 1, false, false, Denied}},
			want: rangeFigures{possFalse: 1, unknown: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runRange(t, NewTwoTier(1, 1, tt.policy, tt.quota, 60_000), tt.steps, tt.want)
		})
	}
}

func TestWindowUnknownOutcomeIsARange(t *testing.T) {
	t.Parallel()
	// At most 3 per 1000 ms. The unknown at 1100 fills D's window, not N's.
	steps := []rangeStep{{1000, 1, true, false, Conforming}, {1050, 1, true, false, Conforming},
		{ms: 1100, cost: 1, unknown: true}, {1150, 1, true, false, Conforming}, {1200, 1, false, false, Denied},
		{2120, 1, false, false, Denied}}
	// 1150: N has 2 in its window, D 3: possible overspend, recorded in N only. 1200: both
	// full: denied. 2120: the windows holding 2120 have 1150 in N and nothing in D: a false
	// deny in both.
	steps[5].want = FalseDeny
	want := rangeFigures{possOver: 1, possOverTok: 1, falseDenies: 1, possFalse: 1, unknown: 1}
	runRange(t, NewWindow(1, 3, 1000), steps, want)
}

// TestUnknownOutcomeRangesHoldUnderReplay: for random streams with timeouts, confirmed <= possible
// for every figure on every envelope, and without unknown outcomes they are equal.
func TestUnknownOutcomeRangesHoldUnderReplay(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 50, Burst: 5}
	for seed := range uint64(20) {
		for _, mk := range []struct {
			name string
			new  func() Checker
		}{
			{"bucket", func() Checker { return NewBucket(4, func(int) limiter.BucketPolicy { return p }) }},
			{"window", func() Checker { return NewWindow(4, 5, 100) }},
			{"two-tier", func() Checker { return NewTwoTier(2, 2, p, 30, 100) }},
		} {
			for _, unknowns := range []bool{false, true} {
				c := mk.new()
				g := newOSTraffic(t, 4, seed)
				for i := range 3000 {
					key, ms, cost := g.next()
					if i%50 == 0 { // a pause after each burst, so that denials can be false
						g.ms += 200
					}
					switch r := g.r.IntN(10); {
					case unknowns && r == 0:
						c.ObserveUnknown(key, ms, cost, true)
					default:
						c.ObserveAs(key, ms, cost, r < 6, 0)
					}
				}
				tot := c.Totals()
				name := fmt.Sprintf("%s seed %d unknowns %v", mk.name, seed, unknowns)
				if tot.PossibleOverspendRequests < tot.OverspendRequests || tot.PossibleOverspendTokens < tot.OverspendTokens ||
					tot.PossibleFalseDenies < tot.FalseDenies {
					t.Fatalf("%s: %+v: a possible figure below its confirmed one", name, tot)
				}
				if !unknowns && (tot.PossibleOverspendRequests != tot.OverspendRequests ||
					tot.PossibleOverspendTokens != tot.OverspendTokens || tot.PossibleFalseDenies != tot.FalseDenies) {
					t.Fatalf("%s: %+v: without unknown outcomes the figures must agree", name, tot)
				}
				if tot.OverspendRequests == 0 || tot.FalseDenies == 0 {
					t.Fatalf("%s: %+v: the stream should produce overspend and false denies", name, tot)
				}
			}
		}
	}
}

// TestCheckersConcurrentEqualSequential: each envelope, fed by 4 goroutines on disjoint tenants
// (each key's order fixed by its goroutine) with unknown outcomes among the decisions, ends with
// the totals of a sequential replay.
func TestCheckersConcurrentEqualSequential(t *testing.T) {
	t.Parallel()
	const workers, tenants, endpoints = 4, 16, 2
	p := limiter.BucketPolicy{Rate: 50, Burst: 5}
	type ev struct {
		key, kind int // kind 0 denied, 1 allowed, 2 unknown
		ms, cost  int64
	}
	evs := make([][]ev, workers)
	for w := range evs {
		r := rand.New(rand.NewPCG(uint64(w), 3))
		ms := int64(1_767_000_000_000)
		for i := range 4000 {
			ms += r.Int64N(3)
			if i%100 == 0 {
				ms += 300
			}
			tenant := w + workers*r.IntN(tenants/workers)
			evs[w] = append(evs[w], ev{key: tenant*endpoints + r.IntN(endpoints), kind: r.IntN(10) % 3,
				ms: ms - r.Int64N(20), cost: 1 + r.Int64N(2)})
		}
	}
	feed := func(c Checker, list []ev) {
		for _, e := range list {
			if e.kind == 2 {
				c.ObserveUnknown(e.key, e.ms, e.cost, true)
			} else {
				c.ObserveAs(e.key, e.ms, e.cost, e.kind == 1, 0)
			}
		}
	}
	for name, mk := range map[string]func() Checker{
		"bucket":   func() Checker { return NewBucket(tenants*endpoints, func(int) limiter.BucketPolicy { return p }) },
		"window":   func() Checker { return NewWindow(tenants*endpoints, 5, 100) },
		"two-tier": func() Checker { return NewTwoTier(tenants, endpoints, p, 8, 100) },
	} {
		seq := mk()
		for _, list := range evs {
			feed(seq, list)
		}
		par := mk()
		var wg sync.WaitGroup
		for _, list := range evs {
			wg.Go(func() { feed(par, list) })
		}
		wg.Go(func() { par.Totals() }) // a reader racing the writers
		wg.Wait()
		want, have := seq.Totals(), par.Totals()
		if fmt.Sprint(have) != fmt.Sprint(want) {
			t.Errorf("%s: concurrent totals %+v, want the sequential %+v", name, have, want)
		}
		if want.Unknown == 0 || want.PossibleOverspendRequests <= want.OverspendRequests {
			t.Errorf("%s: %+v: the events should produce unknown outcomes and a range of overspend", name, want)
		}
	}
}
