package limiter_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
)

// winSubject is one window-algorithm implementation under a window suite.
type winSubject struct {
	lim    limiter.Limiter
	source limiter.Source
	// pttl returns a key's remaining time to live (-2 ns when it does not exist, as go-redis
	// reports it); nil when the implementation never expires keys.
	pttl func(t *testing.T, key string) time.Duration
}

// winStep is one request at t0+at ms on tenant tenants[tenant] and endpoint ep (default "ep").
type winStep struct {
	at     int64
	tenant int
	ep     string
	cost   int64
	want   limiter.Decision // Source and At are filled in from the subject and the request
}

// winCase is a named sequence of steps run on a fresh subject.
type winCase struct {
	name  string
	steps []winStep
}

// runWinCases runs each case on a fresh subject from newSubject, step by step.
func runWinCases(t *testing.T, newSubject func(t *testing.T) winSubject, cases []winCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSubject(t)
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
}

// runWinSuite runs cases over the in-memory twin and the Redis implementation of one algorithm,
// and checks that both refuse bad requests.
func runWinSuite(t *testing.T, cases []winCase, twin, onRedis func(t *testing.T) winSubject) {
	for _, impl := range []struct {
		name string
		new  func(t *testing.T) winSubject
	}{{"twin", twin}, {"redis", onRedis}} {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			runWinCases(t, impl.new, cases)
			t.Run("bad requests are refused", func(t *testing.T) {
				t.Parallel()
				checkBadRequests(t, impl.new(t).lim)
			})
		})
	}
}

// redisPTTL returns a key's PTTL on c.
func redisPTTL(t *testing.T, c redis.Cmdable, key string) time.Duration {
	t.Helper()
	d, err := c.PTTL(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return d
}

// checkBadRequests proves that lim refuses what every limiter refuses.
func checkBadRequests(t *testing.T, lim limiter.Limiter) {
	t.Helper()
	tenant := uniqueTenant(t)
	now := time.UnixMilli(t0)
	for _, tt := range []struct {
		name string
		have limiter.Request
	}{
		{"negative cost", limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: -1, Now: now}},
		{"open brace in tenant", limiter.Request{Tenant: "a{b", Endpoint: "ep", Cost: 1, Now: now}},
		{"time before the epoch", limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(-5)}},
	} {
		if d, err := lim.Allow(context.Background(), tt.have); !errors.Is(err, limiter.ErrBadRequest) {
			t.Errorf("%s: have %+v, %v; want an error wrapping ErrBadRequest", tt.name, d, err)
		}
	}
	if d, err := lim.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "now", Cost: 1}); err != nil || !d.Allowed {
		t.Errorf("zero Now: have %+v, %v; want allowed", d, err)
	}
}

// winPropertyOps is the number of random requests per property sequence.
const winPropertyOps = 2000

// checkTwinMatches applies one seeded random sequence to twin and central in the same order and
// wants identical decisions (but for Source). The clock moves mostly forwards, sometimes not at
// all, sometimes back (never more than maxBack ms behind the newest time so far), sometimes over
// long gaps; costs run from 0 to twice limit. It returns the (tenant, endpoint) pairs it used.
func checkTwinMatches(t *testing.T, seed uint64, twin, central limiter.Limiter, limit, maxBack int64) [][2]string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x3140))
	tenants := []string{uniqueTenant(t), uniqueTenant(t)}
	endpoints := []string{"a", "b", "c", "d", "e"}
	ctx := context.Background()
	now, newest := t0, t0
	allowed, denied := 0, 0
	for op := range winPropertyOps {
		switch x := rng.IntN(100); {
		case x < 10:
		case x < 75:
			now += rng.Int64N(20)
		case x < 87:
			now -= 1 + rng.Int64N(max(maxBack, 1))
		case x < 97:
			now += 100 + rng.Int64N(5_000)
		default:
			now += 3_600_000 + rng.Int64N(30*86_400_000)
		}
		now = max(now, newest-maxBack)
		newest = max(newest, now)
		r := limiter.Request{
			Tenant:   tenants[rng.IntN(len(tenants))],
			Endpoint: endpoints[rng.IntN(len(endpoints))],
			Cost:     randomCost(rng, limit),
			Now:      time.UnixMilli(now),
		}
		have, err1 := twin.Allow(ctx, r)
		want, err2 := central.Allow(ctx, r)
		if err1 != nil || err2 != nil {
			t.Fatalf("seed %d op %d %+v: twin error %v, redis error %v", seed, op, r, err1, err2)
		}
		if have.Source != limiter.Local || want.Source != limiter.Central {
			t.Fatalf("seed %d op %d: sources %v, %v; want local, central", seed, op, have.Source, want.Source)
		}
		have.Source, want.Source = 0, 0
		if have != want {
			t.Fatalf("seed %d op %d (t0%+d ms) %s/%s cost %d: twin %+v, redis %+v",
				seed, op, now-t0, r.Tenant, r.Endpoint, r.Cost, have, want)
		}
		if have.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	// A sequence that never allows or never denies would prove little.
	if allowed == 0 || denied == 0 {
		t.Fatalf("seed %d: %d allowed, %d denied: the sequence does not exercise both outcomes", seed, allowed, denied)
	}
	t.Logf("seed %d: %d requests, %d allowed, identical decisions", seed, winPropertyOps, allowed)
	var pairs [][2]string
	for _, tenant := range tenants {
		for _, ep := range endpoints {
			pairs = append(pairs, [2]string{tenant, ep})
		}
	}
	return pairs
}
