package limiter_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"ratelab/limiter"
)

// benchTierPolicy: 100/s burst 200 per endpoint and 10,000 per day per tenant.
var benchTierPolicy = limiter.TwoTierPolicy{Bucket: limiter.BucketPolicy{Rate: 100, Burst: 200}, Quota: 10_000, QuotaWindow: 24 * time.Hour}

// BenchmarkTwoTierAllowAt measures the in-memory twin on 1024 existing tenants: it must not
// allocate.
func BenchmarkTwoTierAllowAt(b *testing.B) {
	tt, err := limiter.NewTwoTier(benchTierPolicy)
	if err != nil {
		b.Fatal(err)
	}
	tenants := make([]string, 1024)
	for i := range tenants {
		tenants[i] = "bench-" + strconv.Itoa(i)
		tt.AllowAt(tenants[i], "/v1/orders", t0, 1)
	}
	b.ReportAllocs()
	start := time.Now()
	i := 0
	for b.Loop() {
		tt.AllowAt(tenants[i&1023], "/v1/orders", t0+int64(i>>4), 1)
		i++
	}
	reportRate(b, start)
}

// BenchmarkRedisClock compares RedisTokenBucket's two clock contracts, and the two-tier script,
// on the real single-primary cluster with 32 callers (SetParallelism 16 x GOMAXPROCS 2), plain
// EVALSHA round trips. Errors are counted, not fatal, up to 1%.
func BenchmarkRedisClock(b *testing.B) {
	_, c := sharedCluster(b)
	tenants := make([]string, 1024)
	for i := range tenants {
		tenants[i] = "bench-clock-" + strconv.Itoa(i)
	}
	p := limiter.BucketPolicy{Rate: 1e6, Burst: 1e6}
	build := map[string]func() (limiter.Limiter, error){
		"bucket-gateway-clock": func() (limiter.Limiter, error) {
			return limiter.NewRedisTokenBucket(c, p, limiter.WithTimeout(time.Second))
		},
		"bucket-redis-clock": func() (limiter.Limiter, error) {
			return limiter.NewRedisTokenBucket(c, p, limiter.WithTimeout(time.Second), limiter.WithRedisClock())
		},
		"two-tier": func() (limiter.Limiter, error) {
			tp := limiter.TwoTierPolicy{Bucket: p, Quota: 1 << 40, QuotaWindow: 24 * time.Hour}
			return limiter.NewRedisTwoTier(c, tp, limiter.WithTimeout(time.Second))
		},
	}
	for _, name := range []string{"bucket-gateway-clock", "bucket-redis-clock", "two-tier"} {
		b.Run(name, func(b *testing.B) {
			lim, err := build[name]()
			if err != nil {
				b.Fatal(err)
			}
			if l, ok := lim.(interface{ Load(context.Context) error }); !ok || l.Load(context.Background()) != nil {
				b.Fatal("Load failed")
			}
			var seq, errs atomic.Int64
			b.SetParallelism(16)
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				r := limiter.Request{Endpoint: "/v1/orders", Cost: 1}
				i := int(seq.Add(1))
				for pb.Next() {
					r.Tenant = tenants[i%len(tenants)]
					r.Now = time.Now()
					if _, err := lim.Allow(ctx, r); err != nil && errs.Add(1) == 1 {
						b.Logf("first error: %v", err)
					}
					i += 13
				}
			})
			reportRate(b, start)
			if e := errs.Load(); e*100 > int64(b.N) {
				b.Errorf("%d errors in %d decisions (more than 1%%)", e, b.N)
			}
		})
	}
}
