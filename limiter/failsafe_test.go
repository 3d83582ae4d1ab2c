package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"ratelab/limiter"
)

// funcLimiter adapts a function to limiter.Limiter and counts its calls: the fake store of the
// FailSafe unit tests (pure logic; the Redis behaviour is tested against a real node).
type funcLimiter struct {
	f     func(ctx context.Context, r limiter.Request) (limiter.Decision, error)
	calls atomic.Int64
}

func (l *funcLimiter) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	l.calls.Add(1)
	return l.f(ctx, r)
}

// failing returns a limiter that always fails with err.
func failing(err error) *funcLimiter {
	return &funcLimiter{f: func(context.Context, limiter.Request) (limiter.Decision, error) { return limiter.Decision{}, err }}
}

// blocking returns a limiter that waits for its context to end and fails with its error, as
// RedisTokenBucket does on a paused node.
func blocking() *funcLimiter {
	return &funcLimiter{f: func(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
		<-ctx.Done()
		return limiter.Decision{}, fmt.Errorf("limiter: token bucket %s: %w", limiter.KeyFor(r.Tenant, r.Endpoint), ctx.Err())
	}}
}

// storeReply is an error reply as go-redis surfaces it (a type with RedisError()).
type storeReply string

func (e storeReply) Error() string { return string(e) }
func (storeReply) RedisError()     {}

// centralAllow is what the fake store answers when it works.
var centralAllow = limiter.Decision{Allowed: true, Remaining: 7, ResetAfter: 300 * ms, Source: limiter.Central}

// failPolicy returns a policy function giving every endpoint p.
func failPolicy(p limiter.FailPolicy) func(string) limiter.FailPolicy {
	return func(string) limiter.FailPolicy { return p }
}

// basePolicy is the endpoints' bucket policy: 10 tokens/s, burst 4. At LocalFraction 0.5 the
// emergency bucket is 5 tokens/s (0.005 per ms), burst 2.
func basePolicy(string, string) limiter.BucketPolicy { return limiter.BucketPolicy{Rate: 10, Burst: 4} }

func TestFailModeText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have limiter.FailMode
		want string
	}{{limiter.FailModeOpen, "open"}, {limiter.FailModeClosed, "closed"}, {limiter.FailModeLocal, "local"}} {
		if s := tt.have.String(); s != tt.want {
			t.Errorf("FailMode(%d).String() = %q, want %q", tt.have, s, tt.want)
		}
		text, err := tt.have.MarshalText()
		var back limiter.FailMode
		if err != nil || string(text) != tt.want || back.UnmarshalText(text) != nil || back != tt.have {
			t.Errorf("FailMode %v text round trip: %q, %v -> %v", tt.have, text, err, back)
		}
	}
	for _, bad := range []string{"", "Open", "fail-open", "deny"} {
		if _, err := limiter.ParseFailMode(bad); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("ParseFailMode(%q) error = %v, want ErrBadConfig", bad, err)
		}
	}
	if _, err := limiter.FailMode(3).MarshalText(); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("FailMode(3).MarshalText error = %v, want ErrBadConfig", err)
	}
}

func TestFailPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		have   limiter.FailPolicy
		wantOK bool
	}{
		{"zero value: open, inner timeout", limiter.FailPolicy{}, true},
		{"closed with budget", limiter.FailPolicy{Mode: limiter.FailModeClosed, Budget: 5 * ms}, true},
		{"local half", limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 0.5}, true},
		{"local whole", limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 1}, true},
		{"open ignores fraction", limiter.FailPolicy{LocalFraction: -3}, true},
		{"negative budget", limiter.FailPolicy{Budget: -ms}, false},
		{"unknown mode", limiter.FailPolicy{Mode: 3}, false},
		{"local zero fraction", limiter.FailPolicy{Mode: limiter.FailModeLocal}, false},
		{"local fraction above 1", limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 1.5}, false},
		{"local NaN fraction", limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: nan()}, false},
	}
	for _, tt := range tests {
		err := tt.have.Validate()
		if (err == nil) != tt.wantOK || err != nil && !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("%s: Validate(%+v) = %v, want ok %v (errors wrap ErrBadConfig)", tt.name, tt.have, err, tt.wantOK)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestNewFailSafeRefusesBadConfig(t *testing.T) {
	t.Parallel()
	inner := failing(nil)
	pol := failPolicy(limiter.FailPolicy{})
	nodeOf := func(limiter.Request) string { return "n" }
	tests := []struct {
		name   string
		inner  limiter.Limiter
		policy func(string) limiter.FailPolicy
		opts   []limiter.FailSafeOption
	}{
		{"nil inner", nil, pol, nil},
		{"nil policy function", inner, nil, nil},
		{"breaker without node function", inner, pol, []limiter.FailSafeOption{limiter.WithBreaker(limiter.NewBreaker(0, 0), nil)}},
		{"node function without breaker", inner, pol, []limiter.FailSafeOption{limiter.WithBreaker(nil, nodeOf)}},
	}
	for _, tt := range tests {
		if f, err := limiter.NewFailSafe(tt.inner, nil, tt.policy, tt.opts...); !errors.Is(err, limiter.ErrBadConfig) || f != nil {
			t.Errorf("%s: NewFailSafe = %v, %v; want nil, ErrBadConfig", tt.name, f, err)
		}
	}
}

// TestFailSafeModeByErrorKind: every kind of store failure is decided by the endpoint's mode with
// a nil error, and reported once, with its kind, to WithOnFailure.
func TestFailSafeModeByErrorKind(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("limiter: token bucket rl:{t}:ep: %w", err) }
	failures := []struct {
		kind limiter.ErrorKind
		err  error
	}{
		{limiter.KindTimeout, wrap(context.DeadlineExceeded)},
		{limiter.KindMoved, wrap(storeReply("MOVED 3999 127.0.0.1:7001"))},
		{limiter.KindAsk, wrap(storeReply("ASK 3999 127.0.0.1:7001"))},
		{limiter.KindTryAgain, wrap(storeReply("TRYAGAIN Multiple keys request during rehashing of slot"))},
		{limiter.KindClusterDown, wrap(storeReply("CLUSTERDOWN The cluster is down"))},
		{limiter.KindNoScript, wrap(storeReply("NOSCRIPT No matching script. Please use EVAL."))},
		{limiter.KindConn, wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})},
		{limiter.KindOther, wrap(fmt.Errorf("%w: reply 3 values, want 4", limiter.ErrBadReply))},
	}
	modes := []struct {
		policy limiter.FailPolicy
		want   limiter.Decision
	}{
		{limiter.FailPolicy{Mode: limiter.FailModeOpen}, limiter.Decision{Allowed: true, Source: limiter.FailOpen}},
		{limiter.FailPolicy{Mode: limiter.FailModeClosed}, limiter.Decision{RetryAfter: time.Second, Source: limiter.FailClosed}},
		// A fresh key in the emergency bucket (5/s, burst 2): 2 -> 1 token, full again in 1/0.005 ms.
		// The bucket decides on the gateway clock (At is the request's Now); fail open and fail
		// closed use no clock (At zero).
		{limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 0.5},
			limiter.Decision{Allowed: true, Remaining: 1, ResetAfter: 200 * ms, Source: limiter.Local, At: time.UnixMilli(t0)}},
	}
	for _, m := range modes {
		for _, fl := range failures {
			t.Run(m.policy.Mode.String()+"/"+fl.kind.String(), func(t *testing.T) {
				t.Parallel()
				var reported []limiter.ErrorKind
				f, err := limiter.NewFailSafe(failing(fl.err), basePolicy, failPolicy(m.policy),
					limiter.WithOnFailure(func(_ limiter.Request, k limiter.ErrorKind) { reported = append(reported, k) }))
				if err != nil {
					t.Fatal(err)
				}
				have, err := f.Allow(context.Background(), limiter.Request{Tenant: "t", Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
				want := m.want
				// The answer carries the failure: its kind, and whether the store may have
				// debited all the same (a timeout only, among these).
				want.Failure = limiter.Failure{Failed: true, Kind: fl.kind, MayHaveDebited: fl.kind == limiter.KindTimeout}
				if err != nil || have != want {
					t.Errorf("Allow on %v = %+v, %v; want %+v, nil", fl.err, have, err, want)
				}
				if len(reported) != 1 || reported[0] != fl.kind {
					t.Errorf("WithOnFailure got %v, want [%v]", reported, fl.kind)
				}
			})
		}
	}
}

// TestFailSafeLocalBucket: the emergency bucket runs at LocalFraction of the endpoint's rate and
// burst (burst at least 1), per key, and refills at the scaled rate.
func TestFailSafeLocalBucket(t *testing.T) {
	t.Parallel()
	type step struct {
		at     int64 // ms after t0
		tenant string
		want   limiter.Decision
	}
	local := func(allowed bool, remaining int64, retry, reset time.Duration) limiter.Decision {
		return limiter.Decision{Allowed: allowed, Remaining: remaining, RetryAfter: retry, ResetAfter: reset, Source: limiter.Local}
	}
	tests := []struct {
		name     string
		base     limiter.BucketPolicy
		fraction float64
		steps    []step
	}{
		{"half of 10/s burst 5 is 5/s burst 2", limiter.BucketPolicy{Rate: 10, Burst: 5}, 0.5, []step{
			{0, "a", local(true, 1, 0, 200*ms)},
			{0, "a", local(true, 0, 0, 400*ms)},
			{0, "a", local(false, 0, 200*ms, 400*ms)},
			{0, "b", local(true, 1, 0, 200*ms)},         // another key has its own bucket
			{100, "a", local(false, 0, 100*ms, 300*ms)}, // 0.5 tokens
			{200, "a", local(true, 0, 0, 400*ms)},
		}},
		{"a tenth of burst 5 is still 1 token", limiter.BucketPolicy{Rate: 10, Burst: 5}, 0.1, []step{
			{0, "a", local(true, 0, 0, 1000*ms)},
			{0, "a", local(false, 0, 1000*ms, 1000*ms)},
			{1000, "a", local(true, 0, 0, 1000*ms)},
		}},
		{"fraction 1 is the policy itself", limiter.BucketPolicy{Rate: 1000, Burst: 2}, 1, []step{
			{0, "a", local(true, 1, 0, 1*ms)},
			{0, "a", local(true, 0, 0, 2*ms)},
			{0, "a", local(false, 0, 1*ms, 2*ms)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := func(string, string) limiter.BucketPolicy { return tt.base }
			f, err := limiter.NewFailSafe(failing(context.DeadlineExceeded), base,
				failPolicy(limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: tt.fraction}))
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tt.steps {
				now := time.UnixMilli(t0 + st.at)
				have, err := f.Allow(context.Background(), limiter.Request{Tenant: st.tenant, Endpoint: "ep", Cost: 1, Now: now})
				want := st.want
				want.At = now // the emergency bucket decides on the gateway clock
				if err != nil || answerOf(have) != want {
					t.Fatalf("step %d (t0%+d ms, tenant %s): have %+v, %v; want %+v", i, st.at, st.tenant, have, err, st.want)
				}
			}
		})
	}
}

// TestFailSafePassesThrough: success passes unchanged; errors that say nothing about the store
// come back as errors, are not reported as failures and never open a breaker. A misconfigured
// fail policy is an error too, but only after the store failure was counted.
func TestFailSafePassesThrough(t *testing.T) {
	t.Parallel()
	req := limiter.Request{Tenant: "t", Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
	timeout := fmt.Errorf("limiter: token bucket rl:{t}:ep: %w", context.DeadlineExceeded)
	tests := []struct {
		name        string
		inner       *funcLimiter
		policy      limiter.FailPolicy
		base        limiter.PolicyFunc
		want        limiter.Decision
		wantErr     error // nil: want a nil error
		wantCalls   int64 // of the inner limiter
		storeFailed bool  // reported to WithOnFailure and counted by the breaker (threshold 1)
	}{
		{"success", &funcLimiter{f: func(context.Context, limiter.Request) (limiter.Decision, error) { return centralAllow, nil }},
			limiter.FailPolicy{Mode: limiter.FailModeClosed}, nil, centralAllow, nil, 1, false},
		{"bad request from the store", failing(fmt.Errorf("%w: cost -1", limiter.ErrBadRequest)),
			limiter.FailPolicy{}, nil, limiter.Decision{}, limiter.ErrBadRequest, 1, false},
		{"bad config from the store", failing(fmt.Errorf("limiter: policy function: %w", limiter.ErrBadConfig)),
			limiter.FailPolicy{}, nil, limiter.Decision{}, limiter.ErrBadConfig, 1, false},
		{"negative budget: store not asked", failing(nil),
			limiter.FailPolicy{Budget: -ms}, nil, limiter.Decision{}, limiter.ErrBadConfig, 0, false},
		{"unknown mode on failure", failing(timeout),
			limiter.FailPolicy{Mode: 9}, nil, limiter.Decision{}, limiter.ErrBadConfig, 1, true},
		{"local without a fraction on failure", failing(timeout),
			limiter.FailPolicy{Mode: limiter.FailModeLocal}, basePolicy, limiter.Decision{}, limiter.ErrBadConfig, 1, true},
		{"local without a base policy on failure", failing(timeout),
			limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 0.5}, nil, limiter.Decision{}, limiter.ErrBadConfig, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			br := limiter.NewBreaker(1, time.Second)
			var failures atomic.Int64
			f, err := limiter.NewFailSafe(tt.inner, tt.base, failPolicy(tt.policy),
				limiter.WithBreaker(br, func(limiter.Request) string { return "n" }),
				limiter.WithOnFailure(func(limiter.Request, limiter.ErrorKind) { failures.Add(1) }))
			if err != nil {
				t.Fatal(err)
			}
			have, err := f.Allow(context.Background(), req)
			if have != tt.want || (tt.wantErr == nil) != (err == nil) || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Allow = %+v, %v; want %+v, %v", have, err, tt.want, tt.wantErr)
			}
			if n := tt.inner.calls.Load(); n != tt.wantCalls {
				t.Errorf("inner called %d times, want %d", n, tt.wantCalls)
			}
			wantFailures, wantState := int64(0), limiter.BreakerClosed
			if tt.storeFailed {
				wantFailures, wantState = 1, limiter.BreakerOpen
			}
			if n, s := failures.Load(), br.State("n"); n != wantFailures || s != wantState {
				t.Errorf("failures reported %d, breaker %s; want %d, %s", n, s, wantFailures, wantState)
			}
		})
	}
}

