package limiter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// TestTwoTierPropertyTwinMatchesRedis applies seeded random request sequences to TwoTier and to
// two_tier.lua on a real Redis in the same order: every decision and denying tier, and at the
// end every bucket and the quota counts of the last two windows, must be identical.
//
// The clock steps forwards, over long gaps and backwards, but never more than 4 s behind the
// newest time seen: with 10 s quota windows a request then counts in the newest or the previous
// window, the two the twin holds (an older one it forgets, where Redis keeps the key).
func TestTwoTierPropertyTwinMatchesRedis(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	w := 10 * time.Second
	policies := []limiter.TwoTierPolicy{
		{Bucket: limiter.BucketPolicy{Rate: 500, Burst: 10}, Quota: 60, QuotaWindow: w},
		{Bucket: limiter.BucketPolicy{Rate: 7, Burst: 3}, Quota: 12, QuotaWindow: w},
		{Bucket: limiter.BucketPolicy{Rate: 1234.5, Burst: 100}, Quota: 150, QuotaWindow: w},
		{Bucket: limiter.BucketPolicy{Rate: 1000.0 / 3, Burst: 1}, Quota: 1, QuotaWindow: w},
	}
	for i, p := range policies {
		t.Run(fmt.Sprintf("rate %v burst %d quota %d", p.Bucket.Rate, p.Bucket.Burst, p.Quota), func(t *testing.T) {
			t.Parallel()
			checkSameTierDecisions(t, c, uint64(i+1), p)
		})
	}
}

// tierPropertyOps is the number of random requests per policy.
const tierPropertyOps = 2000

func checkSameTierDecisions(t *testing.T, c *redis.ClusterClient, seed uint64, p limiter.TwoTierPolicy) {
	twin, err := limiter.NewTwoTier(p)
	if err != nil {
		t.Fatal(err)
	}
	central, err := limiter.NewRedisTwoTier(c, p, limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7153))
	tenants := []string{uniqueTenant(t), uniqueTenant(t), uniqueTenant(t)}
	endpoints := []string{"a", "b", "c", "d", "e"}
	ctx := context.Background()
	now, newest := t0, t0
	var tiers [3]int // allowed, bucket-denied, quota-denied
	for op := range tierPropertyOps {
		now = max(now+randomStep(rng), newest-4000)
		newest = max(newest, now)
		r := limiter.Request{
			Tenant:   tenants[rng.IntN(len(tenants))],
			Endpoint: endpoints[rng.IntN(len(endpoints))],
			Cost:     randomCost(rng, p.Bucket.Burst),
			Now:      time.UnixMilli(now),
		}
		have, haveTier := twin.AllowTierAt(r.Tenant, r.Endpoint, now, r.Cost)
		want, wantTier, err := central.AllowTier(ctx, r)
		if err != nil {
			t.Fatalf("seed %d op %d %+v: redis error %v", seed, op, r, err)
		}
		have.Source, want.Source = 0, 0 // Local vs Central: the only intended difference
		if have != want || haveTier != wantTier {
			t.Fatalf("seed %d op %d (t0%+d ms) %s/%s cost %d: twin %+v tier %v, redis %+v tier %v",
				seed, op, now-t0, r.Tenant, r.Endpoint, r.Cost, have, haveTier, want, wantTier)
		}
		tiers[haveTier]++
	}
	// A sequence that never reaches one of the outcomes proves little about it.
	if tiers[0] == 0 || tiers[1] == 0 || tiers[2] == 0 {
		t.Fatalf("seed %d: outcomes allowed/bucket/quota = %v: the sequence does not exercise all three", seed, tiers)
	}
	idx := newest / p.QuotaWindow.Milliseconds()
	for _, tenant := range tenants {
		for _, i := range []int64{idx - 1, idx} {
			if have, want := twin.QuotaCount(tenant, i), redisQuota(t, c, tenant, i); have != want {
				t.Errorf("seed %d tenant %s window %d: twin quota %d, redis %d", seed, tenant, i, have, want)
			}
		}
		for _, ep := range endpoints {
			have, ok1 := twin.BucketState(tenant, ep)
			want, ok2 := redisState(t, c, limiter.KeyFor(tenant, ep))
			if ok1 != ok2 || have != want {
				t.Errorf("seed %d %s/%s: twin bucket %+v (exists %v), redis %+v (exists %v)", seed, tenant, ep, have, ok1, want, ok2)
			}
		}
	}
	t.Logf("seed %d: %d requests, allowed/bucket/quota %v, identical decisions and states", seed, tierPropertyOps, tiers)
}
