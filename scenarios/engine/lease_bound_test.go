package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/cluster/clustertest"
	"ratelab/workload/trace"
)

// TestLeaseBurstExcessStaysWithinItsBound: a key's traffic comes in bursts separated by idle
// episodes long enough for the central bucket to refill: a small burst (5) that leaves half of
// a 10-token lease unspent through the pause, then a large one (15) that spends those 5 and a
// fresh lease of 10 from the refilled bucket — 15 at once where the exact bucket holds 10.
// Every pair of episodes adds 5 tokens of overspend, so the cumulative count grows past what
// any lease holds, while the burst excess — how far beyond the burst the allowed stream went at
// once — stays 5, within the design's bound (gateways x lease size = 10), and the summary says so.
func TestLeaseBurstExcessStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "bursts.trace")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.NewWriter(f, trace.Header{TenantPrefix: trace.DefaultTenantPrefix, Endpoints: []string{"api"}})
	if err != nil {
		t.Fatal(err)
	}
	const episodes = 8
	for e := range episodes {
		burst := 5
		if e%2 == 1 {
			burst = 15
		}
		for i := range burst {
			at := time.Duration(e)*700*time.Millisecond + time.Duration(i)*200*time.Microsecond
			if err := w.Write(trace.Record{At: at, Tenant: 0, Endpoint: 0, Cost: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	spec, err := scenarios.Parse("bursts", []byte(`
name: bursts
trace: {file: `+file+`}
load: {concurrency: 1, max_inflight: 512}
tenants: {count: 1}
endpoints: [{name: api, weight: 1}]
policy: {rate: 20, burst: 10}
limiter: {kind: lease, timeout: 2s, lease: {size: 10, gateways: 1, ttl: 10s, refresh: 0}}
cluster: {provider: running, primaries: 1, replicas: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Summary.Overspend
	bound := o.Bound.Sources["leases"]
	t.Logf("overspend %d tokens in all; burst excess %+v; bound %+v", o.Tokens, o.BurstExcess, o.Bound)
	if bound != 10 || o.Bound.Within == nil || !*o.Bound.Within || o.BurstExcess.WorstTokens > bound {
		t.Errorf("burst excess %+v, bound %+v: want the worst key within the lease bound of 10", o.BurstExcess, o.Bound)
	}
	if o.BurstExcess.WorstTokens < 4 || float64(o.Tokens) <= bound {
		t.Errorf("overspend %d tokens, burst excess %+v: each large burst should overspend 5, adding up past the bound %v (the cumulative count is not bounded)", o.Tokens, o.BurstExcess, bound)
	}
}