// TestFailSafeBudget: a store that never answers costs exactly the endpoint's budget (fake time,
// so exact), and the request is decided by the mode; without a budget the inner limiter gets the
// caller's context as is.
func TestFailSafeBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		budget time.Duration
		caller time.Duration // the caller's own deadline; 0: none
		want   time.Duration // how long Allow takes
	}{
		{"5 ms budget", 5 * ms, 0, 5 * ms},
		{"budget below the caller's deadline", 20 * ms, 50 * ms, 20 * ms},
		{"no budget: the caller's deadline", 0, 30 * ms, 30 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.caller > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.caller)
					defer cancel()
				}
				var kinds []limiter.ErrorKind
				inner := blocking()
				f, err := limiter.NewFailSafe(inner, nil, failPolicy(limiter.FailPolicy{Mode: limiter.FailModeOpen, Budget: tt.budget}),
					limiter.WithOnFailure(func(_ limiter.Request, k limiter.ErrorKind) { kinds = append(kinds, k) }))
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				have, err := f.Allow(ctx, limiter.Request{Tenant: "t", Endpoint: "ep", Cost: 1})
				took := time.Since(start)
				want := limiter.Decision{Allowed: true, Source: limiter.FailOpen, Failure: timedOut}
				if err != nil || have != want || took != tt.want {
					t.Errorf("Allow on a silent store = %+v, %v after %v; want %+v, nil after %v", have, err, took, want, tt.want)
				}
				if len(kinds) != 1 || kinds[0] != limiter.KindTimeout || inner.calls.Load() != 1 {
					t.Errorf("failures reported %v after %d inner calls; want [timeout] after 1 (no retry)", kinds, inner.calls.Load())
				}
			})
		})
	}
}

