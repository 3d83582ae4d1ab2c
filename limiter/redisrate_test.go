package limiter_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/run/check"
)

// TestRedisRateKeepsItsEnvelope drives go-redis/redis_rate (the real module, on the shared
// cluster) one request at a time on one key, faster than it refills, and judges every decision
// at its At, to the nanosecond, by the exact token bucket of the same rate and burst: nothing
// beyond the residue its float clock allows. The envelope runs on a nanosecond clock here (a
// bucket whose "milliseconds" are nanoseconds, at a millionth of the rate): redis_rate decides
// at Redis's TIME in microseconds, and the engine's whole-millisecond judge leaves a residue.
func TestRedisRateKeepsItsEnvelope(t *testing.T) {
	ns, ms := judgeRedisRate(t, 300*time.Millisecond)
	// redis_rate keeps tat in seconds since 2017 as a double (about 3.1e8 s: one ulp is 2^-24 s),
	// so each debit of T = 1 ms rounds by up to half an ulp: over n allowed requests the bucket
	// can drift by n * 2^-25 s / T tokens, and each whole token of drift (or its start) shows
	// as one overspend and one false deny. Anything beyond is a different envelope.
	drift := float64(ns.Allowed) * math.Ldexp(1, -25) / 1e-3
	// At is recovered as tat - reset_after from the key and the reply, and Redis's Lua writes
	// both numbers with 14 significant digits: tat (about 3.1e8 s) to 10 µs. A decision made
	// within those 10 µs of a token's arrival cannot be judged exactly; at 1,000 tokens/s that is
	// about one in a hundred token arrivals, so 1% of the allowed requests is the At's share.
	quantum := int64(math.Ceil(0.01 * float64(ns.Allowed)))
	limit := int64(drift) + 1 + quantum
	if ns.OverspendRequests > limit || ns.FalseDenies > limit+1 {
		t.Fatalf("judged at the nanosecond: overspend %d, false denies %d of %d decisions (float drift and At's 10 µs allow %d): redis_rate's GCRA is not the (rate, burst) bucket, or At is not its time",
			ns.OverspendRequests, ns.FalseDenies, ns.Allowed+ns.Denied, limit)
	}
	if ns.Denied == 0 || ns.Allowed < 20 {
		t.Fatalf("allowed %d, denied %d: the test never emptied the bucket", ns.Allowed, ns.Denied)
	}
	t.Logf("at the nanosecond: overspend %d, false denies %d of %d; at the millisecond rounded up (the engine's judge): overspend %d, false denies %d",
		ns.OverspendRequests, ns.FalseDenies, ns.Allowed+ns.Denied, ms.OverspendRequests, ms.FalseDenies)
}

// judgeRedisRate decides on one key for about d and returns the envelope's totals judged at each
// decision's At to the microsecond, and to the millisecond rounded up (as the engine judges).
func judgeRedisRate(t *testing.T, d time.Duration) (us, ms check.Totals) {
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 1000, Burst: 20}
	rr, err := limiter.NewRedisRate(c, p, limiter.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l := rr.Limit(); l.Rate != 1000 || l.Burst != 20 || l.Period != time.Second {
		t.Fatalf("Limit() = %+v, want 1000 per 1s burst 20", l)
	}
	usPolicy := limiter.BucketPolicy{Rate: p.Rate / 1e6, Burst: p.Burst} // per "ms" = per ns
	usCheck := check.NewBucket(1, func(int) limiter.BucketPolicy { return usPolicy })
	usCheck.SetReorderWindow(100_000_000, nil)
	msCheck := check.NewBucket(1, func(int) limiter.BucketPolicy { return p })
	msCheck.SetReorderWindow(100, nil)
	tenant := uniqueTenant(t)
	end := time.Now().Add(d)
	for n := 0; time.Now().Before(end) || n < 100; n++ {
		before := time.Now()
		dec, err := rr.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "e", Cost: 1})
		after := time.Now()
		if err != nil {
			t.Fatalf("decision %d: %v", n, err)
		}
		if dec.At.Before(before.Add(-time.Millisecond)) || dec.At.After(after.Add(time.Millisecond)) {
			t.Fatalf("decision %d: At %v outside its call [%v, %v]: not the server's time of this decision", n, dec.At, before, after)
		}
		usCheck.Observe(0, dec.At.UnixNano(), 1, dec.Allowed, dec.Source)
		at := dec.At.Truncate(time.Millisecond)
		if !at.Equal(dec.At) {
			at = at.Add(time.Millisecond)
		}
		msCheck.Observe(0, at.UnixMilli(), 1, dec.Allowed, dec.Source)
	}
	return usCheck.Totals(), msCheck.Totals()
}

// TestRedisRateScriptIsCounted checks that the node hooks' decision-command test knows the
// script redis_rate v10.0.1 sends (its SHA1 and length are pinned in the limiter), and not the
// clock probe sent beside it.
func TestRedisRateScriptIsCounted(t *testing.T) {
	l, _ := sharedCluster(t)
	c := newClusterClient(l.Addrs())
	defer c.Close()
	var decisions, others atomic.Int64
	c.AddHook(countHook{decisions: &decisions, others: &others})
	rr, err := limiter.NewRedisRate(c, limiter.BucketPolicy{Rate: 10, Burst: 5}, limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(context.Background()).Err(); err != nil { // the first call then EVALs
		t.Fatal(err)
	}
	const n = 7
	for range n {
		if _, err := rr.Allow(context.Background(), limiter.Request{Tenant: uniqueTenant(t), Endpoint: "e", Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// n EVALSHAs, one of them answered NOSCRIPT and retried by EVAL: n+1 decision commands.
	if got := decisions.Load(); got != n+1 {
		t.Fatalf("decision commands %d, want %d (EVALSHA per decision + the EVAL after NOSCRIPT)", got, n+1)
	}
	if got := others.Load(); got < 2*n {
		t.Fatalf("other commands %d, want at least the %d GETs and clock probes", got, 2*n)
	}
}

// countHook counts the commands of every pipeline by limiter.IsDecisionCommand.
type countHook struct{ decisions, others *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if limiter.IsDecisionCommand(c) {
				h.decisions.Add(1)
			} else {
				h.others.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

func TestRedisRateLimitMapping(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		want     string
		wantFail bool
	}{
		{rate: 100, want: "100 req/s (burst 7)"},
		{rate: 0.5, want: "30 req/m (burst 7)"},
		{rate: 1.0 / 3600, want: "1 req/h (burst 7)"},
		{rate: 1.0 / 7200, wantFail: true},
	} {
		l, err := limiter.RedisRateLimit(limiter.BucketPolicy{Rate: tc.rate, Burst: 7})
		if tc.wantFail {
			if err == nil {
				t.Errorf("rate %v: got %v, want an error", tc.rate, l)
			}
			continue
		}
		if err != nil || l.String() != tc.want {
			t.Errorf("rate %v: got %v, %v; want %s", tc.rate, l, err, tc.want)
		}
	}
}
