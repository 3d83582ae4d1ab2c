package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"ratelab/limiter"
)

// slPolicy: at most 5 units in any 100 ms.
var slPolicy = limiter.SlidingLogPolicy{Window: 100 * ms, Limit: 5}

func newSlidingLogTwin(t *testing.T) winSubject {
	s, err := limiter.NewSlidingLog(slPolicy)
	if err != nil {
		t.Fatalf("NewSlidingLog(%+v): %v", slPolicy, err)
	}
	return winSubject{lim: s, source: limiter.Local}
}

func newSlidingLogRedis(t *testing.T) winSubject {
	_, c := sharedCluster(t)
	s, err := limiter.NewRedisSlidingLog(c, slPolicy)
	if err != nil {
		t.Fatalf("NewRedisSlidingLog(%+v): %v", slPolicy, err)
	}
	return winSubject{lim: s, source: limiter.Central}
}

func TestSlidingLogSuite(t *testing.T) {
	t.Parallel()
	cases := []winCase{
		{"limit then deny", []winStep{
			{cost: 1, want: allow(4, 100*ms)}, {cost: 1, want: allow(3, 100*ms)}, {cost: 1, want: allow(2, 100*ms)},
			{cost: 1, want: allow(1, 100*ms)}, {cost: 1, want: allow(0, 100*ms)},
			{at: 10, cost: 1, want: deny(0, 90*ms, 90*ms)}, // the oldest entry leaves at t0+100
		}},
		{"entries leave the window one by one", []winStep{
			{cost: 2, want: allow(3, 100*ms)},
			{at: 20, cost: 3, want: allow(0, 100*ms)},
			{at: 50, cost: 1, want: deny(0, 50*ms, 70*ms)},
			{at: 100, cost: 2, want: allow(0, 100*ms)},      // the two at t0 left at t0+100
			{at: 110, cost: 1, want: deny(0, 10*ms, 90*ms)}, // the three at t0+20 leave at t0+120
		}},
		{"no double burst at the window edge", []winStep{
			{at: 99, cost: 5, want: allow(0, 100*ms)},
			{at: 100, cost: 1, want: deny(0, 99*ms, 99*ms)},
		}},
		{"cost above one waits for enough entries to leave", []winStep{
			{cost: 2, want: allow(3, 100*ms)},
			{at: 10, cost: 3, want: allow(0, 100*ms)},
			{at: 20, cost: 3, want: deny(0, 90*ms, 90*ms)}, // the 3rd oldest entry is at t0+10
		}},
		{"cost above limit never passes and adds nothing", []winStep{
			{cost: 6, want: deny(5, limiter.RetryNever, 0)},
			{cost: 5, want: allow(0, 100*ms)},
		}},
		{"cost zero always passes", []winStep{
			{cost: 0, want: allow(5, 0)},
			{cost: 5, want: allow(0, 100*ms)},
			{at: 1, cost: 0, want: allow(0, 99*ms)},
		}},
		{"time going backwards ages nothing out", []winStep{
			{at: 50, cost: 5, want: allow(0, 100*ms)},
			{at: -1000, cost: 1, want: deny(0, 100*ms, 100*ms)}, // decided at t0+50
			{at: 149, cost: 1, want: deny(0, 1*ms, 1*ms)},
			{at: 150, cost: 1, want: allow(4, 100*ms)},
			{at: 100, cost: 1, want: allow(3, 100*ms)}, // decided (and logged) at t0+150
		}},
		{"keys are independent", []winStep{
			{ep: "a", cost: 5, want: allow(0, 100*ms)},
			{ep: "b", cost: 1, want: allow(4, 100*ms)},
			{tenant: 1, ep: "a", cost: 1, want: allow(4, 100*ms)},
			{ep: "a", cost: 1, want: deny(0, 100*ms, 100*ms)},
		}},
	}
	runWinSuite(t, cases, newSlidingLogTwin, newSlidingLogRedis)
}

