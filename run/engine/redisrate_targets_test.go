package engine

import (
	"context"
	"testing"
	"time"

	"ratelab/scenarios"
)

// TestRedisRateWithinItsEnvelope runs go-redis/redis_rate, an implementation no one here wrote,
// without a fault through the built-in in-the-wild trace (12 s of Zipf 1.2 hot tenants at 50/s
// burst 100) on a real cluster: the judge must find it within its envelope, false denies at most
// 1e-3 of decisions. (A judge in whole milliseconds that counted every refusal after an
// overspend as false found 2.5e-4 to 7e-3 on this trace, the more the busier the machine; the
// rule is tested alone in run/check, TestOneEarlyTokenIsCountedOnce.) Overspend is held to 5e-4
// of allowed, not the target's 1e-4: redis_rate's own float clock lets a request through a few
// µs early about once in 10,000 (docs/limiters.md), one request in a run of this length.
func TestRedisRateWithinItsEnvelope(t *testing.T) {
	t.Parallel()
	spec, err := scenarios.Builtin("in-the-wild")
	if err != nil {
		t.Fatal(err)
	}
	spec.Limiter.Kind, spec.Limiter.Clock = scenarios.KindRedisRate, scenarios.ClockRedis
	spec.Limiter.Timeout = scenarios.Duration(500 * time.Millisecond) // -race on 2 cores
	none := 0
	spec.Cluster.Replicas = &none
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	o := s.Overspend
	perDecision := float64(o.FalseDenies) / float64(s.Load.Completed)
	t.Logf("redis-rate: %d decisions, %d allowed, overspend %d (ratio %.2g), false denies %d (%.2g of decisions), %d errors",
		s.Load.Completed, s.Outcomes.Allowed, o.Requests, o.Ratio, o.FalseDenies, perDecision, s.Outcomes.Errors)
	if s.Outcomes.Allowed < 1000 || s.Outcomes.Denied < 100 {
		t.Fatalf("allowed %d, denied %d: the trace must saturate its hot tenants to judge anything", s.Outcomes.Allowed, s.Outcomes.Denied)
	}
	if perDecision > 1e-3 {
		t.Errorf("false denies %d of %d decisions (%.2g): want <= 1e-3", o.FalseDenies, s.Load.Completed, perDecision)
	}
	if o.Ratio > 5e-4 {
		t.Errorf("overspend ratio %.2g (%d of %d allowed): want <= 5e-4 (target 1e-4)", o.Ratio, o.Requests, s.Outcomes.Allowed)
	}
}
