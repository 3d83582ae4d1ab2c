//go:build experiment

package simulate

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/scenarios"
)

// validateRounds is the validation's rounds unless RATELAB_MODEL_ROUNDS says otherwise: enough
// for the rounds' spread to put the measured median p99 within about the 15% compared (with 16
// the range reached -29%/+49%; docs/capacity.md has the figures).
const validateRounds = 64

// The co-located model against the machine it runs on, between two gap runs (`ratelab simulate
// validate --method gap` as a test), an experiment (the `experiment` build tag: about 16 minutes
// that saturate the machine every few seconds; `make validate-model` runs the held-out validation,
// TestModelPredictsHeldOutRuns): after a first saturation probe, rounds of a low gap run (25% of
// its capacity), a measured run at 30%, a high gap run (35%) and a probe; the model is calibrated
// from the gap runs and probes only, never from the measured runs, its host's share of time off
// interpolated between the gap runs (HostLoad), and run at the measured rate. The medians over the
// rounds of throughput and p99 must agree within 15%: two independent numbers, so the test fails
// when the model is wrong — or when the machine's background changes faster than a round
// (docs/capacity.md has the figures measured).
func TestSimulationMatchesMeasurement(t *testing.T) {
	cl := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	spec, err := scenarios.Parse("simulate-validate", []byte(ValidateScenario))
	if err != nil {
		t.Fatal(err)
	}
	rounds := validateRounds
	if r := os.Getenv("RATELAB_MODEL_ROUNDS"); r != "" {
		if rounds, err = strconv.Atoi(r); err != nil || rounds < 1 {
			t.Fatalf("RATELAB_MODEL_ROUNDS=%q: want a count of rounds >= 1", r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*30*time.Second+2*time.Minute)
	defer cancel()
	v, err := ValidateCoLocated(ctx, cl, spec, ValidateOptions{Rounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", v.Text())
	if len(v.Rounds) != rounds || v.Pooled.Host == nil || v.Pooled.Load == nil || v.Host == nil || v.Pooled.ClientCPUUs <= 0 {
		t.Fatalf("validation %d rounds, pooled host %+v, gap runs %+v, model host %+v, client CPU %.1f µs: incomplete",
			len(v.Rounds), v.Pooled.Host, v.Pooled.Load, v.Host, v.Pooled.ClientCPUUs)
	}
	if lo, hi := v.MeasuredP99Interval[0], v.MeasuredP99Interval[1]; !(lo <= v.MeasuredP99Ms && v.MeasuredP99Ms <= hi && lo > 0) || v.IntervalCoverage < 0.9 {
		t.Errorf("measured median p99 %.2f ms outside its interval %.2f-%.2f ms (coverage %.3f)", v.MeasuredP99Ms, lo, hi, v.IntervalCoverage)
	}
	if len(v.Laws) != 3 || v.Laws[0].Law != DefaultHostLaw || v.Laws[0].P99Gap != v.P99Gap || v.Laws[1].Law == v.Laws[0].Law || v.Laws[2].Law == v.Laws[1].Law || v.Laws[2].Law == v.Laws[0].Law || v.Laws[1].SimulatedP99 <= 0 || v.Laws[2].SimulatedP99 <= 0 {
		t.Errorf("laws side by side %+v: want the model's (%s, p99 gap %+.3f) first, then the other two", v.Laws, DefaultHostLaw, v.P99Gap)
	}
	if math.Abs(v.ThroughputGap) > 0.15 {
		t.Errorf("throughput: simulated %.0f/s vs measured %.0f/s (%+.1f%%), want within 15%%", v.SimulatedRPS, v.MeasuredRPS, 100*v.ThroughputGap)
	}
	// Run without -race (as `make validate-model` does): under it the validation would measure
	// the race detector's cost per decision.
	p99Msg := fmt.Sprintf("p99: simulated %.2f ms vs measured %.2f ms (%+.1f%%; the rounds put the measured median in %.2f-%.2f ms), want within 15%%",
		v.SimulatedP99, v.MeasuredP99Ms, 100*v.P99Gap, v.MeasuredP99Interval[0], v.MeasuredP99Interval[1])
	if math.Abs(v.P99Gap) > 0.15 {
		t.Error(p99Msg)
	} else {
		t.Log(p99Msg + ": met")
	}
}
