package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// The in-memory twin decides from the time it is given: a burst of 3 at 1 token per second.
func ExampleTokenBucket_AllowAt() {
	b, err := limiter.NewTokenBucket(limiter.BucketPolicy{Rate: 1, Burst: 3})
	if err != nil {
		panic(err)
	}
	key := limiter.KeyFor("acme", "/v1/orders")
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, at := range []int64{0, 0, 0, 0, 500, 1000} {
		d := b.AllowAt(key, now+at, 1)
		fmt.Printf("t=%4dms allowed=%-5v remaining=%d retry=%v reset=%v\n", at, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter)
	}
	// Output:
	// t=   0ms allowed=true  remaining=2 retry=0s reset=1s
	// t=   0ms allowed=true  remaining=1 retry=0s reset=2s
	// t=   0ms allowed=true  remaining=0 retry=0s reset=3s
	// t=   0ms allowed=false remaining=0 retry=1s reset=3s
	// t= 500ms allowed=false remaining=0 retry=500ms reset=2.5s
	// t=1000ms allowed=true  remaining=0 retry=0s reset=3s
}

// The Redis bucket needs a client that neither retries nor ignores deadlines.
func ExampleNewRedisTokenBucket() {
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"127.0.0.1:7000"},
		MaxRetries:            -1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
	})
	defer c.Close()
	b, err := limiter.NewRedisTokenBucket(c, limiter.BucketPolicy{Rate: 100, Burst: 200},
		limiter.WithTimeout(limiter.DefaultTimeout))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := b.Load(ctx); err != nil { // SCRIPT LOAD on every primary before measuring
		fmt.Println("load:", err)
		return
	}
	d, err := b.Allow(ctx, limiter.Request{Tenant: "acme", Endpoint: "/v1/orders", Cost: 1, Now: time.Now()})
	if err != nil {
		fmt.Println(limiter.ClassifyError(err), err)
		return
	}
	fmt.Println(d.Allowed, d.Remaining)
}
