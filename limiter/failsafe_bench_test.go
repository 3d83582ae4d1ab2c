package limiter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"ratelab/limiter"
)

// BenchmarkFailSafe measures the wrapper's cost over the in-memory twin (the same requests
// decided by the twin alone, through FailSafe without and with a budget and a breaker), and the
// outage path: an open breaker deciding by mode without asking the store.
func BenchmarkFailSafe(b *testing.B) {
	policy := limiter.BucketPolicy{Rate: 1000, Burst: 100}
	base := func(string, string) limiter.BucketPolicy { return policy }
	tenants := make([]string, 1024)
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
	}
	nodeOf := func(limiter.Request) string { return "127.0.0.1:7000" }
	openBreaker := func() *limiter.Breaker {
		br := limiter.NewBreaker(1, time.Hour)
		br.Failure("127.0.0.1:7000")
		return br
	}
	cases := []struct {
		name   string
		wrap   bool
		policy limiter.FailPolicy
		opts   func() []limiter.FailSafeOption
		want   limiter.Source
	}{
		{"twin-alone", false, limiter.FailPolicy{}, nil, limiter.Local},
		{"budget=0", true, limiter.FailPolicy{}, nil, limiter.Local},
		{"budget=0/breaker", true, limiter.FailPolicy{}, func() []limiter.FailSafeOption {
			return []limiter.FailSafeOption{limiter.WithBreaker(limiter.NewBreaker(0, 0), nodeOf)}
		}, limiter.Local},
		{"budget=5ms", true, limiter.FailPolicy{Budget: 5 * ms}, nil, limiter.Local},
		{"budget=5ms/breaker", true, limiter.FailPolicy{Budget: 5 * ms}, func() []limiter.FailSafeOption {
			return []limiter.FailSafeOption{limiter.WithBreaker(limiter.NewBreaker(0, 0), nodeOf)}
		}, limiter.Local},
		{"breaker-open/open", true, limiter.FailPolicy{Mode: limiter.FailModeOpen, Budget: 5 * ms}, func() []limiter.FailSafeOption {
			return []limiter.FailSafeOption{limiter.WithBreaker(openBreaker(), nodeOf)}
		}, limiter.FailOpen},
		{"breaker-open/local", true, limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 0.5, Budget: 5 * ms}, func() []limiter.FailSafeOption {
			return []limiter.FailSafeOption{limiter.WithBreaker(openBreaker(), nodeOf)}
		}, limiter.Local},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			twin, err := limiter.NewTokenBucket(policy)
			if err != nil {
				b.Fatal(err)
			}
			var lim limiter.Limiter = twin
			if bc.wrap {
				var opts []limiter.FailSafeOption
				if bc.opts != nil {
					opts = bc.opts()
				}
				if lim, err = limiter.NewFailSafe(twin, base, failPolicy(bc.policy), opts...); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			r := limiter.Request{Endpoint: "/v1/orders", Cost: 1}
			for i := range tenants { // create every key first: the loop measures steady state
				r.Tenant, r.Now = tenants[i], time.UnixMilli(t0)
				if _, err := lim.Allow(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			start := time.Now()
			i := 0
			for b.Loop() {
				r.Tenant = tenants[i&1023]
				r.Now = time.UnixMilli(t0 + int64(i>>4))
				d, err := lim.Allow(ctx, r)
				if err != nil || d.Source != bc.want {
					b.Fatalf("Allow = %+v, %v; want source %v", d, err, bc.want)
				}
				i++
			}
			reportRate(b, start)
		})
	}
}
