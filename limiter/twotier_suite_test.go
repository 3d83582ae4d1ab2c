package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// tierSubject is one two-tier implementation under the shared two-tier suite, with probes of its
// stored state.
type tierSubject struct {
	lim    limiter.Limiter
	source limiter.Source
	allow  func(ctx context.Context, r limiter.Request) (limiter.Decision, limiter.Tier, error)
	// bucket returns the stored bucket of tenant's endpoint and whether it exists.
	bucket func(t *testing.T, tenant, endpoint string) (limiter.BucketState, bool)
	// quota returns tenant's count in quota window index (0 when there is none).
	quota func(t *testing.T, tenant string, index int64) int64
}

type newTierSubjectFunc func(t *testing.T, p limiter.TwoTierPolicy) tierSubject

func newTierTwin(t *testing.T, p limiter.TwoTierPolicy) tierSubject {
	tt, err := limiter.NewTwoTier(p)
	if err != nil {
		t.Fatalf("NewTwoTier(%+v): %v", p, err)
	}
	return tierSubject{
		lim:    tt,
		source: limiter.Local,
		allow: func(_ context.Context, r limiter.Request) (limiter.Decision, limiter.Tier, error) {
			d, tier := tt.AllowTierAt(r.Tenant, r.Endpoint, r.Now.UnixMilli(), r.Cost)
			return d, tier, nil
		},
		bucket: func(_ *testing.T, tenant, ep string) (limiter.BucketState, bool) { return tt.BucketState(tenant, ep) },
		quota:  func(_ *testing.T, tenant string, idx int64) int64 { return tt.QuotaCount(tenant, idx) },
	}
}

func newTierRedis(t *testing.T, p limiter.TwoTierPolicy) tierSubject {
	_, c := sharedCluster(t)
	tt, err := limiter.NewRedisTwoTier(c, p, limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("NewRedisTwoTier(%+v): %v", p, err)
	}
	return tierSubject{
		lim:    tt,
		source: limiter.Central,
		allow:  tt.AllowTier,
		bucket: func(t *testing.T, tenant, ep string) (limiter.BucketState, bool) {
			return redisState(t, c, limiter.KeyFor(tenant, ep))
		},
		quota: func(t *testing.T, tenant string, idx int64) int64 { return redisQuota(t, c, tenant, idx) },
	}
}

// redisQuota reads a quota counter as two_tier.lua stores it (a missing key counts 0).
func redisQuota(t *testing.T, c redis.Cmdable, tenant string, idx int64) int64 {
	t.Helper()
	n, err := c.Get(context.Background(), limiter.QuotaKey(tenant, idx)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("GET %s: %v", limiter.QuotaKey(tenant, idx), err)
	}
	return n
}

func TestTwoTierSuiteTwin(t *testing.T) {
	t.Parallel()
	runTierSuite(t, newTierTwin)
}

func TestTwoTierSuiteRedis(t *testing.T) {
	t.Parallel()
	runTierSuite(t, newTierRedis)
}

// tierPolicy: the suite bucket (0.5 token/ms, burst 10: empty to full in 20 ms) and a quota of
// 15 per 1 s window. t0 is a multiple of 1000, so t0 starts a quota window.
var tierPolicy = limiter.TwoTierPolicy{Bucket: suitePolicy, Quota: 15, QuotaWindow: time.Second}

// tierStep is one request at t0+at ms; after it the step's bucket must hold tokens and the
// tenant's quota window of the step's time must count quota.
type tierStep struct {
	at     int64
	tenant int
	ep     string
	cost   int64
	want   limiter.Decision
	tier   limiter.Tier
	tokens float64
	quota  int64
}

