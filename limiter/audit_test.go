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
		return newRedisSubject(t, p, append(opts, limiter.WithAudit("suite"))...)
	})
}

// TestAuditCountsAllowedCosts runs a known sequence, allowed and denied with costs above 1, on
// the plain and coalescing buckets: the audit counter holds the allowed costs' sum (the twin's
// decisions say which), in its run's key, lives AuditTTL, and ReadDebited reads it; without
// WithAudit no counter exists, and the run's counter is not the unnamed one.
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
		audited, bare := build(limiter.WithAudit("run-1")), build()
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
		key := limiter.AuditKey(tenant, "ep", "run-1")
		got, err := limiter.ReadDebited(ctx, c, []string{key, limiter.AuditKey(other, "ep", "run-1"), limiter.AuditKey(tenant, "ep", "")})
		if err != nil || len(got) != 3 || got[0] != debited || got[1] != 0 || got[2] != 0 {
			t.Fatalf("%s: ReadDebited = %v, %v; want [%d 0 0] (the second bucket has no audit, the unnamed counter is not the run's)", name, got, err, debited)
		}
		if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl > limiter.AuditTTL || ttl < limiter.AuditTTL-time.Minute {
			t.Fatalf("%s: PTTL %s = %v, %v; want about %v", name, key, ttl, err, limiter.AuditTTL)
		}
		if n, err := c.Exists(ctx, limiter.AuditKey(other, "ep", "run-1"), limiter.AuditKey(other, "ep", "")).Result(); err != nil || n != 0 {
			t.Fatalf("%s: audit key without WithAudit: EXISTS = %d, %v; want 0", name, n, err)
		}
	}
}

// TestAuditConcurrentCoalesced sends 40 decisions of cost 2 on one key at once through the
// coalescing bucket: the counter equals the costs of the decisions returned allowed.
func TestAuditConcurrentCoalesced(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	b := newCoalescing(t, c, limiter.BucketPolicy{Rate: 1, Burst: 41}, limiter.WithBatchWindow(5*time.Millisecond), limiter.WithBucketOptions(limiter.WithAudit("")))
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
	got, err := limiter.ReadDebited(context.Background(), c, []string{limiter.AuditKey(tenant, "ep", "")})
	if err != nil || got[0] != allowed || allowed != 40 {
		t.Fatalf("ReadDebited = %v, %v; allowed costs %d (burst 41 at cost 2: want 40)", got, err, allowed)
	}
}

// TestAuditRefusals: an endpoint that could collide with an audit key is refused with
// ErrBadRequest, and a run name that could with ErrBadConfig naming it; the script refuses a
// fractional cost with an audit key before writing anything; a counter that is not an integer is
// an error of ReadDebited naming the key.
func TestAuditRefusals(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithAudit("r"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{"ep:debited", "ep:debited:r", "a:debited:b"} {
		r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: ep, Cost: 1, Now: time.UnixMilli(t0)}
		if _, err := b.Allow(ctx, r); !errors.Is(err, limiter.ErrBadRequest) {
			t.Fatalf("endpoint %s with audit: err = %v, want ErrBadRequest", ep, err)
		}
	}
	for _, run := range []string{"a:b", "{x}", "two words", strings.Repeat("r", limiter.MaxAuditRunLen+1)} {
		if _, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithAudit(run)); !errors.Is(err, limiter.ErrBadConfig) || !strings.Contains(err.Error(), "audit run") {
			t.Errorf("WithAudit(%q): err = %v, want ErrBadConfig naming the audit run", run, err)
		}
	}
	tenant := uniqueTenant(t)
	key, audit := limiter.KeyFor(tenant, "ep"), limiter.AuditKey(tenant, "ep", "")
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

// TestAuditKeyedByRun: two runs with different names debit one bucket; each run's counter holds
// its own debits only, so a later run on the same cluster does not read an earlier one's.
func TestAuditKeyedByRun(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	tenant := uniqueTenant(t)
	for run, n := range map[string]int{"first": 3, "second": 5} {
		b, err := limiter.NewRedisTokenBucket(c, limiter.BucketPolicy{Rate: 1, Burst: 100}, limiter.WithTimeout(5*time.Second), limiter.WithAudit(run))
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if d, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 2, Now: time.UnixMilli(t0)}); err != nil || !d.Allowed {
				t.Fatalf("run %s: %+v, %v; want allowed", run, d, err)
			}
		}
	}
	got, err := limiter.ReadDebited(ctx, c, []string{limiter.AuditKey(tenant, "ep", "first"), limiter.AuditKey(tenant, "ep", "second")})
	if err != nil || got[0] != 6 || got[1] != 10 {
		t.Fatalf("ReadDebited = %v, %v; want [6 10]: each run's own debits", got, err)
	}
}

func TestAuditKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tenant, endpoint, run, want string }{
		{"t1", "search", "", "rl:{t1}:search:debited"},
		{"t1", "search", "r-7.a_b", "rl:{t1}:search:debited:r-7.a_b"},
	} {
		if got := limiter.AuditKey(tc.tenant, tc.endpoint, tc.run); got != tc.want {
			t.Errorf("AuditKey(%q, %q, %q) = %q, want %q", tc.tenant, tc.endpoint, tc.run, got, tc.want)
		}
	}
}

// Naming a run's counters costs the audited decision nothing more: its key is still the one
// allocation of the string, as KeyFor's.
func TestAuditKeyAllocs(t *testing.T) {
	var sink string
	for _, run := range []string{"", "run1x2y3z4w5v6u7"} {
		if n := testing.AllocsPerRun(100, func() { sink = limiter.AuditKey("tenant-00042", "/v1/orders", run) }); n != 1 {
			t.Errorf("AuditKey with run %q: %v allocs, want 1 (the string)", run, n)
		}
	}
	_ = sink
}
