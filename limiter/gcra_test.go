package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// gcraPolicy: T = 2 ms (exact in binary, so the wanted numbers are exact), burst 5: a full burst
// drains in 10 ms.
var gcraPolicy = limiter.GCRAPolicy{Rate: 500, Burst: 5}

func newGCRATwin(t *testing.T) winSubject {
	g, err := limiter.NewGCRA(gcraPolicy)
	if err != nil {
		t.Fatalf("NewGCRA(%+v): %v", gcraPolicy, err)
	}
	return winSubject{lim: g, source: limiter.Local}
}

func newGCRARedis(t *testing.T) winSubject {
	_, c := sharedCluster(t)
	g, err := limiter.NewRedisGCRA(c, gcraPolicy)
	if err != nil {
		t.Fatalf("NewRedisGCRA(%+v): %v", gcraPolicy, err)
	}
	return winSubject{lim: g, source: limiter.Central}
}

func TestGCRASuite(t *testing.T) {
	t.Parallel()
	cases := []winCase{
		{"burst then deny", []winStep{
			{cost: 1, want: allow(4, 2*ms)}, {cost: 1, want: allow(3, 4*ms)}, {cost: 1, want: allow(2, 6*ms)},
			{cost: 1, want: allow(1, 8*ms)}, {cost: 1, want: allow(0, 10*ms)},
			{cost: 1, want: deny(0, 2*ms, 10*ms)},
		}},
		{"one unit per interval after the burst", []winStep{
			{cost: 5, want: allow(0, 10*ms)},
			{at: 1, cost: 1, want: deny(0, 1*ms, 9*ms)},
			{at: 2, cost: 1, want: allow(0, 10*ms)},
			{at: 6, cost: 1, want: allow(1, 8*ms)}, // 4 ms drained two units, one spent
		}},
		{"cost above one", []winStep{
			{cost: 3, want: allow(2, 6*ms)},
			{cost: 3, want: deny(2, 2*ms, 6*ms)},
			{at: 2, cost: 3, want: allow(0, 10*ms)},
		}},
		{"cost above burst never passes and spends nothing", []winStep{
			{cost: 6, want: deny(5, limiter.RetryNever, 0)},
			{cost: 5, want: allow(0, 10*ms)},
			{at: 1000, cost: 6, want: deny(5, limiter.RetryNever, 0)},
		}},
		{"cost zero always passes", []winStep{
			{cost: 0, want: allow(5, 0)},
			{cost: 5, want: allow(0, 10*ms)},
			{cost: 0, want: allow(0, 10*ms)},
		}},
		{"time going backwards gains nothing", []winStep{
			{cost: 5, want: allow(0, 10*ms)},
			{at: -1000, cost: 1, want: deny(0, 2*ms, 10*ms)},
			{at: 2, cost: 1, want: allow(0, 10*ms)},
			{at: 1, cost: 1, want: deny(0, 2*ms, 10*ms)}, // decided at the stored t0+2
		}},
		{"long gaps drain only to the burst", []winStep{
			{cost: 5, want: allow(0, 10*ms)},
			{at: 86_400_000, cost: 1, want: allow(4, 2*ms)},
		}},
		{"keys are independent", []winStep{
			{ep: "a", cost: 5, want: allow(0, 10*ms)},
			{ep: "b", cost: 1, want: allow(4, 2*ms)},
			{tenant: 1, ep: "a", cost: 1, want: allow(4, 2*ms)},
			{ep: "a", cost: 1, want: deny(0, 2*ms, 10*ms)},
		}},
	}
	runWinSuite(t, cases, newGCRATwin, newGCRARedis)
}

// redisGCRAState reads a GCRA hash as the script stores it: tat (%.17g) and updated_at (ms).
func redisGCRAState(t *testing.T, c redis.Cmdable, key string) (limiter.GCRAState, bool) {
	t.Helper()
	v, err := c.HMGet(context.Background(), key, "tat", "updated_at").Result()
	if err != nil {
		t.Fatalf("HMGET %s: %v", key, err)
	}
	if v[0] == nil && v[1] == nil {
		return limiter.GCRAState{}, false
	}
	s0, ok0 := v[0].(string)
	s1, ok1 := v[1].(string)
	tat, err1 := strconv.ParseFloat(s0, 64)
	last, err2 := strconv.ParseInt(s1, 10, 64)
	if !ok0 || !ok1 || err1 != nil || err2 != nil {
		t.Fatalf("HMGET %s = %q: want a float and an integer", key, v)
	}
	return limiter.GCRAState{TAT: tat, LastMs: last}, true
}

