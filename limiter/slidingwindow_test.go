package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"ratelab/limiter"
)

// swPolicy: 10 units per 100 ms; the steps use offsets whose share of the window (0.5, 0.4, ...)
// makes the wanted estimates come out exact.
var swPolicy = limiter.SlidingWindowPolicy{Window: 100 * ms, Limit: 10}

func newSlidingWindowTwin(t *testing.T) winSubject {
	s, err := limiter.NewSlidingWindow(swPolicy)
	if err != nil {
		t.Fatalf("NewSlidingWindow(%+v): %v", swPolicy, err)
	}
	return winSubject{lim: s, source: limiter.Local}
}

func newSlidingWindowRedis(t *testing.T) winSubject {
	_, c := sharedCluster(t)
	s, err := limiter.NewRedisSlidingWindow(c, swPolicy)
	if err != nil {
		t.Fatalf("NewRedisSlidingWindow(%+v): %v", swPolicy, err)
	}
	return winSubject{lim: s, source: limiter.Central}
}

func TestSlidingWindowSuite(t *testing.T) {
	t.Parallel()
	cases := []winCase{
		{"limit then deny", []winStep{
			{cost: 10, want: allow(0, 200*ms)},
			// At t0+110 the previous window weighs 0.9: 9 + 1 fits. 110 = 100 to the end + 10.
			{cost: 1, want: deny(0, 110*ms, 200*ms)},
			{at: 110, cost: 1, want: allow(0, 190*ms)},
		}},
		{"the previous window weighs by the share still covered", []winStep{
			{cost: 10, want: allow(0, 200*ms)},
			{at: 150, cost: 5, want: allow(0, 150*ms)},       // 10 * 0.5 + 5
			{at: 150, cost: 1, want: deny(0, 10*ms, 150*ms)}, // at 160: 10 * 0.4 + 5 + 1
			{at: 160, cost: 1, want: allow(0, 140*ms)},
		}},
		{"the previous window decays to nothing", []winStep{
			{cost: 10, want: allow(0, 200*ms)},
			{at: 199, cost: 9, want: allow(0, 101*ms)}, // 10 * 0.01 + 9
			{at: 200, cost: 1, want: allow(0, 200*ms)}, // window 2: 9 * 1 + 1
		}},
		{"cost above limit never passes and counts nothing", []winStep{
			{cost: 11, want: deny(10, limiter.RetryNever, 0)},
			{cost: 10, want: allow(0, 200*ms)},
		}},
		{"cost zero always passes", []winStep{
			{cost: 0, want: allow(10, 0)},
			{cost: 10, want: allow(0, 200*ms)},
			{cost: 0, want: allow(0, 200*ms)},
		}},
		{"denied requests do not count", []winStep{
			{cost: 8, want: allow(2, 200*ms)},
			{cost: 3, want: deny(2, 113*ms, 200*ms)}, // next window at 8 * (1 - 0.125) + 3
			{cost: 3, want: deny(2, 113*ms, 200*ms)},
			{cost: 2, want: allow(0, 200*ms)},
		}},
		{"time going backwards counts in the older windows", []winStep{
			{at: 150, cost: 5, want: allow(5, 150*ms)},
			{at: 50, cost: 10, want: allow(0, 150*ms)}, // window 0 was empty: skew overspends
			{at: 150, cost: 1, want: deny(0, 10*ms, 150*ms)},
		}},
		{"keys are independent", []winStep{
			{ep: "a", cost: 10, want: allow(0, 200*ms)},
			{ep: "b", cost: 1, want: allow(9, 200*ms)},
			{tenant: 1, ep: "a", cost: 1, want: allow(9, 200*ms)},
			{ep: "a", cost: 1, want: deny(0, 110*ms, 200*ms)},
		}},
	}
	runWinSuite(t, cases, newSlidingWindowTwin, newSlidingWindowRedis)
}

// TestRedisSlidingWindowKeys checks what the script stores: the count in the current window's
// key with a TTL of two windows + slack on every allowed write, and nothing for a denial.
func TestRedisSlidingWindowKeys(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.SlidingWindowPolicy{Window: 20 * time.Second, Limit: 5} // t0 starts a window
	s, err := limiter.NewRedisSlidingWindow(c, p)
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
		{at: 0, cost: 6, index: idx},
		{at: 0, cost: 3, index: idx, wantCount: 3, wantAllows: true},
		{at: 10, cost: 3, index: idx, wantCount: 3},
		{at: 20_000, cost: 3, index: idx + 1},                                 // 3 * 1 + 3 > 5: denied, no key
		{at: 30_000, cost: 3, index: idx + 1, wantCount: 3, wantAllows: true}, // 3 * 0.5 + 3
	} {
		d, err := s.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)})
		if err != nil || d.Allowed != st.wantAllows {
			t.Fatalf("step %d: have %+v, %v; want allowed %v", i, d, err, st.wantAllows)
		}
		key := limiter.SlidingWindowKey(tenant, "ep", st.index)
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
		if have, err := c.Get(ctx, key).Int64(); err != nil || have != st.wantCount {
			t.Fatalf("step %d: GET %s = %d, %v; want %d", i, key, have, err, st.wantCount)
		}
		if ttl := redisPTTL(t, c, key); ttl <= p.TTL()-time.Second || ttl > p.TTL() {
			t.Fatalf("step %d: PTTL %s = %v, want in (%v, %v]", i, key, ttl, p.TTL()-time.Second, p.TTL())
		}
	}
}

func TestSlidingWindowPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have    limiter.SlidingWindowPolicy
		wantErr bool
	}{
		{limiter.SlidingWindowPolicy{Window: time.Millisecond, Limit: 1}, false},
		{limiter.SlidingWindowPolicy{Window: 0, Limit: 1}, true},
		{limiter.SlidingWindowPolicy{Window: 2500 * time.Microsecond, Limit: 1}, true},
		{limiter.SlidingWindowPolicy{Window: time.Second, Limit: 0}, true},
	} {
		if err := tt.have.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%+v.Validate() = %v, want error %v", tt.have, err, tt.wantErr)
		}
		if _, err := limiter.NewRedisSlidingWindow(nil, tt.have); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("NewRedisSlidingWindow(nil, %+v) = %v, want ErrBadConfig", tt.have, err)
		}
	}
}

// TestSlidingWindowTwinMatchesRedis: seeded random sequences, identical decisions. The clock
// never runs more than one window behind the newest time (the windows the twin keeps).
func TestSlidingWindowTwinMatchesRedis(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	for i, p := range []limiter.SlidingWindowPolicy{
		{Window: 100 * ms, Limit: 10},
		{Window: time.Second, Limit: 3},
		{Window: 7 * ms, Limit: 2},
		{Window: 30 * ms, Limit: 1},
		{Window: time.Minute, Limit: 50},
	} {
		t.Run(fmt.Sprintf("window %v limit %d", p.Window, p.Limit), func(t *testing.T) {
			t.Parallel()
			twin, err := limiter.NewSlidingWindow(p)
			if err != nil {
				t.Fatal(err)
			}
			central, err := limiter.NewRedisSlidingWindow(c, p, limiter.WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			checkTwinMatches(t, uint64(i+1), twin, central, p.Limit, p.Window.Milliseconds())
		})
	}
}

func BenchmarkSlidingWindowAllowAt(b *testing.B) {
	s, err := limiter.NewSlidingWindow(limiter.SlidingWindowPolicy{Window: time.Second, Limit: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	key := limiter.KeyFor("bench", "ep")
	b.ReportAllocs()
	now := t0
	for b.Loop() {
		now++
		s.AllowAt(key, now, 1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