// runTierSuite proves one two-tier implementation against hand-computed decisions and states.
func runTierSuite(t *testing.T, newSubject newTierSubjectFunc) {
	small := tierPolicy
	small.Quota = 5
	none, bucket, quota := limiter.TierNone, limiter.TierBucket, limiter.TierQuota
	tests := []struct {
		name   string
		policy limiter.TwoTierPolicy
		steps  []tierStep
	}{
		{"quota exhausted denies though the bucket has tokens, debits neither, rolls over", tierPolicy, []tierStep{
			{ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 10},
			{ep: "b", cost: 5, want: allow(0, 1000*ms), tier: none, tokens: 5, quota: 15}, // quota is the tighter tier
			{ep: "c", cost: 1, want: deny(0, 1000*ms, 1000*ms), tier: quota, tokens: 10, quota: 15},
			{at: 500, ep: "c", cost: 1, want: deny(0, 500*ms, 500*ms), tier: quota, tokens: 10, quota: 15},
			{at: 999, ep: "c", cost: 1, want: deny(0, 1*ms, 1*ms), tier: quota, tokens: 10, quota: 15},
			{at: 1000, ep: "c", cost: 1, want: allow(9, 2*ms), tier: none, tokens: 9, quota: 1}, // new window
			{at: 1000, ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 11},
		}},
		{"bucket empty denies and the quota count is unchanged", tierPolicy, []tierStep{
			{ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 10},
			{ep: "a", cost: 1, want: deny(0, 2*ms, 20*ms), tier: bucket, tokens: 0, quota: 10},
			{at: 1, ep: "a", cost: 1, want: deny(0, 1*ms, 19*ms), tier: bucket, tokens: 0.5, quota: 10},
			{at: 2, ep: "a", cost: 1, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 11},
		}},
		{"both short: the bucket is named, retry waits for both", tierPolicy, []tierStep{
			{ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 10},
			{ep: "b", cost: 5, want: allow(0, 1000*ms), tier: none, tokens: 5, quota: 15},
			{ep: "a", cost: 1, want: deny(0, 1000*ms, 20*ms), tier: bucket, tokens: 0, quota: 15},
		}},
		{"cost above the burst never passes", tierPolicy, []tierStep{
			{ep: "a", cost: 11, want: deny(10, limiter.RetryNever, 0), tier: bucket, tokens: 10, quota: 0},
			{ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 10},
		}},
		{"cost above the quota never passes", small, []tierStep{
			{ep: "a", cost: 6, want: deny(5, limiter.RetryNever, 0), tier: quota, tokens: 10, quota: 0},
			{ep: "a", cost: 5, want: allow(0, 1000*ms), tier: none, tokens: 5, quota: 5},
			{ep: "a", cost: 0, want: allow(0, 1000*ms), tier: none, tokens: 5, quota: 5}, // cost 0 fits a full quota
			{ep: "a", cost: 1, want: deny(0, 1000*ms, 1000*ms), tier: quota, tokens: 5, quota: 5},
		}},
		{"quota per tenant shared by its endpoints, bucket per endpoint", tierPolicy, []tierStep{
			{ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 10},
			{ep: "b", cost: 5, want: allow(0, 1000*ms), tier: none, tokens: 5, quota: 15},
			{tenant: 1, ep: "a", cost: 1, want: allow(9, 2*ms), tier: none, tokens: 9, quota: 1},
			{ep: "b", cost: 1, want: deny(0, 1000*ms, 1000*ms), tier: quota, tokens: 5, quota: 15},
		}},
		{"a clock behind: the bucket clamps, the quota counts in its older window", tierPolicy, []tierStep{
			{at: 1000, ep: "a", cost: 10, want: allow(0, 20*ms), tier: none, tokens: 0, quota: 10},
			{at: 999, ep: "a", cost: 1, want: deny(0, 2*ms, 20*ms), tier: bucket, tokens: 0, quota: 0},
			{at: 999, ep: "b", cost: 3, want: allow(7, 6*ms), tier: none, tokens: 7, quota: 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t, tt.policy)
			tenants := [2]string{uniqueTenant(t), uniqueTenant(t)}
			w := tt.policy.QuotaWindow.Milliseconds()
			for i, st := range tt.steps {
				tenant := tenants[st.tenant]
				now := time.UnixMilli(t0 + st.at)
				have, tier, err := s.allow(context.Background(), limiter.Request{
					Tenant: tenant, Endpoint: st.ep, Cost: st.cost, Now: now,
				})
				want := st.want
				want.Source, want.At = s.source, now
				if err != nil || have != want || tier != st.tier {
					t.Fatalf("step %d (t0%+d ms, %s, cost %d): have %+v tier %v, %v; want %+v tier %v",
						i, st.at, st.ep, st.cost, have, tier, err, want, st.tier)
				}
				b, ok := s.bucket(t, tenant, st.ep)
				q := s.quota(t, tenant, (t0+st.at)/w)
				if !ok || b.Tokens != st.tokens || q != st.quota {
					t.Fatalf("step %d (t0%+d ms, %s, cost %d): bucket %+v (exists %v), quota %d; want tokens %v, quota %d",
						i, st.at, st.ep, st.cost, b, ok, q, st.tokens, st.quota)
				}
			}
		})
	}

	t.Run("Allow refuses bad requests", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t, tierPolicy)
		tenant := uniqueTenant(t)
		now := time.UnixMilli(t0)
		for _, tt := range []struct {
			name string
			have limiter.Request
		}{
			{"negative cost", limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: -1, Now: now}},
			{"brace in tenant", limiter.Request{Tenant: "a{b", Endpoint: "ep", Cost: 1, Now: now}},
			{"endpoint naming a quota key", limiter.Request{Tenant: tenant, Endpoint: "quota:5", Cost: 1, Now: now}},
		} {
			if d, err := s.lim.Allow(context.Background(), tt.have); !errors.Is(err, limiter.ErrBadRequest) {
				t.Errorf("%s: have %+v, %v; want an error wrapping ErrBadRequest", tt.name, d, err)
			}
		}
		want := allow(9, 2*ms)
		want.Source, want.At = s.source, now
		if d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: now}); err != nil || d != want {
			t.Errorf("good request: have %+v, %v; want %+v", d, err, want)
		}
	})
}

