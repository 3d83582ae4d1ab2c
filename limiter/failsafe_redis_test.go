package limiter_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// TestFailSafeRedisPausedNode pauses the real cluster's only primary (SIGSTOP: its sockets stay
// open and nothing answers) under a fail-open FailSafe with a 20 ms budget and a breaker of
// threshold 3:
//   - the first 3 decisions wait out the budget (and no more than budget + slack) and are
//     allowed with Source FailOpen, each reported as a timeout;
//   - then the breaker is open and decisions come back in microseconds without asking Redis;
//   - after Resume and one cooldown (of the breaker's injected clock) a probe reaches Redis,
//     closes the breaker, and decisions are Central again.
//
// Not parallel: the pause stops every user of the shared node. The limiter has its own client so
// that the shared client's pool never sees the timed-out connections.
func TestFailSafeRedisPausedNode(t *testing.T) {
	const (
		budget    = 20 * time.Millisecond
		slack     = 100 * time.Millisecond // scheduling on a loaded 2-core machine under -race
		threshold = 3
	)
	l, _ := sharedCluster(t)
	addr := l.Addrs()[0]
	ctx := context.Background()
	c := newClusterClient(l.Addrs())
	defer c.Close()
	bucket, err := limiter.NewRedisTokenBucket(c, limiter.BucketPolicy{Rate: 1e6, Burst: 1e6}, limiter.WithTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := bucket.Load(ctx); err != nil {
		t.Fatal(err)
	}
	inner := &funcLimiter{f: bucket.Allow} // counts the calls that reach Redis
	clock := newFakeClock()
	br := limiter.NewBreaker(threshold, time.Second, limiter.WithBreakerClock(clock.Now))
	var kinds [limiter.NumErrorKinds]atomic.Int64
	f, err := limiter.NewFailSafe(inner, nil, failPolicy(limiter.FailPolicy{Mode: limiter.FailModeOpen, Budget: budget}),
		limiter.WithBreaker(br, func(limiter.Request) string { return addr }),
		limiter.WithOnFailure(func(_ limiter.Request, k limiter.ErrorKind) { kinds[k].Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1} // Now: the wall clock
	// Warm up without a budget: the client's first call loads the slot map and dials, which can
	// take longer than 20 ms on a busy machine under -race.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := bucket.Allow(wctx, r); err != nil {
		t.Fatalf("warm-up decision: %v", err)
	}
	if d, err := f.Allow(ctx, r); err != nil || d.Source != limiter.Central || !d.Allowed {
		t.Fatalf("healthy node: %+v, %v; want allowed by Central", d, err)
	}

	if err := l.Pause(addr); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if resumed {
			return
		}
		resumed = true
		if err := l.Resume(addr); err != nil {
			t.Errorf("resume %s: %v", addr, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := l.WaitHealthy(wctx); err != nil {
			t.Errorf("shared cluster not healthy after resume: %v", err)
		}
	}
	defer resume()

	failOpen := limiter.Decision{Allowed: true, Source: limiter.FailOpen, Failure: timedOut}
	for i := range threshold {
		start := time.Now()
		d, err := f.Allow(ctx, r)
		took := time.Since(start)
		if err != nil || d != failOpen {
			t.Fatalf("paused node, decision %d: %+v, %v; want %+v", i, d, err, failOpen)
		}
		if took < budget || took > budget+slack {
			t.Errorf("paused node, decision %d took %v; want the %v budget (+ up to %v)", i, took, budget, slack)
		}
		t.Logf("paused node, decision %d: %v", i, took)
	}
	if n := kinds[limiter.KindTimeout].Load(); n != threshold {
		t.Errorf("%d timeouts reported, want %d (kinds %v)", n, threshold, snapshot(&kinds))
	}
	if s := br.State(addr); s != limiter.BreakerOpen {
		t.Fatalf("breaker after %d timeouts: %s, want open", threshold, s)
	}

	const shortCircuited = 1000
	callsBefore := inner.calls.Load()
	var slowest time.Duration
	start := time.Now()
	for i := range shortCircuited {
		s := time.Now()
		d, err := f.Allow(ctx, r)
		slowest = max(slowest, time.Since(s))
		if want := (limiter.Decision{Allowed: true, Source: limiter.FailOpen}); err != nil || d != want {
			t.Fatalf("open breaker, decision %d: %+v, %v; want %+v (no store call, no failure)", i, d, err, want)
		}
	}
	mean := time.Since(start) / shortCircuited
	t.Logf("open breaker: %d decisions, mean %v, slowest %v", shortCircuited, mean, slowest)
	if n := inner.calls.Load() - callsBefore; n != 0 {
		t.Errorf("open breaker: Redis was asked %d times, want 0", n)
	}
	if slowest >= budget || mean > 100*time.Microsecond {
		t.Errorf("open breaker: slowest decision %v, mean %v; want well under the %v budget (mean <= 100µs)", slowest, mean, budget)
	}

	resume()
	// The probe needs a fresh connection (the timed-out ones were dropped). A probe that misses
	// its budget on a busy machine re-opens the breaker; the next cooldown probes again.
	var probes int
	for probes = 1; probes <= 5; probes++ {
		clock.Advance(br.Cooldown())
		d, err := f.Allow(ctx, r)
		if err == nil && d.Source == limiter.Central {
			break
		}
		t.Logf("probe %d after resume: %+v, %v", probes, d, err)
	}
	if s := br.State(addr); probes > 5 || s != limiter.BreakerClosed {
		t.Fatalf("after resume and %d probes: breaker %s, want closed by a successful probe", probes-1, s)
	}
	for i := range 10 {
		if d, err := f.Allow(ctx, r); err != nil || d.Source != limiter.Central || !d.Allowed {
			t.Fatalf("after recovery, decision %d: %+v, %v; want allowed by Central", i, d, err)
		}
	}
	for k := range kinds {
		if k != int(limiter.KindTimeout) && kinds[k].Load() != 0 {
			t.Errorf("unexpected failures of kind %v: %d", limiter.ErrorKind(k), kinds[k].Load())
		}
	}
}

// snapshot copies error counts for a message.
func snapshot(kinds *[limiter.NumErrorKinds]atomic.Int64) map[string]int64 {
	m := map[string]int64{}
	for k := range kinds {
		if n := kinds[k].Load(); n != 0 {
			m[limiter.ErrorKind(k).String()] = n
		}
	}
	return m
}

// A gateway's wiring: the Redis bucket without its own deadline (each endpoint's budget rules),
// a fail policy per endpoint, a breaker per node, and errors counted by kind.
func ExampleNewFailSafe() {
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"127.0.0.1:7000"},
		MaxRetries:            -1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
	})
	defer c.Close()
	policy := func(tenant, endpoint string) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 100, Burst: 200} }
	bucket, err := limiter.NewRedisTokenBucket(c, limiter.BucketPolicy{Rate: 100, Burst: 200},
		limiter.WithPolicyFunc(policy), limiter.WithTimeout(0))
	if err != nil {
		panic(err)
	}
	failPolicies := map[string]limiter.FailPolicy{
		"/v1/search":   {Mode: limiter.FailModeOpen, Budget: 5 * time.Millisecond},   // keep the API up
		"/v1/payments": {Mode: limiter.FailModeClosed, Budget: 5 * time.Millisecond}, // protect the processor
		"/v1/orders":   {Mode: limiter.FailModeLocal, Budget: 5 * time.Millisecond, LocalFraction: 0.5},
	}
	for ep, p := range failPolicies {
		if err := p.Validate(); err != nil {
			panic(fmt.Sprint(ep, ": ", err))
		}
	}
	var errorsByKind [limiter.NumErrorKinds]atomic.Int64
	f, err := limiter.NewFailSafe(bucket, policy,
		func(endpoint string) limiter.FailPolicy { return failPolicies[endpoint] }, // unknown: fail open
		limiter.WithBreaker(limiter.NewBreaker(limiter.DefaultBreakerThreshold, limiter.DefaultBreakerCooldown),
			func(r limiter.Request) string { return "127.0.0.1:7000" }), // from the slot map in a real cluster
		limiter.WithOnFailure(func(_ limiter.Request, k limiter.ErrorKind) { errorsByKind[k].Add(1) }))
	if err != nil {
		panic(err)
	}
	d, err := f.Allow(context.Background(), limiter.Request{Tenant: "acme", Endpoint: "/v1/payments", Cost: 1, Now: time.Now()})
	fmt.Println(d.Allowed, d.Source, err) // "false fail-closed <nil>" while Redis is down
}
