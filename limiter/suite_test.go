package limiter_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// subject is one Limiter implementation under the shared suite, with the probes the suite needs
// to look at stored state.
type subject struct {
	lim    limiter.Limiter
	source limiter.Source
	// state returns a key's stored state and whether the key exists.
	state func(t *testing.T, key string) (limiter.BucketState, bool)
	// pttl returns a key's remaining time to live; nil when the implementation never expires keys.
	pttl func(t *testing.T, key string) time.Duration
	// serverTime reads the store's clock (Redis TIME); nil when the implementation has no server
	// and so ignores WithRedisClock.
	serverTime func(t *testing.T) time.Time
}

// newSubjectFunc builds a fresh subject with policy p and options.
type newSubjectFunc func(t *testing.T, p limiter.BucketPolicy, opts ...limiter.Option) subject

func newTwinSubject(t *testing.T, p limiter.BucketPolicy, opts ...limiter.Option) subject {
	b, err := limiter.NewTokenBucket(p, opts...)
	if err != nil {
		t.Fatalf("NewTokenBucket(%+v): %v", p, err)
	}
	return subject{
		lim:    b,
		source: limiter.Local,
		state:  func(_ *testing.T, key string) (limiter.BucketState, bool) { return b.State(key) },
	}
}

func newRedisSubject(t *testing.T, p limiter.BucketPolicy, opts ...limiter.Option) subject {
	_, c := sharedCluster(t)
	// The suite checks decisions and stored state, not latency: a loaded 2-core machine under
	// -race can miss the production deadline (DefaultTimeout), so the subject gets the 5 s the
	// other correctness tests use; a caller's option still wins.
	opts = append([]limiter.Option{limiter.WithTimeout(5 * time.Second)}, opts...)
	b, err := limiter.NewRedisTokenBucket(c, p, opts...)
	if err != nil {
		t.Fatalf("NewRedisTokenBucket(%+v): %v", p, err)
	}
	return subject{
		lim:    b,
		source: limiter.Central,
		state:  func(t *testing.T, key string) (limiter.BucketState, bool) { return redisState(t, c, key) },
		pttl: func(t *testing.T, key string) time.Duration {
			d, err := c.PTTL(context.Background(), key).Result()
			if err != nil {
				t.Fatalf("PTTL %s: %v", key, err)
			}
			return d
		},
		serverTime: func(t *testing.T) time.Time {
			now, err := c.Time(context.Background()).Result()
			if err != nil {
				t.Fatalf("TIME: %v", err)
			}
			return now
		},
	}
}

