package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
)

func TestTokenBucketAllowAndAllowAtShareState(t *testing.T) {
	t.Parallel()
	b, err := limiter.NewTokenBucket(suitePolicy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Allow(ctx, limiter.Request{Tenant: "acme", Endpoint: "/x", Cost: 6, Now: time.UnixMilli(t0)}); err != nil {
		t.Fatal(err)
	}
	// The same key through AllowAt sees the 4 tokens Allow left.
	if have, want := b.AllowAt(limiter.KeyFor("acme", "/x"), t0, 4), (limiter.Decision{Allowed: true, ResetAfter: 20 * ms, Source: limiter.Local, At: time.UnixMilli(t0)}); have != want {
		t.Errorf("AllowAt after Allow: have %+v, want %+v", have, want)
	}
	if have, err := b.Allow(ctx, limiter.Request{Tenant: "acme", Endpoint: "/x", Cost: 1, Now: time.UnixMilli(t0)}); err != nil || have.Allowed {
		t.Errorf("Allow after AllowAt emptied the bucket: have %+v, %v; want denied", have, err)
	}
	if have := b.Len(); have != 1 {
		t.Errorf("Len = %d, want 1", have)
	}
	if _, ok := b.State(limiter.KeyFor("acme", "/y")); ok {
		t.Errorf("State of an unused key: exists, want missing")
	}
}

// TestTokenBucketConcurrent hammers a few keys from many goroutines at one instant: with no
// refill, exactly Burst requests per key may pass, whatever the interleaving (run with -race).
func TestTokenBucketConcurrent(t *testing.T) {
	t.Parallel()
	p := limiter.BucketPolicy{Rate: 1, Burst: 500}
	b, err := limiter.NewTokenBucket(p)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, perGoroutine, keys = 8, 400, 4
	allowed := make([][keys]int64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				k := i % keys
				d, err := b.Allow(context.Background(), limiter.Request{Tenant: "t" + strconv.Itoa(k), Endpoint: "e", Cost: 1, Now: time.UnixMilli(t0)})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed[g][k]++
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		var sum int64
		for g := range goroutines {
			sum += allowed[g][k]
		}
		if sum != p.Burst {
			t.Errorf("key %d: %d allowed of %d requests, want exactly the burst %d", k, sum, goroutines*perGoroutine/keys, p.Burst)
		}
	}
}

func TestTokenBucketZeroAllocs(t *testing.T) {
	b, err := limiter.NewTokenBucket(suitePolicy)
	if err != nil {
		t.Fatal(err)
	}
	key := limiter.KeyFor("acme", "/v1/orders")
	now := t0
	b.AllowAt(key, now, 1) // create the key
	if n := testing.AllocsPerRun(1000, func() { now++; b.AllowAt(key, now, 1) }); n != 0 {
		t.Errorf("AllowAt on an existing key: %v allocs per decision, want 0", n)
	}
	r := limiter.Request{Tenant: "acme", Endpoint: "/v1/orders", Cost: 1}
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		now++
		r.Now = time.UnixMilli(now)
		if _, err := b.Allow(ctx, r); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Allow on an existing key: %v allocs per decision, want 0", n)
	}
}

func TestNewTokenBucketRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    limiter.BucketPolicy
		opts []limiter.Option
	}{
		{"zero rate", limiter.BucketPolicy{Rate: 0, Burst: 1}, nil},
		{"negative rate", limiter.BucketPolicy{Rate: -1, Burst: 1}, nil},
		{"zero burst", limiter.BucketPolicy{Rate: 1, Burst: 0}, nil},
		{"burst above 2^53", limiter.BucketPolicy{Rate: 1e18, Burst: 1<<53 + 1}, nil},
		{"refill longer than a Duration", limiter.BucketPolicy{Rate: 1e-9, Burst: 10}, nil},
		{"negative timeout", suitePolicy, []limiter.Option{limiter.WithTimeout(-time.Second)}},
	}
	for _, tt := range tests {
		if b, err := limiter.NewTokenBucket(tt.p, tt.opts...); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("%s: NewTokenBucket(%+v) = %v, %v; want an error wrapping ErrBadConfig", tt.name, tt.p, b, err)
		}
		if b, err := limiter.NewRedisTokenBucket(nil, tt.p, tt.opts...); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("%s: NewRedisTokenBucket(%+v) = %v, %v; want an error wrapping ErrBadConfig", tt.name, tt.p, b, err)
		}
	}
}

func TestNoop(t *testing.T) {
	t.Parallel()
	var l limiter.Limiter = limiter.Noop{}
	have, err := l.Allow(context.Background(), limiter.Request{Tenant: "t", Endpoint: "e", Cost: 1 << 40})
	if want := (limiter.Decision{Allowed: true, Source: limiter.Local}); err != nil || have != want {
		t.Errorf("Noop.Allow = %+v, %v; want %+v", have, err, want)
	}
}

// benchKeys builds n distinct bucket keys.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = limiter.KeyFor("tenant-"+strconv.Itoa(i), "/v1/orders")
	}
	return keys
}

func reportRate(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
}

func BenchmarkTokenBucketAllowAt(b *testing.B) {
	tb, err := limiter.NewTokenBucket(limiter.BucketPolicy{Rate: 1000, Burst: 100})
	if err != nil {
		b.Fatal(err)
	}
	keys := benchKeys(1024)
	for _, k := range keys {
		tb.AllowAt(k, t0, 1)
	}
	b.ReportAllocs()
	start := time.Now()
	i := 0
	for b.Loop() {
		tb.AllowAt(keys[i&1023], t0+int64(i>>4), 1)
		i++
	}
	reportRate(b, start)
}

func BenchmarkTokenBucketAllowAtParallel(b *testing.B) {
	tb, err := limiter.NewTokenBucket(limiter.BucketPolicy{Rate: 1000, Burst: 100})
	if err != nil {
		b.Fatal(err)
	}
	keys := benchKeys(1024)
	for _, k := range keys {
		tb.AllowAt(k, t0, 1)
	}
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			tb.AllowAt(keys[i&1023], t0+int64(i>>4), 1)
			i += 7
		}
	})
	reportRate(b, start)
}

func BenchmarkTokenBucketAllow(b *testing.B) {
	tb, err := limiter.NewTokenBucket(limiter.BucketPolicy{Rate: 1000, Burst: 100})
	if err != nil {
		b.Fatal(err)
	}
	tenants := make([]string, 1024)
	for i := range tenants {
		tenants[i] = "tenant-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	r := limiter.Request{Endpoint: "/v1/orders", Cost: 1}
	b.ReportAllocs()
	start := time.Now()
	i := 0
	for b.Loop() {
		r.Tenant = tenants[i&1023]
		r.Now = time.UnixMilli(t0 + int64(i>>4))
		if _, err := tb.Allow(ctx, r); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportRate(b, start)
}
