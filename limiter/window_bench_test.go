package limiter_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"ratelab/limiter"
)

// winBenchLimiters builds each window algorithm's twin or Redis limiter with a generous policy.
func winBenchLimiters(b *testing.B, central bool) map[string]limiter.Limiter {
	b.Helper()
	fw := limiter.FixedWindowPolicy{Window: time.Second, Limit: 1 << 40}
	gc := limiter.GCRAPolicy{Rate: 1e6, Burst: 1e6}
	sw := limiter.SlidingWindowPolicy{Window: time.Second, Limit: 1 << 40}
	sl := limiter.SlidingLogPolicy{Window: 100 * ms, Limit: 1000}
	var (
		ls  = map[string]limiter.Limiter{}
		err error
		l   limiter.Limiter
	)
	must := func(name string) {
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		ls[name] = l
	}
	if !central {
		l, err = limiter.NewFixedWindow(fw)
		must("fixed-window")
		l, err = limiter.NewGCRA(gc)
		must("gcra")
		l, err = limiter.NewSlidingWindow(sw)
		must("sliding-window")
		l, err = limiter.NewSlidingLog(sl)
		must("sliding-log")
		return ls
	}
	_, c := sharedCluster(b)
	opt := limiter.WithTimeout(time.Second)
	l, err = limiter.NewRedisFixedWindow(c, fw, opt)
	must("fixed-window")
	l, err = limiter.NewRedisGCRA(c, gc, opt)
	must("gcra")
	l, err = limiter.NewRedisSlidingWindow(c, sw, opt)
	must("sliding-window")
	l, err = limiter.NewRedisSlidingLog(c, sl, opt)
	must("sliding-log")
	return ls
}

// BenchmarkWindowTwinAllow measures the twins' Allow (key built on the stack) over 1024 tenants.
func BenchmarkWindowTwinAllow(b *testing.B) {
	tenants := make([]string, 1024)
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
	}
	for _, name := range []string{"fixed-window", "gcra", "sliding-window", "sliding-log"} {
		b.Run(name, func(b *testing.B) {
			lim := winBenchLimiters(b, false)[name]
			ctx := context.Background()
			r := limiter.Request{Endpoint: "/v1/orders", Cost: 1}
			b.ReportAllocs()
			start := time.Now()
			i := 0
			for b.Loop() {
				r.Tenant = tenants[i&1023]
				r.Now = time.UnixMilli(t0 + int64(i>>4))
				if _, err := lim.Allow(ctx, r); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportRate(b, start)
		})
	}
}

// BenchmarkRedisWindow measures central decisions per second of each window script on the real
// single-primary cluster with 32 callers (SetParallelism 16 x GOMAXPROCS 2), plain EVALSHA
// round trips. Errors are counted, not fatal, up to 1%.
func BenchmarkRedisWindow(b *testing.B) {
	sharedCluster(b) // start the cluster outside the timed sub-benchmarks
	tenants := make([]string, 1024)
	for i := range tenants {
		tenants[i] = "bench-win-" + strconv.Itoa(i)
	}
	for _, name := range []string{"fixed-window", "gcra", "sliding-window", "sliding-log"} {
		b.Run(name, func(b *testing.B) {
			lim := winBenchLimiters(b, true)[name]
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
