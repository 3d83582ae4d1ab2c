package check

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"ratelab/limiter"
)

// TestOneEarlyTokenIsCountedOnce: a limiter whose bucket runs a sliver ahead of the envelope (a
// float clock's drift, a decision judged a little late) lets one request through just before
// the envelope's token is whole, then keeps its key empty, refusing every request it has no
// token for. That is one overspend. N and D never debit the overspent request, so they hold
// nearly a token more than the limiter from then on, and judged by them alone a refusal in which
// the limiter had a part of a token is a false deny that no allowed request explains (on a hot
// key in the wild: dozens per overspend). The allowed stream as it happened (E) holds what the
// limiter holds: no false deny.
func TestOneEarlyTokenIsCountedOnce(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 50, Burst: 10} // one token per 20 ms
	c := NewBucket(1, func(int) limiter.BucketPolicy { return p })
	c.SetReorderWindow(200, nil)
	ms := int64(1_000_000)
	c.Observe(0, ms, 10, true, limiter.Central) // the full bucket's tokens
	// The limiter's token is whole at +19 ms (its clock 1 ms ahead); the envelope's at +20.
	for i := range 50 {
		t0 := ms + int64(i)*20
		if v := c.Observe(0, t0+19, 1, true, limiter.Central); i == 0 && v != Overspend {
			t.Fatalf("the early request: verdict %v, want overspend", v)
		}
		c.Observe(0, t0+25, 1, false, limiter.Central) // the limiter has 0.3 of a token
		c.Observe(0, t0+32, 1, false, limiter.Central) // 0.65
	}
	got := c.Totals()
	if got.OverspendRequests != 1 || got.FalseDenies != 0 || got.PossibleFalseDenies != 0 {
		t.Errorf("overspend %d, false denies %d (possible %d) of %d denials: want the early token counted once, as one overspend",
			got.OverspendRequests, got.FalseDenies, got.PossibleFalseDenies, got.Denied)
	}
}

// TestTokenBucketVerdictsAreTheScripts: the ms-native token bucket is judged with its own
// arithmetic, bit for bit: decisions of the in-memory twin (the Lua script's arithmetic, with
// fractional refills, mixed costs, repeated and stale milliseconds) observed in its order come
// out conforming when allowed and denied when denied, with no overspend and no false deny, on a
// rate whose per-ms refill is inexact in binary. Any tolerance, rounding or gate that moves a
// verdict of the ms-native kinds fails it.
func TestTokenBucketVerdictsAreTheScripts(t *testing.T) {
	t.Parallel()
	for _, p := range []limiter.BucketPolicy{{Rate: 50, Burst: 5}, {Rate: 30, Burst: 1}, {Rate: 1000.0 / 3, Burst: 7}} {
		t.Run(fmt.Sprintf("%v/s burst %d", p.Rate, p.Burst), func(t *testing.T) {
			t.Parallel()
			tb, err := limiter.NewTokenBucket(p)
			if err != nil {
				t.Fatal(err)
			}
			const keys = 4
			c := NewBucket(keys, func(int) limiter.BucketPolicy { return p })
			r := rand.New(rand.NewPCG(43, 1))
			now := [keys]int64{}
			var allowed, denied int64
			for i := range 20_000 {
				k := r.IntN(keys)
				now[k] = 1_767_000_000_000 + int64(i)*3/keys + r.Int64N(4) // stale ms now and then
				cost := r.Int64N(4)
				d := tb.AllowAt(fmt.Sprintf("k%d", k), now[k], cost)
				want := Denied
				if d.Allowed {
					want, allowed = Conforming, allowed+1
				} else {
					denied++
				}
				if v := c.Observe(k, now[k], cost, d.Allowed, limiter.Central); v != want {
					t.Fatalf("decision %d (key %d at %d ms, cost %d): verdict %v, want %v", i, k, now[k], cost, v, want)
				}
			}
			got := c.Totals()
			if got.Allowed != allowed || got.Denied != denied || got.OverspendRequests != 0 || got.FalseDenies != 0 || got.PossibleFalseDenies != 0 || denied == 0 {
				t.Errorf("totals %+v: want %d allowed, %d denied, nothing else", got, allowed, denied)
			}
		})
	}
}
