package limiter_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/lua"
)

// TestRedisNoScriptFallback flushes the node's script cache: the next decision must still be
// right (one EVAL after the NOSCRIPT), counted once, and the one after it must find the script
// cached again by that EVAL. Not parallel: another test's EVAL would re-cache the script.
func TestRedisNoScriptFallback(t *testing.T) {
	_, c := sharedCluster(t)
	ctx := context.Background()
	var calls atomic.Int64
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithOnNoScript(func() { calls.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	twin, err := limiter.NewTokenBucket(suitePolicy)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Load(ctx); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() }); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	sha := redis.NewScript(lua.TokenBucket).Hash()
	if exists, err := c.ScriptExists(ctx, sha).Result(); err != nil || exists[0] {
		t.Fatalf("SCRIPT EXISTS after flush = %v, %v; want false", exists, err)
	}
	tenant := uniqueTenant(t)
	for i, wantFallbacks := range []int64{1, 1, 1} {
		r := limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 4, Now: time.UnixMilli(t0)}
		have, err := b.Allow(ctx, r)
		want, _ := twin.Allow(ctx, r)
		want.Source = limiter.Central
		if err != nil || have != want {
			t.Fatalf("decision %d after SCRIPT FLUSH: have %+v, %v; want %+v", i, have, err, want)
		}
		if n := b.NoScriptFallbacks(); n != wantFallbacks || calls.Load() != wantFallbacks {
			t.Fatalf("decision %d: NoScriptFallbacks = %d, WithOnNoScript calls = %d; want %d", i, n, calls.Load(), wantFallbacks)
		}
	}
	if exists, err := c.ScriptExists(ctx, sha).Result(); err != nil || !exists[0] {
		t.Fatalf("SCRIPT EXISTS after the fallback = %v, %v; want true (EVAL caches the script)", exists, err)
	}
}

// TestRedisTimeout pauses the node's writers (CLIENT PAUSE WRITE blocks EVALSHA) and checks that
// a decision gives up at its own deadline, well before the client's 10 s read timeout, with an
// error classified as a timeout. Not parallel: the pause stops every writer of the node.
func TestRedisTimeout(t *testing.T) {
	l, _ := sharedCluster(t)
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: l.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true, ReadTimeout: 10 * time.Second,
	})
	defer c.Close()
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	tenant := uniqueTenant(t)
	// Warm up: the slot map and a pooled connection, so the paused call is the EVALSHA itself.
	if _, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: l.Addrs()[0]})
	defer admin.Close()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 20_000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	defer func() {
		if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Errorf("CLIENT UNPAUSE: %v", err)
		}
	}()
	start := time.Now()
	d, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
	took := time.Since(start)
	if err == nil || limiter.ClassifyError(err) != limiter.KindTimeout {
		t.Fatalf("Allow on a paused node = %+v, %v (kind %v); want a timeout error", d, err, limiter.ClassifyError(err))
	}
	if took >= 5*time.Second {
		t.Fatalf("Allow on a paused node took %v: the 100 ms decision deadline did not apply", took)
	}
	t.Logf("paused node: %v after %v", err, took)
}

func TestRedisErrorsClassifiedFromRealReplies(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	err := c.EvalSha(ctx, "0000000000000000000000000000000000000000", []string{"rl:{x}:y"}).Err()
	if k := limiter.ClassifyError(err); k != limiter.KindNoScript {
		t.Errorf("EVALSHA of an unknown script: %v classified %v, want noscript", err, k)
	}

	// A port nothing listens on: connection refused. DialerRetries 1: go-redis's pool otherwise
	// re-dials 5 times 100 ms apart, and the 50 ms decision deadline ends it first (a timeout).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dead := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
	defer dead.Close()
	b, err := limiter.NewRedisTokenBucket(dead, suitePolicy)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Allow(ctx, limiter.Request{Tenant: "t", Endpoint: "e", Cost: 1, Now: time.UnixMilli(t0)})
	if k := limiter.ClassifyError(err); err == nil || k != limiter.KindConn {
		t.Errorf("Allow against a closed port = %+v, %v (kind %v); want a conn error", d, err, k)
	}
}

// TestRedisPlainClient: a *redis.Client to the single node (which owns every slot) is a
// Scripter too, and Load warms its cache so that no decision needs EVAL.
func TestRedisPlainClient(t *testing.T) {
	t.Parallel()
	l, _ := sharedCluster(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: l.Addrs()[0], MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Load(ctx); err != nil {
		t.Fatalf("Load: %v", err)
	}
	tenant := uniqueTenant(t)
	for i, want := range []limiter.Decision{
		{Allowed: true, Remaining: 0, ResetAfter: 20 * ms, Source: limiter.Central},
		{Allowed: false, Remaining: 0, RetryAfter: 2 * ms, ResetAfter: 20 * ms, Source: limiter.Central},
	} {
		have, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 10 - 9*int64(i), Now: time.UnixMilli(t0)})
		want.At = time.UnixMilli(t0)
		if err != nil || have != want {
			t.Fatalf("decision %d: have %+v, %v; want %+v", i, have, err, want)
		}
	}
}

// BenchmarkRedisTokenBucket measures central decisions per second on the real single-primary
// cluster with 2, 8, 32 and 128 callers (SetParallelism x GOMAXPROCS 2), each a plain EVALSHA
// round trip: no pipelining, no leases.
func BenchmarkRedisTokenBucket(b *testing.B) {
	_, c := sharedCluster(b)
	for _, par := range []int{1, 4, 16, 64} {
		b.Run("parallelism="+strconv.Itoa(par), func(b *testing.B) {
			// A 1 s deadline: this measures throughput, and a loaded 2-core machine with 128
			// callers queues some decisions past the 50 ms default. Errors are counted, not fatal.
			lim, err := limiter.NewRedisTokenBucket(c, limiter.BucketPolicy{Rate: 1e6, Burst: 1e6}, limiter.WithTimeout(time.Second))
			if err != nil {
				b.Fatal(err)
			}
			benchCentral(b, lim, par)
			if n := lim.NoScriptFallbacks(); n != 0 {
				b.Errorf("%d NOSCRIPT fallbacks after Load", n)
			}
		})
	}
}

// benchCentral loads lim's script and runs b.N decisions from par x GOMAXPROCS callers over
// 1024 keys, reporting decisions/s and errors/op; more than 1% errors fails the benchmark.
func benchCentral(b *testing.B, lim interface {
	limiter.Limiter
	Load(context.Context) error
}, par int) {
	const keys = 1024
	tenants := make([]string, keys)
	for i := range tenants {
		tenants[i] = "bench-" + strconv.Itoa(i)
	}
	if err := lim.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	var seq, errs atomic.Int64
	b.SetParallelism(par)
	b.ReportAllocs()
	b.ResetTimer() // the keys and SCRIPT LOAD are set-up, not decisions
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		r := limiter.Request{Endpoint: "/v1/orders", Cost: 1}
		i := int(seq.Add(1))
		for pb.Next() {
			r.Tenant = tenants[i%keys]
			r.Now = time.Now()
			if _, err := lim.Allow(ctx, r); err != nil {
				if errs.Add(1) == 1 {
					b.Logf("first error: %v", err)
				}
			}
			i += 13
		}
	})
	reportRate(b, start)
	b.ReportMetric(float64(errs.Load())/float64(b.N), "errors/op")
	if e := errs.Load(); e*100 > int64(b.N) {
		b.Errorf("%d errors in %d decisions (more than 1%%)", e, b.N)
	}
}