// TestTwoTierRedisTTL checks the PEXPIRE of both keys: the quota key gets the window plus
// WindowKeySlack when a request counts, the bucket key its refill time on every call.
func TestTwoTierRedisTTL(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.TwoTierPolicy{Bucket: limiter.BucketPolicy{Rate: 1, Burst: 60}, Quota: 2, QuotaWindow: time.Hour}
	tt, err := limiter.NewRedisTwoTier(c, p, limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenant := uniqueTenant(t)
	now := time.UnixMilli(t0)
	bkey, qkey := limiter.KeyFor(tenant, "ep"), limiter.QuotaKey(tenant, t0/time.Hour.Milliseconds())
	pttl := func(key string) time.Duration {
		d, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		return d
	}
	// PTTL counts down in real time from the TTL just written: allow 1 s between write and read.
	inRange := func(have, want time.Duration) bool { return have > want-time.Second && have <= want }
	for i, st := range []struct {
		cost    int64
		allowed bool
	}{{1, true}, {1, true}, {1, false}, {100, false}} {
		d, err := tt.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: now})
		if err != nil || d.Allowed != st.allowed {
			t.Fatalf("step %d cost %d: %+v, %v; want allowed %v", i, st.cost, d, err, st.allowed)
		}
		if have := pttl(bkey); !inRange(have, p.Bucket.TTL()) {
			t.Errorf("step %d: bucket PTTL %v, want in (%v, %v]", i, have, p.Bucket.TTL()-time.Second, p.Bucket.TTL())
		}
		if have := pttl(qkey); !inRange(have, p.QuotaTTL()) {
			t.Errorf("step %d: quota PTTL %v, want in (%v, %v]", i, have, p.QuotaTTL()-time.Second, p.QuotaTTL())
		}
	}
	// A denied request alone creates no quota key.
	other := uniqueTenant(t)
	if d, err := tt.Allow(ctx, limiter.Request{Tenant: other, Endpoint: "ep", Cost: 100, Now: now}); err != nil || d.Allowed {
		t.Fatalf("cost 100: %+v, %v; want denied", d, err)
	}
	if n, err := c.Exists(ctx, limiter.QuotaKey(other, t0/time.Hour.Milliseconds())).Result(); err != nil || n != 0 {
		t.Errorf("quota key after a denial only: EXISTS = %d, %v; want 0", n, err)
	}
}
