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

// propertyOps is the number of random requests per policy; each goes to both implementations.
const propertyOps = 2500

// TestPropertyTwinMatchesRedis applies seeded random request sequences (many keys, costs from 0
// to twice the burst, time steps forwards, backwards and over long gaps, fractional rates) to the
// in-memory twin and to the Lua script on a real Redis in the same order. Every decision and,
// at the end, every key's stored state must be identical to the bit.
func TestPropertyTwinMatchesRedis(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	policies := []limiter.BucketPolicy{
		{Rate: 500, Burst: 10},              // 0.5 token/ms: exact in binary
		{Rate: 7, Burst: 3},                 // 0.007/ms: inexact
		{Rate: 0.37, Burst: 5},              // slower than one token per second
		{Rate: 1234.5, Burst: 100},          // fast, large burst
		{Rate: 1000.0 / 3, Burst: 1},        // 1/3 token per ms, burst 1
		{Rate: 10_000.0 / 86_400, Burst: 7}, // a daily quota's rate
	}
	for i, p := range policies {
		t.Run(fmt.Sprintf("rate %v burst %d", p.Rate, p.Burst), func(t *testing.T) {
			t.Parallel()
			checkSameDecisions(t, c, uint64(i+1), p, nil)
		})
	}
	t.Run("policy per endpoint", func(t *testing.T) {
		t.Parallel()
		byEndpoint := func(_, endpoint string) limiter.BucketPolicy {
			return policies[int(endpoint[0]-'a')%len(policies)]
		}
		checkSameDecisions(t, c, 99, policies[0], byEndpoint)
	})
}

// checkSameDecisions runs one seeded sequence against a fresh twin and a fresh Redis bucket.
func checkSameDecisions(t *testing.T, c *redis.ClusterClient, seed uint64, p limiter.BucketPolicy, policyFor limiter.PolicyFunc) {
	var opts []limiter.Option
	if policyFor != nil {
		opts = append(opts, limiter.WithPolicyFunc(policyFor))
	}
	twin, err := limiter.NewTokenBucket(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	central, err := limiter.NewRedisTokenBucket(c, p, append(opts, limiter.WithTimeout(5*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	tenants := []string{uniqueTenant(t), uniqueTenant(t), uniqueTenant(t)}
	endpoints := []string{"a", "b", "c", "d", "e", "f", "g"}
	ctx := context.Background()
	now := t0
	allowed := 0
	for op := range propertyOps {
		now += randomStep(rng)
		r := limiter.Request{
			Tenant:   tenants[rng.IntN(len(tenants))],
			Endpoint: endpoints[rng.IntN(len(endpoints))],
			Cost:     randomCost(rng, p.Burst),
			Now:      time.UnixMilli(now),
		}
		have, err1 := twin.Allow(ctx, r)
		want, err2 := central.Allow(ctx, r)
		if err1 != nil || err2 != nil {
			t.Fatalf("seed %d op %d %+v: twin error %v, redis error %v", seed, op, r, err1, err2)
		}
		have.Source, want.Source = 0, 0 // Local vs Central: the only intended difference
		if have != want {
			t.Fatalf("seed %d op %d (t0%+d ms) %s/%s cost %d: twin %+v, redis %+v",
				seed, op, now-t0, r.Tenant, r.Endpoint, r.Cost, have, want)
		}
		if have.Allowed {
			allowed++
		}
	}
	// A sequence that never allows or never denies would prove little.
	if allowed == 0 || allowed == propertyOps {
		t.Fatalf("seed %d: %d of %d requests allowed: the sequence does not exercise both outcomes", seed, allowed, propertyOps)
	}
	for _, tenant := range tenants {
		for _, ep := range endpoints {
			key := limiter.KeyFor(tenant, ep)
			have, ok1 := twin.State(key)
			want, ok2 := redisState(t, c, key)
			if ok1 != ok2 || have != want {
				t.Errorf("seed %d key %s: twin state %+v (exists %v), redis state %+v (exists %v)", seed, key, have, ok1, want, ok2)
			}
		}
	}
	t.Logf("seed %d: %d requests, %d allowed, identical decisions and states", seed, propertyOps, allowed)
}

// randomStep moves the gateway clock: mostly small steps, sometimes none, sometimes backwards
// (a skewed gateway), sometimes a long gap (hours to a month).
func randomStep(rng *rand.Rand) int64 {
	switch x := rng.IntN(100); {
	case x < 10:
		return 0
	case x < 70:
		return rng.Int64N(20)
	case x < 82:
		return -1 - rng.Int64N(5_000)
	case x < 95:
		return 100 + rng.Int64N(5_000)
	default:
		return 3_600_000 + rng.Int64N(30*86_400_000)
	}
}

// randomCost is mostly 1, sometimes 0, up to the burst, the burst itself or beyond it.
func randomCost(rng *rand.Rand, burst int64) int64 {
	switch x := rng.IntN(100); {
	case x < 5:
		return 0
	case x < 60:
		return 1
	case x < 85:
		return 1 + rng.Int64N(burst)
	case x < 90:
		return burst
	default:
		return burst + 1 + rng.Int64N(burst+1)
	}
}
