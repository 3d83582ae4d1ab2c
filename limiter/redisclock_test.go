package limiter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"ratelab/limiter"
	"ratelab/lua"
)

// TestRedisClockIgnoresGatewaySkew: with WithRedisClock every decision is the one Decide makes
// at Redis's own time, whatever r.Now says (true, 1 h behind, 1 h ahead). Each step reads the
// stored state before and after: the new updated_at is Redis's TIME (it lies between the test's
// wall-clock readings around the call, the machine's one clock), and the decision and the new
// state are exactly Decide(state before, that time). Without the option the +1 h step would
// store a time 1 h ahead and refill the bucket.
func TestRedisClockIgnoresGatewaySkew(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithRedisClock(), limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenant := uniqueTenant(t)
	key := limiter.KeyFor(tenant, "ep")
	denied := 0
	for i, st := range []struct {
		skew time.Duration
		cost int64
	}{
		{0, 10}, {time.Hour, 10}, {-time.Hour, 1}, {time.Hour, 1}, {0, 3}, {-time.Hour, 10}, {time.Hour, 0}, {time.Hour, 11},
	} {
		before, _ := redisState(t, c, key)
		wallBefore := time.Now().UnixMilli()
		have, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.Now().Add(st.skew)})
		wallAfter := time.Now().UnixMilli()
		if err != nil {
			t.Fatalf("step %d (skew %v, cost %d): %v", i, st.skew, st.cost, err)
		}
		after, ok := redisState(t, c, key)
		if !ok || after.LastMs < wallBefore || after.LastMs > wallAfter {
			t.Fatalf("step %d (skew %v): stored updated_at %d (exists %v), want Redis's time in [%d, %d]",
				i, st.skew, after.LastMs, ok, wallBefore, wallAfter)
		}
		wantState, want := limiter.Decide(suitePolicy, before, after.LastMs, st.cost)
		// At is the TIME the script read, which Redis's one clock makes the stored time too.
		want.Source, want.At = limiter.Central, time.UnixMilli(after.LastMs)
		if have != want || after != wantState {
			t.Fatalf("step %d (skew %v, cost %d): have %+v, state %+v; want %+v, state %+v (Decide at Redis's %d from %+v)",
				i, st.skew, st.cost, have, after, want, wantState, after.LastMs, before)
		}
		if !have.Allowed {
			denied++
		}
	}
	// Cost 11 > burst 10 always denies: the sequence surely contains a denial.
	if denied == 0 {
		t.Fatal("no step was denied: the sequence proves nothing about denials")
	}
}

// TestGatewayClockAheadRefillsEarly contrasts the two clock contracts on one skew: a bucket
// (1 token/s, burst 10) drained at the true time, then asked for 10 tokens by a gateway whose
// clock runs 10 s ahead. On the gateway clock the script believes 10 s passed and refills the
// whole burst: 10 tokens of overspend (what the clock-skew scenario measures). On Redis's clock
// less than 10 s passed, so it denies.
func TestGatewayClockAheadRefillsEarly(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 1, Burst: 10}
	tests := []struct {
		name        string
		opts        []limiter.Option
		wantAllowed bool
	}{
		{"gateway clock (default)", nil, true},
		{"redis clock", []limiter.Option{limiter.WithRedisClock()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := limiter.NewRedisTokenBucket(c, p, append(tt.opts, limiter.WithTimeout(5*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			tenant := uniqueTenant(t)
			if d, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 10, Now: time.Now()}); err != nil || !d.Allowed {
				t.Fatalf("drain at the true time: %+v, %v; want allowed", d, err)
			}
			d, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 10, Now: time.Now().Add(10 * time.Second)})
			if err != nil || d.Allowed != tt.wantAllowed {
				t.Fatalf("10 tokens from a gateway 10 s ahead: %+v, %v; want allowed %v", d, err, tt.wantAllowed)
			}
		})
	}
}

// TestTokenBucketScriptClockArg checks the optional ARGV[6] at the script level: absent keeps the
// 5-ARGV contract (ARGV[1] is the time), "redis" takes TIME, anything else is an error reply.
func TestTokenBucketScriptClockArg(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	tenant := uniqueTenant(t)
	run := func(ep string, extra ...any) (any, error) {
		args := append([]any{t0, "0.5", "10", "1", "1000"}, extra...)
		return c.Eval(ctx, lua.TokenBucket, []string{limiter.KeyFor(tenant, ep)}, args...).Result()
	}
	tests := []struct {
		name     string
		ep       string
		extra    []any
		wantLast func(wallBefore, last int64) bool
		wantErr  string
	}{
		{"five ARGV: the gateway's time", "five", nil, func(_, last int64) bool { return last == t0 }, ""},
		{"clock redis: the server's time", "redis", []any{"redis"}, func(wall, last int64) bool { return last >= wall && last < wall+60_000 }, ""},
		{"other clock: refused", "other", []any{"gateway"}, nil, `ARGV[6] (clock) must be absent or "redis"`},
	}
	for _, tt := range tests {
		wall := time.Now().UnixMilli()
		_, err := run(tt.ep, tt.extra...)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		st, ok := redisState(t, c, limiter.KeyFor(tenant, tt.ep))
		if !ok || !tt.wantLast(wall, st.LastMs) {
			t.Errorf("%s: stored %+v (exists %v), wall clock %d", tt.name, st, ok, wall)
		}
	}
}