// redisState reads a bucket as the scripts store it: struct.pack('<dd', tokens, updated_at),
// two little-endian doubles, updated_at a whole number of ms.
func redisState(t *testing.T, c redis.Cmdable, key string) (limiter.BucketState, bool) {
	t.Helper()
	v, err := c.Get(context.Background(), key).Bytes()
	if errors.Is(err, redis.Nil) {
		return limiter.BucketState{}, false
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	if len(v) != 16 {
		t.Fatalf("GET %s = %q: want 16 bytes, two little-endian doubles", key, v)
	}
	tokens := math.Float64frombits(binary.LittleEndian.Uint64(v[:8]))
	last := math.Float64frombits(binary.LittleEndian.Uint64(v[8:]))
	if last != math.Trunc(last) {
		t.Fatalf("GET %s: updated_at %v, want whole milliseconds", key, last)
	}
	return limiter.BucketState{Tokens: tokens, LastMs: int64(last)}, true
}

func TestSuiteTwin(t *testing.T) {
	t.Parallel()
	runSuite(t, newTwinSubject)
}

func TestSuiteRedis(t *testing.T) {
	t.Parallel()
	runSuite(t, newRedisSubject)
}

// t0 is the suite's epoch: an ordinary Unix time in ms.
const t0 = int64(1_700_000_000_000)

const ms = time.Millisecond

// suitePolicy refills 0.5 token per ms (exact in binary, so the wanted numbers are exact) into a
// bucket of 10: empty to full in 20 ms; TTL 1 s (the floor).
var suitePolicy = limiter.BucketPolicy{Rate: 500, Burst: 10}

// step is one request at t0+at ms on tenant tenants[tenant] and endpoint ep (default "ep").
type step struct {
	at     int64
	tenant int
	ep     string
	cost   int64
	want   limiter.Decision // Source and At are filled in from the subject and the request
}

func allow(remaining int64, reset time.Duration) limiter.Decision {
	return limiter.Decision{Allowed: true, Remaining: remaining, ResetAfter: reset}
}

func deny(remaining int64, retry, reset time.Duration) limiter.Decision {
	return limiter.Decision{Remaining: remaining, RetryAfter: retry, ResetAfter: reset}
}

// runSuite proves one Limiter implementation against hand-computed decisions.
func runSuite(t *testing.T, newSubject newSubjectFunc) {
	tests := []struct {
		name   string
		policy limiter.BucketPolicy
		steps  []step
	}{
		{"burst then deny", suitePolicy, []step{
			{cost: 1, want: allow(9, 2*ms)}, {cost: 1, want: allow(8, 4*ms)}, {cost: 1, want: allow(7, 6*ms)},
			{cost: 1, want: allow(6, 8*ms)}, {cost: 1, want: allow(5, 10*ms)}, {cost: 1, want: allow(4, 12*ms)},
			{cost: 1, want: allow(3, 14*ms)}, {cost: 1, want: allow(2, 16*ms)}, {cost: 1, want: allow(1, 18*ms)},
			{cost: 1, want: allow(0, 20*ms)},
			{cost: 1, want: deny(0, 2*ms, 20*ms)},
			{cost: 1, want: deny(0, 2*ms, 20*ms)},
		}},
		{"refill over time", suitePolicy, []step{
			{cost: 10, want: allow(0, 20*ms)},
			{at: 1, cost: 1, want: deny(0, 1*ms, 19*ms)}, // 0.5 token: half a token short
			{at: 2, cost: 1, want: allow(0, 20*ms)},      // 1 token
			{at: 7, cost: 2, want: allow(0, 19*ms)},      // 2.5 tokens, 0.5 left
			{at: 10, cost: 1, want: allow(1, 18*ms)},     // 0.5 + 1.5 = 2, 1 left
		}},
		{"cost above one", suitePolicy, []step{
			{cost: 4, want: allow(6, 8*ms)},
			{cost: 4, want: allow(2, 16*ms)},
			{cost: 4, want: deny(2, 4*ms, 16*ms)}, // 2 tokens short at 0.5/ms
			{at: 4, cost: 4, want: allow(0, 20*ms)},
		}},
		{"cost above capacity never passes and debits nothing", suitePolicy, []step{
			{cost: 11, want: deny(10, limiter.RetryNever, 0)},
			{cost: 10, want: allow(0, 20*ms)},
			{at: 1000, cost: 11, want: deny(10, limiter.RetryNever, 0)},
		}},
		{"cost zero always passes", suitePolicy, []step{
			{cost: 10, want: allow(0, 20*ms)},
			{cost: 0, want: allow(0, 20*ms)},
		}},
		{"time going backwards refills nothing", suitePolicy, []step{
			{cost: 10, want: allow(0, 20*ms)},
			{at: -1000, cost: 1, want: deny(0, 2*ms, 20*ms)},
			{at: -1, cost: 1, want: deny(0, 2*ms, 20*ms)},
			// 2 ms after t0 (the stored time, not -1000): exactly one token.
			{at: 2, cost: 1, want: allow(0, 20*ms)},
			{at: 1, cost: 1, want: deny(0, 2*ms, 20*ms)},
		}},
		{"long gaps refill only up to the burst", suitePolicy, []step{
			{cost: 10, want: allow(0, 20*ms)},
			{at: 86_400_000, cost: 1, want: allow(9, 2*ms)},
			{at: 86_400_000 + 365*86_400_000, cost: 0, want: allow(10, 0)},
		}},
		{"fractional rate", limiter.BucketPolicy{Rate: 1, Burst: 2}, []step{
			{cost: 2, want: allow(0, 2000*ms)},
			{at: 500, cost: 1, want: deny(0, 500*ms, 1500*ms)},
			{at: 1000, cost: 1, want: allow(0, 2000*ms)},
			{at: 4000, cost: 3, want: deny(2, limiter.RetryNever, 0)},
		}},
		{"retry and reset round up to whole ms", limiter.BucketPolicy{Rate: 2000, Burst: 10}, []step{
			{cost: 9, want: allow(1, 5*ms)},        // 9 missing tokens at 2/ms: 4.5 ms -> 5
			{cost: 2, want: deny(1, 1*ms, 5*ms)},   // 1 token short: 0.5 ms -> 1
			{cost: 4, want: deny(1, 2*ms, 5*ms)},   // 3 tokens short: 1.5 ms -> 2
			{at: 1, cost: 3, want: allow(0, 5*ms)}, // 1 + 2 = 3 tokens
		}},
		{"keys are independent", suitePolicy, []step{
			{ep: "a", cost: 10, want: allow(0, 20*ms)},
			{ep: "b", cost: 1, want: allow(9, 2*ms)},
			{tenant: 1, ep: "a", cost: 1, want: allow(9, 2*ms)},
			{ep: "a", cost: 1, want: deny(0, 2*ms, 20*ms)},
			{tenant: 1, ep: "a", cost: 9, want: allow(0, 20*ms)},
			{ep: "b", cost: 9, want: allow(0, 20*ms)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t, tt.policy)
			tenants := [2]string{uniqueTenant(t), uniqueTenant(t)}
			for i, st := range tt.steps {
				ep := st.ep
				if ep == "" {
					ep = "ep"
				}
				now := time.UnixMilli(t0 + st.at)
				have, err := s.lim.Allow(context.Background(), limiter.Request{
					Tenant: tenants[st.tenant], Endpoint: ep, Cost: st.cost, Now: now,
				})
				want := st.want
				want.Source, want.At = s.source, now // the gateway clock: decided at the request's Now
				if err != nil || have != want {
					t.Fatalf("step %d (t0%+d ms, %s, cost %d): have %+v, %v; want %+v", i, st.at, ep, st.cost, have, err, want)
				}
			}
		})
	}

	t.Run("stored time never moves backwards", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t, suitePolicy)
		tenant := uniqueTenant(t)
		key := limiter.KeyFor(tenant, "ep")
		for i, st := range []struct {
			at       int64
			wantLast int64
			wantTok  float64
		}{
			{at: 0, wantLast: 0, wantTok: 9},
			{at: -5000, wantLast: 0, wantTok: 8},
			{at: 3, wantLast: 3, wantTok: 8.5},
			{at: 1, wantLast: 3, wantTok: 7.5},
		} {
			if _, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0 + st.at)}); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			have, ok := s.state(t, key)
			want := limiter.BucketState{Tokens: st.wantTok, LastMs: t0 + st.wantLast}
			if !ok || have != want {
				t.Fatalf("step %d (t0%+d ms): stored %+v (exists %v), want %+v", i, st.at, have, ok, want)
			}
		}
	})

	t.Run("denied requests store the refilled state", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t, suitePolicy)
		tenant := uniqueTenant(t)
		key := limiter.KeyFor(tenant, "ep")
		for i, st := range []struct {
			at, cost int64
			want     limiter.BucketState
		}{
			{0, 10, limiter.BucketState{Tokens: 0, LastMs: t0}},
			{1, 1, limiter.BucketState{Tokens: 0.5, LastMs: t0 + 1}},  // denied, refilled
			{3, 11, limiter.BucketState{Tokens: 1.5, LastMs: t0 + 3}}, // denied (never), refilled
			{4, 2, limiter.BucketState{Tokens: 0, LastMs: t0 + 4}},    // allowed
		} {
			if _, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)}); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if have, ok := s.state(t, key); !ok || have != st.want {
				t.Fatalf("step %d (t0%+d ms, cost %d): stored %+v (exists %v), want %+v", i, st.at, st.cost, have, ok, st.want)
			}
		}
	})

	t.Run("TTL set on every write", func(t *testing.T) {
		t.Parallel()
		p := limiter.BucketPolicy{Rate: 1, Burst: 60} // TTL: 60 s to refill from empty
		s := newSubject(t, p)
		if s.pttl == nil {
			t.Skip("this implementation never expires keys")
		}
		tenant := uniqueTenant(t)
		key := limiter.KeyFor(tenant, "ep")
		for i, st := range []struct {
			at, cost int64
		}{{0, 1}, {0, 61}, {-10_000, 1}, {0, 100}, {5, 0}} {
			if _, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)}); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			// PTTL counts down in real time from the TTL just written; the window allows 1 s of
			// wall-clock time between the write and the read.
			if have := s.pttl(t, key); have <= p.TTL()-time.Second || have > p.TTL() {
				t.Fatalf("step %d (t0%+d ms, cost %d): PTTL %v, want in (%v, %v]", i, st.at, st.cost, have, p.TTL()-time.Second, p.TTL())
			}
		}
	})

	t.Run("bad requests are refused", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t, suitePolicy)
		tenant := uniqueTenant(t)
		now := time.UnixMilli(t0)
		for _, tt := range []struct {
			name string
			have limiter.Request
		}{
			{"negative cost", limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: -1, Now: now}},
			{"open brace in tenant", limiter.Request{Tenant: "a{b", Endpoint: "ep", Cost: 1, Now: now}},
			{"close brace in tenant", limiter.Request{Tenant: "a}b", Endpoint: "ep", Cost: 1, Now: now}},
			{"time before the epoch", limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(-5)}},
		} {
			if d, err := s.lim.Allow(context.Background(), tt.have); !errors.Is(err, limiter.ErrBadRequest) {
				t.Errorf("%s: have %+v, %v; want an error wrapping ErrBadRequest", tt.name, d, err)
			}
		}
		// A zero Now means time.Now(): decided, not refused.
		if d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "now", Cost: 1}); err != nil || !d.Allowed {
			t.Errorf("zero Now: have %+v, %v; want allowed", d, err)
		}
	})

	t.Run("decided at the request's time", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t, suitePolicy)
		tenant := uniqueTenant(t)
		// A time between two milliseconds: At is Now itself, not the millisecond the bucket used.
		now := time.UnixMilli(t0).Add(123456 * time.Nanosecond)
		if d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: now}); err != nil || !d.At.Equal(now) {
			t.Errorf("Now %v: have %+v, %v; want At = Now", now, d, err)
		}
		// A zero Now is time.Now, read to the millisecond.
		before := time.Now().UnixMilli()
		d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "zero", Cost: 1})
		after := time.Now().UnixMilli()
		if at := d.At.UnixMilli(); err != nil || at < before || at > after || d.At.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("zero Now: have %+v, %v; want At a whole millisecond in [%d, %d]", d, err, before, after)
		}
	})

	t.Run("redis clock: decided at the server's time", func(t *testing.T) {
		t.Parallel()
		s := newSubject(t, suitePolicy, limiter.WithRedisClock())
		tenant := uniqueTenant(t)
		key := limiter.KeyFor(tenant, "ep")
		// Gateway clocks an hour off either way: the decision's time is the server's all the same.
		for i, st := range []struct {
			skew time.Duration
			cost int64
		}{{time.Hour, 10}, {-time.Hour, 1}, {0, 11}, {time.Hour, 0}} {
			now := time.Now().Add(st.skew)
			if s.serverTime == nil {
				// No server: the option does not apply and the gateway's clock decides.
				if d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: now}); err != nil || !d.At.Equal(now) {
					t.Fatalf("step %d (skew %v): have %+v, %v; want At = Now %v", i, st.skew, d, err, now)
				}
				continue
			}
			before := s.serverTime(t).UnixMilli()
			d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: now})
			after := s.serverTime(t).UnixMilli()
			if at := d.At.UnixMilli(); err != nil || at < before || at > after || !d.At.Equal(time.UnixMilli(at)) {
				t.Fatalf("step %d (skew %v, cost %d): have %+v, %v; want At a whole millisecond of Redis TIME in [%d, %d]",
					i, st.skew, st.cost, d, err, before, after)
			}
			// The key's stored time is the one the decision was made at (the server's clock only
			// moves forward, so the clamp changes nothing).
			if stored, ok := s.state(t, key); !ok || stored.LastMs != d.At.UnixMilli() {
				t.Fatalf("step %d: stored %+v (exists %v), want updated_at = At %d", i, stored, ok, d.At.UnixMilli())
			}
		}
	})

	t.Run("policy per request", func(t *testing.T) {
		t.Parallel()
		big := limiter.BucketPolicy{Rate: 500, Burst: 20}
		s := newSubject(t, suitePolicy, limiter.WithPolicyFunc(func(_, endpoint string) limiter.BucketPolicy {
			switch endpoint {
			case "big":
				return big
			case "broken":
				return limiter.BucketPolicy{Rate: 0, Burst: 1}
			}
			return suitePolicy
		}))
		tenant := uniqueTenant(t)
		now := time.UnixMilli(t0)
		for _, tt := range []struct {
			ep   string
			cost int64
			want limiter.Decision
		}{
			{"big", 20, allow(0, 40*ms)},
			{"small", 20, deny(10, limiter.RetryNever, 0)},
			{"small", 10, allow(0, 20*ms)},
		} {
			want := tt.want
			want.Source, want.At = s.source, now
			if have, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: tt.ep, Cost: tt.cost, Now: now}); err != nil || have != want {
				t.Errorf("%s cost %d: have %+v, %v; want %+v", tt.ep, tt.cost, have, err, want)
			}
		}
		if d, err := s.lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "broken", Cost: 1, Now: now}); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("broken policy: have %+v, %v; want an error wrapping ErrBadConfig", d, err)
		}
	})
}