// TestGCRAStoredState checks the state both implementations store, denied requests included, and
// the TTL the script sets on every call.
func TestGCRAStoredState(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.GCRAPolicy{Rate: 500, Burst: 5}
	twin, err := limiter.NewGCRA(p)
	if err != nil {
		t.Fatal(err)
	}
	central, err := limiter.NewRedisGCRA(c, p)
	if err != nil {
		t.Fatal(err)
	}
	tenant := uniqueTenant(t)
	ctx := context.Background()
	for i, st := range []struct {
		at, cost int64
		want     limiter.GCRAState
	}{
		{0, 5, limiter.GCRAState{TAT: float64(t0 + 10), LastMs: t0}},
		{-5000, 1, limiter.GCRAState{TAT: float64(t0 + 10), LastMs: t0}},      // denied, clamped
		{3, 9, limiter.GCRAState{TAT: float64(t0 + 10), LastMs: t0 + 3}},      // denied (never)
		{4, 1, limiter.GCRAState{TAT: float64(t0 + 12), LastMs: t0 + 4}},      // allowed
		{100, 0, limiter.GCRAState{TAT: float64(t0 + 100), LastMs: t0 + 100}}, // drained: tat = now
	} {
		r := limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)}
		if _, err := twin.Allow(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := central.Allow(ctx, r); err != nil {
			t.Fatal(err)
		}
		if have, ok := twin.State(limiter.KeyFor(tenant, "ep")); !ok || have != st.want {
			t.Fatalf("step %d: twin stored %+v (exists %v), want %+v", i, have, ok, st.want)
		}
		key := limiter.GCRAKey(tenant, "ep")
		if have, ok := redisGCRAState(t, c, key); !ok || have != st.want {
			t.Fatalf("step %d: redis stored %+v (exists %v), want %+v", i, have, ok, st.want)
		}
		if ttl := redisPTTL(t, c, key); ttl <= p.TTL()-time.Second || ttl > p.TTL() {
			t.Fatalf("step %d: PTTL %v, want in (%v, %v]", i, ttl, p.TTL()-time.Second, p.TTL())
		}
	}
}

func TestGCRAPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have    limiter.GCRAPolicy
		wantErr bool
	}{
		{limiter.GCRAPolicy{Rate: 1, Burst: 1}, false},
		{limiter.GCRAPolicy{Rate: 0.001, Burst: 1000}, false},
		{limiter.GCRAPolicy{Rate: 0, Burst: 1}, true},
		{limiter.GCRAPolicy{Rate: math.NaN(), Burst: 1}, true},
		{limiter.GCRAPolicy{Rate: math.Inf(1), Burst: 1}, true},
		{limiter.GCRAPolicy{Rate: 1, Burst: 0}, true},
		{limiter.GCRAPolicy{Rate: 1, Burst: 1<<53 + 1}, true},
		{limiter.GCRAPolicy{Rate: 1e-12, Burst: 1 << 40}, true}, // drains in far more than 292 years
	} {
		if err := tt.have.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%+v.Validate() = %v, want error %v", tt.have, err, tt.wantErr)
		}
		if _, err := limiter.NewGCRA(tt.have); (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, limiter.ErrBadConfig)) {
			t.Errorf("NewGCRA(%+v) = %v, want error %v wrapping ErrBadConfig", tt.have, err, tt.wantErr)
		}
	}
	if _, err := limiter.NewRedisGCRA(nil, gcraPolicy); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("NewRedisGCRA(nil): %v, want ErrBadConfig", err)
	}
}

// TestGCRATwinMatchesRedis: seeded random sequences (fractional and inexact intervals, clocks up
// to 5 s behind), identical decisions and identical stored states to the bit.
func TestGCRATwinMatchesRedis(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	for i, p := range []limiter.GCRAPolicy{
		{Rate: 500, Burst: 10},
		{Rate: 7, Burst: 3},
		{Rate: 0.37, Burst: 5},
		{Rate: 1234.5, Burst: 100},
		{Rate: 1000.0 / 3, Burst: 1},
		{Rate: 10_000.0 / 86_400, Burst: 7},
	} {
		t.Run(fmt.Sprintf("rate %v burst %d", p.Rate, p.Burst), func(t *testing.T) {
			t.Parallel()
			twin, err := limiter.NewGCRA(p)
			if err != nil {
				t.Fatal(err)
			}
			central, err := limiter.NewRedisGCRA(c, p, limiter.WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for _, pair := range checkTwinMatches(t, uint64(i+1), twin, central, p.Burst, 5_000) {
				have, ok1 := twin.State(limiter.KeyFor(pair[0], pair[1]))
				want, ok2 := redisGCRAState(t, c, limiter.GCRAKey(pair[0], pair[1]))
				if ok1 != ok2 || have != want {
					t.Errorf("%v: twin state %+v (exists %v), redis state %+v (exists %v)", pair, have, ok1, want, ok2)
				}
			}
		})
	}
}

func BenchmarkGCRAAllowAt(b *testing.B) {
	g, err := limiter.NewGCRA(limiter.GCRAPolicy{Rate: 1e6, Burst: 1000})
	if err != nil {
		b.Fatal(err)
	}
	key := limiter.KeyFor("bench", "ep")
	b.ReportAllocs()
	now := t0
	for b.Loop() {
		now++
		g.AllowAt(key, now, 1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