// TestRedisSlidingLogKeys checks what the script stores: one member per unit allowed, trimmed as
// entries leave the window, with a TTL of window + slack on every add; a denial adds nothing.
func TestRedisSlidingLogKeys(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.SlidingLogPolicy{Window: 20 * time.Second, Limit: 5}
	s, err := limiter.NewRedisSlidingLog(c, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenant := uniqueTenant(t)
	key := limiter.SlidingLogKey(tenant, "ep")
	for i, st := range []struct {
		at, cost   int64
		wantCard   int64
		wantAllows bool
	}{
		{at: 0, cost: 6, wantCard: 0},
		{at: 0, cost: 3, wantCard: 3, wantAllows: true},
		{at: 0, cost: 2, wantCard: 5, wantAllows: true}, // same ms, distinct members
		{at: 10, cost: 1, wantCard: 5},
		{at: 20_000, cost: 4, wantCard: 4, wantAllows: true}, // the five at t0 left
	} {
		d, err := s.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)})
		if err != nil || d.Allowed != st.wantAllows {
			t.Fatalf("step %d: have %+v, %v; want allowed %v", i, d, err, st.wantAllows)
		}
		if n, err := c.ZCard(ctx, key).Result(); err != nil || n != st.wantCard {
			t.Fatalf("step %d: ZCARD %s = %d, %v; want %d", i, key, n, err, st.wantCard)
		}
		if st.wantCard == 0 {
			continue
		}
		if ttl := redisPTTL(t, c, key); ttl <= p.TTL()-time.Second || ttl > p.TTL() {
			t.Fatalf("step %d: PTTL %s = %v, want in (%v, %v]", i, key, ttl, p.TTL()-time.Second, p.TTL())
		}
	}
}

func TestSlidingLogPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have    limiter.SlidingLogPolicy
		wantErr bool
	}{
		{limiter.SlidingLogPolicy{Window: time.Millisecond, Limit: 1}, false},
		{limiter.SlidingLogPolicy{Window: time.Hour, Limit: limiter.MaxSlidingLogLimit}, false},
		{limiter.SlidingLogPolicy{Window: 0, Limit: 1}, true},
		{limiter.SlidingLogPolicy{Window: time.Second, Limit: 0}, true},
		{limiter.SlidingLogPolicy{Window: time.Second, Limit: limiter.MaxSlidingLogLimit + 1}, true},
	} {
		if err := tt.have.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%+v.Validate() = %v, want error %v", tt.have, err, tt.wantErr)
		}
		if _, err := limiter.NewSlidingLog(tt.have); (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, limiter.ErrBadConfig)) {
			t.Errorf("NewSlidingLog(%+v) = %v, want error %v wrapping ErrBadConfig", tt.have, err, tt.wantErr)
		}
	}
	if _, err := limiter.NewRedisSlidingLog(nil, slPolicy); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("NewRedisSlidingLog(nil): %v, want ErrBadConfig", err)
	}
}

// TestSlidingLogTwinMatchesRedis: seeded random sequences (clocks up to 5 s behind), identical
// decisions, and at the end identical log sizes.
func TestSlidingLogTwinMatchesRedis(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	for i, p := range []limiter.SlidingLogPolicy{
		{Window: 100 * ms, Limit: 5},
		{Window: time.Second, Limit: 3},
		{Window: 7 * ms, Limit: 2},
		{Window: time.Minute, Limit: 50},
	} {
		t.Run(fmt.Sprintf("window %v limit %d", p.Window, p.Limit), func(t *testing.T) {
			t.Parallel()
			twin, err := limiter.NewSlidingLog(p)
			if err != nil {
				t.Fatal(err)
			}
			central, err := limiter.NewRedisSlidingLog(c, p, limiter.WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for _, pair := range checkTwinMatches(t, uint64(i+1), twin, central, p.Limit, 5_000) {
				have := twin.Count(limiter.KeyFor(pair[0], pair[1]))
				want, err := c.ZCard(context.Background(), limiter.SlidingLogKey(pair[0], pair[1])).Result()
				if err != nil || have != want {
					t.Errorf("%v: twin holds %d entries, redis %d (%v)", pair, have, want, err)
				}
			}
		})
	}
}

func BenchmarkSlidingLogAllowAt(b *testing.B) {
	s, err := limiter.NewSlidingLog(limiter.SlidingLogPolicy{Window: 100 * ms, Limit: 1000})
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
