package limiter_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
)

// TestLeaseOutstandingMax runs fetches, spends, expiries and a drop whose peak of tokens held in
// leases is known, and checks OutstandingMax after every step: it rises only at a grant, a lease
// no request touches again leaves the count when the clock passes its expiry (B at t0+100 ms:
// counting its 7 tokens would make the peak of step 5 26), and leftovers join the new lease.
// The running count must also equal Outstanding, the scan, after every step.
func TestLeaseOutstandingMax(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	// The central bucket never refuses: every fetch is granted in full.
	l := newLease(t, c, limiter.BucketPolicy{Rate: 1000, Burst: 1000}, 10, limiter.WithLeaseTTL(100*time.Millisecond))
	tenant := uniqueTenant(t)
	ctx := context.Background()
	for i, st := range []struct {
		ep             string // "" is a Drop
		at, cost       int64
		wantHeld, want int64
	}{
		{"a", 0, 1, 9, 10},     // A fetches 10, spends 1
		{"b", 0, 3, 16, 19},    // B fetches 10: 9 + 10 held at once
		{"a", 50, 9, 7, 19},    // A spends its lease
		{"a", 50, 1, 16, 19},   // A fetches 10 more (its lease now ends at 150), 7 + 10 at once
		{"c", 100, 1, 18, 19},  // B's 7 expired at 100: 9 + 10 at once, not 26
		{"c", 100, 15, 13, 28}, // C lacks 6: fetches 10, its 9 left join them, 9 + 19 at once
		{"", 110, 0, 0, 28},    // Drop: all lost
		{"d", 120, 1, 9, 28},
		{"d", 300, 1, 9, 28}, // D's lease expired at 220: it fetches again, 10 at once
	} {
		if st.ep == "" {
			l.Drop()
		} else {
			d, err := l.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: st.ep, Cost: st.cost, Now: time.UnixMilli(t0 + st.at)})
			if err != nil || !d.Allowed {
				t.Fatalf("step %d (%s at t0%+d ms, cost %d): %+v, %v; want allowed", i, st.ep, st.at, st.cost, d, err)
			}
		}
		out, held, most := l.Outstanding(), l.HeldTokens(), l.OutstandingMax()
		if out != st.wantHeld || held != out || most != st.want {
			t.Fatalf("step %d (%q at t0%+d ms, cost %d): Outstanding %d, held count %d, OutstandingMax %d; want %d, %d, %d",
				i, st.ep, st.at, st.cost, out, held, most, st.wantHeld, st.wantHeld, st.want)
		}
	}
	// Per key: A's two leases of 10 never overlap, C's 9 left joined its second grant of 10,
	// and D's lease that expired unused and its second one never overlap either.
	perKey := map[string]int64{}
	l.KeyOutstandingMax(func(key string, most int64) { perKey[key] = most })
	want := map[string]int64{}
	for ep, n := range map[string]int64{"a": 10, "b": 10, "c": 19, "d": 10} {
		want[limiter.KeyFor(tenant, ep)] = n
	}
	if !maps.Equal(perKey, want) {
		t.Fatalf("KeyOutstandingMax: %v; want %v", perKey, want)
	}
}

// TestLeaseOutstandingMaxConcurrent runs many goroutines over few keys with a moving clock,
// refresh-ahead on: at rest the running count equals the scan, and the peak is at least what
// is held at the end and at most every key's full lease at once.
func TestLeaseOutstandingMaxConcurrent(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	const keys, size = 8, 20
	l := newLease(t, c, limiter.BucketPolicy{Rate: 1e5, Burst: 1e5}, size,
		limiter.WithLeaseTTL(20*time.Millisecond), limiter.WithLeaseRefresh(0.25))
	tenant := uniqueTenant(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 300 {
				ep := strconv.Itoa(rng.IntN(keys))
				now := time.UnixMilli(t0 + int64(i)/3 + int64(rng.IntN(3)))
				if _, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: ep, Cost: 1 + rng.Int64N(3), Now: now}); err != nil {
					t.Errorf("goroutine %d request %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	l.WaitRefreshes()
	out, held, most := l.Outstanding(), l.HeldTokens(), l.OutstandingMax()
	if held != out || most < out || most > keys*size || most == 0 {
		t.Fatalf("at rest: Outstanding %d, held count %d, OutstandingMax %d; want count = Outstanding <= max <= %d", out, held, most, keys*size)
	}
	// A key's lease holds at most a full lease plus the tokens a request for 3 found short
	// (2); the keys' peaks together are at least the peak of all of them at once.
	var sum int64
	n := 0
	l.KeyOutstandingMax(func(key string, m int64) {
		n++
		sum += m
		if m < 1 || m > size+2 || m > most {
			t.Errorf("KeyOutstandingMax %s: %d; want 1..%d and at most OutstandingMax %d", key, m, size+2, most)
		}
	})
	if n != keys || sum < most {
		t.Fatalf("KeyOutstandingMax: %d keys summing to %d; want %d keys, at least OutstandingMax %d", n, sum, keys, most)
	}
}