// TestFailSafeCallerContext: a caller that gives up gets its error back and is not held against
// the node; a caller deadline shorter than the budget is decided by mode, still not held against it.
func TestFailSafeCallerContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		want    limiter.Decision
		wantErr error
		wantRep int // failures reported
	}{
		{"cancelled after 1 ms", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(ms, cancel)
			return ctx, cancel
		}, limiter.Decision{}, context.Canceled, 0},
		{"caller deadline 2 ms, budget 5 ms", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2*ms)
		}, limiter.Decision{RetryAfter: time.Second, Source: limiter.FailClosed}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tt.ctx()
				defer cancel()
				br := limiter.NewBreaker(1, time.Second)
				reported := 0
				f, err := limiter.NewFailSafe(blocking(), nil, failPolicy(limiter.FailPolicy{Mode: limiter.FailModeClosed, Budget: 5 * ms}),
					limiter.WithBreaker(br, func(limiter.Request) string { return "n" }),
					limiter.WithOnFailure(func(limiter.Request, limiter.ErrorKind) { reported++ }))
				if err != nil {
					t.Fatal(err)
				}
				have, err := f.Allow(ctx, limiter.Request{Tenant: "t", Endpoint: "ep", Cost: 1})
				if answerOf(have) != tt.want || (tt.wantErr == nil) != (err == nil) || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("Allow = %+v, %v; want %+v, %v", have, err, tt.want, tt.wantErr)
				}
				if reported != tt.wantRep || br.State("n") != limiter.BreakerClosed {
					t.Errorf("reported %d failures, breaker %s; want %d, closed", reported, br.State("n"), tt.wantRep)
				}
			})
		})
	}
}

