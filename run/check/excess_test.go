package check

import (
	"math"
	"testing"

	"ratelab/limiter"
)

// TestBurstExcessDoesNotAccumulate: a lease-like stream — a key allowed burst+9 tokens at once,
// then idle long enough for the bucket to refill, again and again. The cumulative overspend
// grows by 9 with each episode; the burst excess (how far beyond the burst the stream ever
// went) stays 9.
func TestBurstExcessDoesNotAccumulate(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 10, Burst: 20} // full again 2 s after empty
	c := NewBucket(3, func(int) limiter.BucketPolicy { return p })
	const key = 2
	for ep := int64(1); ep <= 5; ep++ {
		at := 1_767_000_000_000 + ep*5000 // 5 s apart
		for range p.Burst + 9 {
			c.Observe(key, at, 1, true, limiter.Lease)
		}
		tot := c.Totals()
		if tot.OverspendRequests != 9*ep {
			t.Errorf("episode %d: overspend %d, want %d (it accumulates)", ep, tot.OverspendRequests, 9*ep)
		}
		if tot.BurstExcess != 9 || tot.WorstKey != key || tot.WorstExcess != 9 {
			t.Errorf("episode %d: burst excess %v, worst key %d with %v; want 9, key %d with 9 (it does not accumulate)",
				ep, tot.BurstExcess, tot.WorstKey, tot.WorstExcess, key)
		}
	}
}

func TestBurstExcess(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 10, Burst: 20} // one token per 100 ms
	const t0 = 1_767_000_000_000
	type obs struct {
		key      int
		ms, cost int64
		allowed  bool
		unknown  bool
	}
	burst := func(key int, at, n int64) []obs {
		var o []obs
		for range n {
			o = append(o, obs{key: key, ms: at, cost: 1, allowed: true})
		}
		return o
	}
	tests := []struct {
		name     string
		obs      []obs
		excess   float64
		worstKey int
		worst    float64
	}{
		{"no observation", nil, 0, -1, 0},
		// The full burst, then exactly the refill rate for 10 s: conforms to (10, 20) exactly.
		{"a stream that conforms exactly", func() []obs {
			o := burst(0, t0, 20)
			for i := int64(1); i <= 100; i++ {
				o = append(o, obs{key: 0, ms: t0 + 100*i, cost: 1, allowed: true})
			}
			return o
		}(), 0, -1, 0},
		{"k beyond the burst at once", burst(1, t0, 20+7), 7, 1, 7},
		{"one request of cost burst+k", []obs{{key: 1, ms: t0, cost: 25, allowed: true}}, 5, 1, 5},
		// Denied requests take nothing; unknown outcomes are debited (an upper bound).
		{"denials do not count, unknown outcomes do", append(burst(0, t0, 20),
			obs{key: 0, ms: t0, cost: 3}, obs{key: 0, ms: t0, cost: 2, unknown: true}), 2, 0, 2},
		// 30 at once is 10 beyond; 250 ms later 2.5 tokens are back and 5 more go 12.5 deep.
		{"the deepest deficit, refill included", append(burst(0, t0, 30), burst(0, t0+250, 5)...), 12.5, 0, 12.5},
		// Sum over keys, the worst one named.
		{"sum over keys", append(append(burst(0, t0, 23), burst(1, t0, 26)...), burst(2, t0, 20)...), 9, 1, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, mk := range []struct {
				name string
				c    Checker
			}{
				{"bucket", NewBucket(3, func(int) limiter.BucketPolicy { return p })},
				// Three tenants of one endpoint, a quota nothing here reaches: the bucket tier.
				{"two-tier", NewTwoTier(3, 1, p, 1000, 60_000)},
			} {
				for _, o := range tt.obs {
					if o.unknown {
						mk.c.ObserveUnknown(o.key, o.ms, o.cost, true)
					} else {
						mk.c.ObserveAs(o.key, o.ms, o.cost, o.allowed, 0)
					}
				}
				tot := mk.c.Totals()
				if math.Abs(tot.BurstExcess-tt.excess) > 1e-9 || tot.WorstKey != tt.worstKey || math.Abs(tot.WorstExcess-tt.worst) > 1e-9 {
					t.Errorf("%s: burst excess %v, worst key %d with %v; want %v, key %d with %v",
						mk.name, tot.BurstExcess, tot.WorstKey, tot.WorstExcess, tt.excess, tt.worstKey, tt.worst)
				}
			}
		})
	}
}

// TestBurstExcessTwoTierCountsQuotaOverspend: an allowed request beyond the quota is not debited
// by the bucket tier's exact buckets, but it went through: the burst excess counts it.
func TestBurstExcessTwoTierCountsQuotaOverspend(t *testing.T) {
	t.Parallel()
	c := NewTwoTier(1, 1, limiter.BucketPolicy{Rate: 1, Burst: 5}, 3, 60_000)
	for range 7 {
		c.ObserveAs(0, 6_000_000, 1, true, 0)
	}
	tot := c.Totals()
	if tot.OverspendRequests != 4 || tot.BurstExcess != 2 || tot.WorstKey != 0 {
		t.Errorf("totals %+v: want 4 overspend (beyond the quota of 3), burst excess 2 (7 allowed, burst 5) on key 0", tot)
	}
}

func TestBurstExcessWindowIsZero(t *testing.T) {
	t.Parallel()
	c := NewWindow(1, 3, 1000)
	for range 10 {
		c.ObserveAs(0, 1000, 1, true, 0)
	}
	if tot := c.Totals(); tot.OverspendRequests != 7 || tot.BurstExcess != 0 || tot.WorstKey != -1 {
		t.Errorf("totals %+v: want 7 overspend, no burst excess, worst key -1", tot)
	}
}

// TestExcessLeavesOutUnknownsThatNeverPassed: a timed-out request the caller saw fail was never
// let through, so the burst excess — a measure of the allowed stream — leaves it out, while a
// black-box target's timeout may have been an allowance and counts. Both are unknown outcomes.
func TestExcessLeavesOutUnknownsThatNeverPassed(t *testing.T) {
	t.Parallel()
	for _, passed := range []bool{false, true} {
		c := NewBucket(1, func(int) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 1, Burst: 2} })
		for range 5 {
			c.ObserveUnknown(0, 1000, 1, passed)
		}
		c.ObserveAs(0, 1000, 1, true, Cause(limiter.Central))
		tot := c.Totals()
		want := 0.0
		if passed {
			want = 4 // 6 tokens debited on a burst of 2
		}
		if tot.BurstExcess != want || tot.Unknown != 5 {
			t.Errorf("passed %v: burst excess %v, unknown %d; want %v and 5", passed, tot.BurstExcess, tot.Unknown, want)
		}
	}
}
