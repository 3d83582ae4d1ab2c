package engine

import (
	"context"
	"testing"

	"ratelab/scenarios"
)

// TestRedisClockJudgedAtRedisTime: with clock: redis the script decides at Redis's time, which
// a jittered network moves by up to tens of milliseconds from the client's start time. One
// worker decides one request at a time, so the checker sees the limiter's own order: judged at
// the time the script used, the exact Lua bucket leaves no overspend and no false deny; judged at
// the client's time, the jitter reads as both.
func TestRedisClockJudgedAtRedisTime(t *testing.T) {
	t.Parallel()
	spec, err := scenarios.Parse("redis-clock", []byte(`
name: redis-clock
duration: 3s
load: {rate: 150, concurrency: 1, max_inflight: 64}
tenants: {count: 1}
policy: {rate: 30, burst: 1}
limiter: {kind: token-bucket, clock: redis, timeout: 2s}
cluster: {primaries: 1, replicas: 0}
faults:
  - {at: 0s, kind: latency, target: all, delay: 15ms, jitter: 14ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Summary.Overspend
	if res.Summary.Outcomes.Denied == 0 || res.Summary.Outcomes.Errors != 0 {
		t.Fatalf("outcomes %+v: want a limited run without errors", res.Summary.Outcomes)
	}
	if o.Requests != 0 || o.FalseDenies != 0 {
		t.Errorf("overspend %+v: judged at Redis's time, serial decisions of the exact bucket conform", o)
	}
}
