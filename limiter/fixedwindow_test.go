package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"ratelab/limiter"
)

// fwPolicy: 5 units per 100 ms window; t0 is a multiple of 100 ms, so t0+at sits at offset at
// in window 0 for at < 100.
var fwPolicy = limiter.FixedWindowPolicy{Window: 100 * ms, Limit: 5}

func newFixedWindowTwin(t *testing.T) winSubject {
	f, err := limiter.NewFixedWindow(fwPolicy)
	if err != nil {
		t.Fatalf("NewFixedWindow(%+v): %v", fwPolicy, err)
	}
	return winSubject{lim: f, source: limiter.Local}
}

func newFixedWindowRedis(t *testing.T) winSubject {
	_, c := sharedCluster(t)
	f, err := limiter.NewRedisFixedWindow(c, fwPolicy)
	if err != nil {
		t.Fatalf("NewRedisFixedWindow(%+v): %v", fwPolicy, err)
	}
	return winSubject{lim: f, source: limiter.Central, pttl: func(t *testing.T, key string) time.Duration { return redisPTTL(t, c, key) }}
}

func TestFixedWindowSuite(t *testing.T) {
	t.Parallel()
	cases := []winCase{
		{"limit then deny", []winStep{
			{cost: 1, want: allow(4, 100*ms)}, {cost: 1, want: allow(3, 100*ms)}, {cost: 1, want: allow(2, 100*ms)},
			{cost: 1, want: allow(1, 100*ms)}, {cost: 1, want: allow(0, 100*ms)},
			{at: 10, cost: 1, want: deny(0, 90*ms, 90*ms)}, // retry at the window's end
		}},
		{"window roll-over", []winStep{
			{cost: 5, want: allow(0, 100*ms)},
			{at: 99, cost: 1, want: deny(0, 1*ms, 1*ms)},
			{at: 100, cost: 1, want: allow(4, 100*ms)}, // a new window, a new count
			{at: 150, cost: 4, want: allow(0, 50*ms)},
		}},
		{"double burst at the window edge", []winStep{
			// L units in the window's last ms and L more in the next window's first ms: 2L in 2 ms.
			{at: 99, cost: 1, want: allow(4, 1*ms)}, {at: 99, cost: 1, want: allow(3, 1*ms)},
			{at: 99, cost: 1, want: allow(2, 1*ms)}, {at: 99, cost: 1, want: allow(1, 1*ms)},
			{at: 99, cost: 1, want: allow(0, 1*ms)},
			{at: 100, cost: 1, want: allow(4, 100*ms)}, {at: 100, cost: 1, want: allow(3, 100*ms)},
			{at: 100, cost: 1, want: allow(2, 100*ms)}, {at: 100, cost: 1, want: allow(1, 100*ms)},
			{at: 100, cost: 1, want: allow(0, 100*ms)},
			{at: 100, cost: 1, want: deny(0, 100*ms, 100*ms)},
		}},
		{"cost above one", []winStep{
			{cost: 3, want: allow(2, 100*ms)},
			{cost: 3, want: deny(2, 100*ms, 100*ms)},
			{cost: 2, want: allow(0, 100*ms)},
		}},
		{"cost above limit never passes and counts nothing", []winStep{
			{cost: 6, want: deny(5, limiter.RetryNever, 0)},
			{cost: 5, want: allow(0, 100*ms)},
			{at: 100, cost: 6, want: deny(5, limiter.RetryNever, 0)},
		}},
		{"cost zero always passes", []winStep{
			{cost: 0, want: allow(5, 0)},
			{cost: 5, want: allow(0, 100*ms)},
			{at: 1, cost: 0, want: allow(0, 99*ms)},
		}},
		{"denied requests do not count", []winStep{
			{cost: 4, want: allow(1, 100*ms)},
			{cost: 2, want: deny(1, 100*ms, 100*ms)}, {cost: 2, want: deny(1, 100*ms, 100*ms)},
			{cost: 1, want: allow(0, 100*ms)},
		}},
		{"time going backwards counts in the older window", []winStep{
			{at: 100, cost: 5, want: allow(0, 100*ms)},
			{at: 50, cost: 1, want: allow(4, 50*ms)}, // window 0 is still empty
			{at: 100, cost: 1, want: deny(0, 100*ms, 100*ms)},
			{at: 60, cost: 4, want: allow(0, 40*ms)},
			{at: 70, cost: 1, want: deny(0, 30*ms, 30*ms)},
			{at: 199, cost: 1, want: deny(0, 1*ms, 1*ms)},
		}},
		{"long gaps start a fresh window", []winStep{
			{cost: 5, want: allow(0, 100*ms)},
			{at: 86_400_000 + 30, cost: 1, want: allow(4, 70*ms)},
		}},
		{"keys are independent", []winStep{
			{ep: "a", cost: 5, want: allow(0, 100*ms)},
			{ep: "b", cost: 1, want: allow(4, 100*ms)},
			{tenant: 1, ep: "a", cost: 1, want: allow(4, 100*ms)},
			{ep: "a", cost: 1, want: deny(0, 100*ms, 100*ms)},
		}},
	}
	runWinSuite(t, cases, newFixedWindowTwin, newFixedWindowRedis)
}

