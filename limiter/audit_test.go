package limiter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/lua"
)

// TestSuiteRedisAudited runs the shared suite over the bucket with its audit counter: the
// two-key script decides and stores exactly as the one-key script and the twin do.
func TestSuiteRedisAudited(t *testing.T) {
	t.Parallel()
	runSuite(t, func(t *testing.T, p limiter.BucketPolicy, opts ...limiter.Option) subject {
		return newRedisSubject(t, p, append(opts, limiter.WithAudit())...)
	})
}

// TestAuditCountsAllowedCosts runs a known sequence, allowed and denied with costs above 1, on
// the plain and coalescing buckets: the audit counter holds the allowed costs' sum (the twin's
// decisions say which), lives AuditTTL, and ReadDebited reads it; without WithAudit no counter
// exists.
func TestAuditCountsAllowedCosts(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	plain := func(opts ...limiter.Option) limiter.Limiter {
		b, err := limiter.NewRedisTokenBucket(c, suitePolicy, append([]limiter.Option{limiter.WithTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	coalescing := func(opts ...limiter.Option) limiter.Limiter {
		return newCoalescing(t, c, suitePolicy, limiter.WithBucketOptions(opts...))
	}
	// Burst 10 at 0.5 token/ms: 3, 4 allowed (3 left), 5 denied, 2 allowed (1 left), 0 allowed,
	// 5 ms later 2.5 more: 3 allowed (0.5 left), 2 denied. 12 tokens debited.
	steps := []struct{ at, cost int64 }{{0, 3}, {0, 4}, {0, 5}, {0, 2}, {0, 0}, {5, 3}, {5, 2}}
	for name, build := range map[string]func(...limiter.Option) limiter.Limiter{"plain": plain, "coalescing": coalescing} {
		audited, bare := build(limiter.WithAudit()), build()
		twin, _ := limiter.NewTokenBucket(suitePolicy)
		tenant, other := uniqueTenant(t), uniqueTenant(t)
		var debited int64
		var denied int
		for i, s := range steps {
			r := limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: s.cost, Now: time.UnixMilli(t0 + s.at)}
			have, err := audited.Allow(ctx, r)
			want, _ := twin.Allow(ctx, r)
			want.Source = limiter.Central
			if err != nil || have != want {
				t.Fatalf("%s step %d: have %+v, %v; want %+v", name, i, have, err, want)
			}
			if have.Allowed {
				debited += s.cost
			} else {
				denied++
			}
			r.Tenant = other
			if _, err := bare.Allow(ctx, r); err != nil {
				t.Fatalf("%s step %d without audit: %v", name, i, err)
			}
		}
		if debited != 12 || denied != 2 {
			t.Fatalf("%s: the sequence debited %d with %d denied; the test expects 12 and 2", name, debited, denied)
		}
		key := limiter.AuditKey(tenant, "ep")
		got, err := limiter.ReadDebited(ctx, c, []string{key, limiter.AuditKey(other, "ep")})
		if err != nil || len(got) != 2 || got[0] != debited || got[1] != 0 {
			t.Fatalf("%s: ReadDebited = %v, %v; want [%d 0] (the second bucket has no audit)", name, got, err, debited)
		}
		if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl > limiter.AuditTTL || ttl < limiter.AuditTTL-time.Minute {
			t.Fatalf("%s: PTTL %s = %v, %v; want about %v", name, key, ttl, err, limiter.AuditTTL)
		}
		if n, err := c.Exists(ctx, limiter.AuditKey(other, "ep")).Result(); err != nil || n != 0 {
			t.Fatalf("%s: audit key without WithAudit: EXISTS = %d, %v; want 0", name, n, err)
		}
	}
}

// TestAuditConcurrentCoalesced sends 40 decisions of cost 2 on one key at once through the
// coalescing bucket: the counter equals the costs of the decisions returned allowed.
func TestAuditConcurrentCoalesced(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	b := newCoalescing(t, c, limiter.BucketPolicy{Rate: 1, Burst: 41}, limiter.WithBatchWindow(5*time.Millisecond), limiter.WithBucketOptions(limiter.WithAudit()))
	tenant := uniqueTenant(t)
	var (
		mu      sync.Mutex
		allowed int64
		wg      sync.WaitGroup
	)
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := b.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 2, Now: time.UnixMilli(t0)})
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				mu.Lock()
				allowed += 2
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, err := limiter.ReadDebited(context.Background(), c, []string{limiter.AuditKey(tenant, "ep")})
	if err != nil || got[0] != allowed || allowed != 40 {
		t.Fatalf("ReadDebited = %v, %v; allowed costs %d (burst 41 at cost 2: want 40)", got, err, allowed)
	}
}

// TestAuditRefusals: an endpoint that would collide with an audit key is refused with
// ErrBadRequest; the script refuses a fractional cost with an audit key before writing anything;
// a counter that is not an integer is an error of ReadDebited naming the key.
func TestAuditRefusals(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithAudit())
	if err != nil {
		t.Fatal(err)
	}
	r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep:debited", Cost: 1, Now: time.UnixMilli(t0)}
	if _, err := b.Allow(ctx, r); !errors.Is(err, limiter.ErrBadRequest) {
		t.Fatalf("endpoint ep:debited with audit: err = %v, want ErrBadRequest", err)
	}
	tenant := uniqueTenant(t)
	key, audit := limiter.KeyFor(tenant, "ep"), limiter.AuditKey(tenant, "ep")
	err = c.Eval(ctx, lua.TokenBucket, []string{key, audit}, t0, "0.5", 10, "1.5", 1000).Err()
	if err == nil {
		t.Fatal("script with an audit key and cost 1.5: no error, want a refusal")
	}
	if n, err := c.Exists(ctx, key, audit).Result(); err != nil || n != 0 {
		t.Fatalf("after the refusal EXISTS = %d, %v; want 0 keys written", n, err)
	}
	if err := c.Set(ctx, audit, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.ReadDebited(ctx, c, []string{audit}); err == nil || !strings.Contains(err.Error(), audit) {
		t.Fatalf("ReadDebited of a non-integer: err = %v, want an error naming %s", err, audit)
	}
}