// TestFailSafeBreaker walks one node through an outage with a fake store and a fake clock: the
// store is asked threshold times, then not at all while the breaker is open (every request
// decided by mode at once), then once per cooldown (the probe), and again for every request once
// a probe succeeds. Requests of an unknown node ("") bypass the breaker.
func TestFailSafeBreaker(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	inner := &funcLimiter{f: func(_ context.Context, r limiter.Request) (limiter.Decision, error) {
		if r.Cost < 0 {
			return limiter.Decision{}, fmt.Errorf("%w: cost %d", limiter.ErrBadRequest, r.Cost)
		}
		if down.Load() {
			return limiter.Decision{}, fmt.Errorf("limiter: token bucket: %w", context.DeadlineExceeded)
		}
		return centralAllow, nil
	}}
	clock := newFakeClock()
	br := limiter.NewBreaker(2, time.Second, limiter.WithBreakerClock(clock.Now))
	var failures, shorts atomic.Int64
	f, err := limiter.NewFailSafe(inner, nil, failPolicy(limiter.FailPolicy{Mode: limiter.FailModeClosed}),
		limiter.WithBreaker(br, func(r limiter.Request) string {
			if r.Tenant == "unmapped" {
				return ""
			}
			return "n1"
		}),
		limiter.WithOnFailure(func(limiter.Request, limiter.ErrorKind) { failures.Add(1) }),
		limiter.WithOnShortCircuit(func(_ limiter.Request, node string) {
			if node != "n1" {
				t.Errorf("short circuit on node %q, want n1", node)
			}
			shorts.Add(1)
		}))
	if err != nil {
		t.Fatal(err)
	}
	closed := limiter.Decision{RetryAfter: time.Second, Source: limiter.FailClosed}
	type step struct {
		name      string
		down      bool
		advance   time.Duration
		tenant    string // default "t"
		cost      int64  // default 1
		n         int    // requests; default 1
		want      limiter.Decision
		wantErr   error
		wantCalls int64 // inner calls so far
		wantFails int64 // failures reported so far
		wantShort int64 // short circuits so far
		wantState string
	}
	steps := []step{
		{name: "healthy", want: centralAllow, wantCalls: 1, wantState: limiter.BreakerClosed},
		{name: "first failure", down: true, want: closed, wantCalls: 2, wantFails: 1, wantState: limiter.BreakerClosed},
		{name: "threshold", down: true, want: closed, wantCalls: 3, wantFails: 2, wantState: limiter.BreakerOpen},
		{name: "open: store not asked", down: true, n: 100, want: closed, wantCalls: 3, wantFails: 2, wantShort: 100, wantState: limiter.BreakerOpen},
		{name: "open: bad request still refused", down: true, cost: -1, wantErr: limiter.ErrBadRequest, wantCalls: 3, wantFails: 2, wantShort: 101, wantState: limiter.BreakerOpen},
		{name: "unmapped node bypasses", down: true, tenant: "unmapped", want: closed, wantCalls: 4, wantFails: 3, wantShort: 101, wantState: limiter.BreakerOpen},
		{name: "failed probe", down: true, advance: time.Second, want: closed, wantCalls: 5, wantFails: 4, wantShort: 101, wantState: limiter.BreakerOpen},
		{name: "re-opened", down: false, n: 10, want: closed, wantCalls: 5, wantFails: 4, wantShort: 111, wantState: limiter.BreakerOpen},
		{name: "bad-request probe tells nothing", advance: time.Second, cost: -1, wantErr: limiter.ErrBadRequest, wantCalls: 6, wantFails: 4, wantShort: 111, wantState: limiter.BreakerHalfOpen},
		{name: "next request probes at once and closes", want: centralAllow, wantCalls: 7, wantFails: 4, wantShort: 111, wantState: limiter.BreakerClosed},
		{name: "closed again", n: 10, want: centralAllow, wantCalls: 17, wantFails: 4, wantShort: 111, wantState: limiter.BreakerClosed},
	}
	for _, st := range steps {
		down.Store(st.down)
		clock.Advance(st.advance)
		r := limiter.Request{Tenant: "t", Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
		if st.tenant != "" {
			r.Tenant = st.tenant
		}
		if st.cost != 0 {
			r.Cost = st.cost
		}
		for range max(st.n, 1) {
			have, err := f.Allow(context.Background(), r)
			if answerOf(have) != st.want || (st.wantErr == nil) != (err == nil) || st.wantErr != nil && !errors.Is(err, st.wantErr) {
				t.Fatalf("%s: Allow = %+v, %v; want %+v, %v", st.name, have, err, st.want, st.wantErr)
			}
		}
		if c, fl, sh, s := inner.calls.Load(), failures.Load(), shorts.Load(), br.State("n1"); c != st.wantCalls ||
			fl != st.wantFails || sh != st.wantShort || s != st.wantState {
			t.Fatalf("%s: inner calls %d, failures %d, short circuits %d, breaker %s; want %d, %d, %d, %s",
				st.name, c, fl, sh, s, st.wantCalls, st.wantFails, st.wantShort, st.wantState)
		}
	}
}

// TestFailSafeConcurrentOutage: with many callers during an outage the store is asked at most
// threshold + callers - 1 times before the breaker opens (those already past Allow when it
// opened), however many requests follow; every request is still decided.
func TestFailSafeConcurrentOutage(t *testing.T) {
	t.Parallel()
	const (
		callers   = 8
		perCaller = 500
		threshold = 3
	)
	inner := failing(fmt.Errorf("limiter: token bucket: %w", context.DeadlineExceeded))
	br := limiter.NewBreaker(threshold, time.Hour)
	var decided, failures atomic.Int64
	f, err := limiter.NewFailSafe(inner, basePolicy, failPolicy(limiter.FailPolicy{Mode: limiter.FailModeLocal, LocalFraction: 0.5}),
		limiter.WithBreaker(br, func(limiter.Request) string { return "n" }),
		limiter.WithOnFailure(func(limiter.Request, limiter.ErrorKind) { failures.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range perCaller {
				r := limiter.Request{Tenant: "t" + strconv.Itoa(g), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0 + int64(i))}
				if d, err := f.Allow(context.Background(), r); err != nil || d.Source != limiter.Local {
					t.Errorf("caller %d request %d: %+v, %v; want a Local decision", g, i, d, err)
					return
				}
				decided.Add(1)
			}
		})
	}
	wg.Wait()
	if n := inner.calls.Load(); n < threshold || n > threshold+callers-1 || failures.Load() != n {
		t.Errorf("store asked %d times, %d failures reported; want between %d and %d, one failure each",
			n, failures.Load(), threshold, threshold+callers-1)
	}
	if decided.Load() != callers*perCaller || br.State("n") != limiter.BreakerOpen {
		t.Errorf("%d decisions, breaker %s; want %d, open", decided.Load(), br.State("n"), callers*perCaller)
	}
}