// TestRedisFixedWindowKeys checks what the script stores: the count in the window's key with a
// TTL of window + slack on every allowed write, and nothing for a denied request.
func TestRedisFixedWindowKeys(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.FixedWindowPolicy{Window: 60 * time.Second, Limit: 5}
	f, err := limiter.NewRedisFixedWindow(c, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenant := uniqueTenant(t)
	idx := t0 / p.Window.Milliseconds()
	for i, st := range []struct {
		at, cost   int64
		index      int64
		wantCount  int64 // 0: the key must not exist
		wantAllows bool
	}{
		{at: 0, cost: 6, index: idx, wantCount: 0},                    // denied (never): no key
		{at: 0, cost: 3, index: idx, wantCount: 3, wantAllows: true},  // allowed: key and TTL
		{at: 10, cost: 3, index: idx, wantCount: 3},                   // denied: count unchanged
		{at: 20, cost: 2, index: idx, wantCount: 5, wantAllows: true}, // allowed
		{at: 60_000, cost: 1, index: idx + 1, wantCount: 1, wantAllows: true},
	} {
		d, err := f.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)})
		if err != nil || d.Allowed != st.wantAllows {
			t.Fatalf("step %d: have %+v, %v; want allowed %v", i, d, err, st.wantAllows)
		}
		key := limiter.FixedWindowKey(tenant, "ep", st.index)
		n, err := c.Exists(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if st.wantCount == 0 {
			if n != 0 {
				t.Fatalf("step %d: key %s exists, want none", i, key)
			}
			continue
		}
		have, err := c.Get(ctx, key).Int64()
		if err != nil || have != st.wantCount {
			t.Fatalf("step %d: GET %s = %d, %v; want %d", i, key, have, err, st.wantCount)
		}
		// PTTL counts down in real time; allow 1 s between the write and the read.
		if ttl := redisPTTL(t, c, key); ttl <= p.TTL()-time.Second || ttl > p.TTL() {
			t.Fatalf("step %d: PTTL %s = %v, want in (%v, %v]", i, key, ttl, p.TTL()-time.Second, p.TTL())
		}
	}
}

func TestFixedWindowPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have    limiter.FixedWindowPolicy
		wantErr bool
	}{
		{limiter.FixedWindowPolicy{Window: time.Millisecond, Limit: 1}, false},
		{limiter.FixedWindowPolicy{Window: time.Hour, Limit: 1 << 53}, false},
		{limiter.FixedWindowPolicy{Window: 0, Limit: 1}, true},
		{limiter.FixedWindowPolicy{Window: 1500 * time.Microsecond, Limit: 1}, true},
		{limiter.FixedWindowPolicy{Window: -time.Second, Limit: 1}, true},
		{limiter.FixedWindowPolicy{Window: time.Second, Limit: 0}, true},
		{limiter.FixedWindowPolicy{Window: time.Second, Limit: 1<<53 + 1}, true},
	} {
		if err := tt.have.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%+v.Validate() = %v, want error %v", tt.have, err, tt.wantErr)
		}
		if _, err := limiter.NewFixedWindow(tt.have); (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, limiter.ErrBadConfig)) {
			t.Errorf("NewFixedWindow(%+v) = %v, want error %v wrapping ErrBadConfig", tt.have, err, tt.wantErr)
		}
	}
	pf := limiter.WithPolicyFunc(func(_, _ string) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 1, Burst: 1} })
	if _, err := limiter.NewFixedWindow(fwPolicy, pf); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("NewFixedWindow with WithPolicyFunc: %v, want ErrBadConfig", err)
	}
	if _, err := limiter.NewRedisFixedWindow(nil, fwPolicy); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("NewRedisFixedWindow(nil): %v, want ErrBadConfig", err)
	}
}

// TestFixedWindowTwinMatchesRedis: seeded random sequences, identical decisions. The clock never
// runs more than one window behind the newest time, the range in which the twin keeps windows.
func TestFixedWindowTwinMatchesRedis(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	for i, p := range []limiter.FixedWindowPolicy{
		{Window: 100 * ms, Limit: 5},
		{Window: time.Second, Limit: 3},
		{Window: 7 * ms, Limit: 2},
		{Window: time.Minute, Limit: 50},
	} {
		t.Run(fmt.Sprintf("window %v limit %d", p.Window, p.Limit), func(t *testing.T) {
			t.Parallel()
			twin, err := limiter.NewFixedWindow(p)
			if err != nil {
				t.Fatal(err)
			}
			central, err := limiter.NewRedisFixedWindow(c, p, limiter.WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			checkTwinMatches(t, uint64(i+1), twin, central, p.Limit, p.Window.Milliseconds())
		})
	}
}

func TestFixedWindowAllowAt(t *testing.T) {
	t.Parallel()
	f, err := limiter.NewFixedWindow(fwPolicy)
	if err != nil {
		t.Fatal(err)
	}
	key := limiter.KeyFor(uniqueTenant(t), "ep")
	for i, st := range []struct {
		at, cost int64
		want     limiter.Decision
	}{
		{0, 5, allow(0, 100*ms)},
		{1, 1, deny(0, 99*ms, 99*ms)},
		{100, 2, allow(3, 100*ms)},
	} {
		want := st.want
		want.Source, want.At = limiter.Local, time.UnixMilli(t0+st.at)
		if have := f.AllowAt(key, t0+st.at, st.cost); have != want {
			t.Fatalf("step %d: have %+v, want %+v", i, have, want)
		}
	}
	if n, ok := f.Count(key, t0/100+1); !ok || n != 2 {
		t.Errorf("Count(window 1) = %d, %v; want 2, true", n, ok)
	}
	if n, ok := f.Count(key, t0/100); !ok || n != 5 {
		t.Errorf("Count(window 0) = %d, %v; want 5, true", n, ok)
	}
}

func BenchmarkFixedWindowAllowAt(b *testing.B) {
	f, err := limiter.NewFixedWindow(limiter.FixedWindowPolicy{Window: time.Second, Limit: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	key := limiter.KeyFor("bench", "ep")
	b.ReportAllocs()
	now := t0
	for b.Loop() {
		now++
		f.AllowAt(key, now, 1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
