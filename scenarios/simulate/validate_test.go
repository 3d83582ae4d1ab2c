package simulate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/cluster/clustertest"
)

const validateScenario = `
name: simulate-validate
duration: 3s
tenants: {count: 1000, theta: 0.99}
load: {rate: 1000, pacer: poisson, concurrency: 32, max_inflight: 512}
policy: {rate: 100, burst: 200}
cluster: {provider: running, primaries: 1, replicas: 0}
`

// measure runs the scenario at rate on the running cluster and returns its summary and the
// run directory.
func measure(t *testing.T, state string, rate float64) (*results.Summary, string) {
	t.Helper()
	spec, err := scenarios.Parse("simulate-validate", []byte(validateScenario))
	if err != nil {
		t.Fatal(err)
	}
	spec.Load.Rate = rate
	out := filepath.Join(t.TempDir(), fmt.Sprintf("r%.0f", rate))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := scenarios.Run(ctx, spec, scenarios.RunOptions{Out: out, StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary, out
}

// The model against the machine: calibrate on a low-rate run of one real primary, then predict
// a run at twice the rate and compare. Throughput must agree within 15%. p99 is logged, not
// asserted: the model has no term for the CPU the generator, the client and Redis share (on a
// busy 2-core machine that, not queueing at Redis, sets the tail), so its p99 gap is documented
// in docs/capacity.md instead.
func TestSimulationMatchesMeasurement(t *testing.T) {
	cl := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	spec, err := scenarios.Parse("simulate-validate", []byte(validateScenario))
	if err != nil {
		t.Fatal(err)
	}
	spec.Load.Rate = 500
	cal, _, err := Measure(context.Background(), cl, spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "cluster.json")
	if err := cl.SaveState(state); err != nil {
		t.Fatal(err)
	}
	if cal.Service.MeanUs <= 0 || len(cal.Client) < 2 {
		t.Fatalf("calibration %+v: no service time or client distribution", cal)
	}
	t.Logf("calibration: %s; service %s mean %.1f µs cv %.2f; client p50 %.3f ms", cal.Source, cal.Service.Kind, cal.Service.MeanUs, cal.Service.CV, cal.Client.median())

	// A rate the machine sustains: when other work starves the generator (the summary says it
	// was generator-limited) the run measured the machine, not Redis; try once more at a lower
	// rate before comparing.
	var sum *results.Summary
	rate := 1000.0
	for attempt := 0; attempt < 2; attempt++ {
		sum, _ = measure(t, state, rate)
		if !sum.Load.GeneratorLimited {
			break
		}
		t.Logf("rate %.0f: generator-limited (%s); retrying at half the rate", rate, sum.Load.Note)
		rate /= 2
	}
	if sum.Load.GeneratorLimited {
		t.Fatalf("the machine could not sustain %.0f decisions/s (%s): too busy to validate the model", rate, sum.Load.Note)
	}
	sim, err := Run(Config{Shards: 1, Rate: rate, Tenants: 1000, Theta: 0.99, Service: cal.Service, Client: cal.Client,
		Horizon: 30 * time.Second, MaxRequests: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	gapThr := (sim.ThroughputRPS - sum.Load.AchievedRPS) / sum.Load.AchievedRPS
	gapP99 := (sim.P99Ms - sum.LatencyMs.P99) / sum.LatencyMs.P99
	t.Logf("rate %.0f: measured %.0f/s p50 %.3f ms p99 %.3f ms | simulated %.0f/s p50 %.3f ms p99 %.3f ms, utilisation %.3f | gaps: throughput %+.1f%%, p99 %+.1f%%",
		rate, sum.Load.AchievedRPS, sum.LatencyMs.P50, sum.LatencyMs.P99, sim.ThroughputRPS, sim.P50Ms, sim.P99Ms,
		sim.Shards[0].Utilisation, 100*gapThr, 100*gapP99)
	if math.Abs(gapThr) > 0.15 {
		t.Errorf("throughput: simulated %.0f/s vs measured %.0f/s (%+.1f%%), want within 15%%", sim.ThroughputRPS, sum.Load.AchievedRPS, 100*gapThr)
	}
	if sim.Shards[0].Utilisation >= 0.9 {
		t.Errorf("the model saturates the shard (utilisation %.2f) at a rate the machine sustained", sim.Shards[0].Utilisation)
	}
}