// timedOut is the Failure of a fail policy's answer to a store call that timed out: the store
// may have run it all the same.
var timedOut = limiter.Failure{Failed: true, Kind: limiter.KindTimeout, MayHaveDebited: true}

// answerOf is d without its Failure: the answer the caller got, for tests of which answer that is
// (TestFailSafeModeByErrorKind checks the Failure of every kind).
func answerOf(d limiter.Decision) limiter.Decision {
	d.Failure = limiter.Failure{}
	return d
}

// TestFailSafeKeepsAShortWait is the reading of durability wait under fail open: a decision whose
// WAIT came back short became an error even when the script denied it, and fail open allowed
// what the script had denied. A denial debited nothing: it stands, marked unreplicated, and no
// failure is reported. An allowance whose debit is not known replicated is the policy's to
// decide, and may have debited.
func TestFailSafeKeepsAShortWait(t *testing.T) {
	t.Parallel()
	denial := limiter.Decision{Source: limiter.Central, Unreplicated: true}
	short := fmt.Errorf("limiter: token bucket rl:{t}:ep: %w: WAIT 1 50 fell short", limiter.ErrUnreplicated)
	for _, c := range []struct {
		name     string
		d        limiter.Decision
		err      error
		want     limiter.Decision
		reported int
	}{
		{"denied", denial, nil, denial, 0},
		{"allowed", limiter.Decision{}, short, limiter.Decision{Allowed: true, Source: limiter.FailOpen,
			Failure: limiter.Failure{Failed: true, Kind: limiter.KindUnreplicated, MayHaveDebited: true}}, 1},
	} {
		inner := &funcLimiter{f: func(context.Context, limiter.Request) (limiter.Decision, error) { return c.d, c.err }}
		reported := 0
		f, err := limiter.NewFailSafe(inner, nil, failPolicy(limiter.FailPolicy{Mode: limiter.FailModeOpen}),
			limiter.WithOnFailure(func(limiter.Request, limiter.ErrorKind) { reported++ }))
		if err != nil {
			t.Fatal(err)
		}
		have, err := f.Allow(context.Background(), limiter.Request{Tenant: "t", Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
		if err != nil || have != c.want || reported != c.reported {
			t.Errorf("short WAIT, %s: FailSafe answered %+v, %v, %d failures; want %+v, %d", c.name, have, err, reported, c.want, c.reported)
		}
	}
}
