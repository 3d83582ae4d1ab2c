//go:build experiment

package simulate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/scenarios"
)

// Which gap runs the host's term should come from, on the same runs: each round runs the
// validation scenario at 20, 25, 30 and 35% of the first probe's capacity, then a probe, and
// the runs are judged (as the validation judges its own) with every pair of gap rates below,
// each law side by side. It is what chose the validation's defaults (docs/capacity.md) and
// takes ~8 min of runs that saturate the machine: an experiment (the `experiment` build tag),
//
//	go test -tags experiment -count=1 -timeout 20m -run TestGapRunPairs -v ./studies/simulate
//
// It fails when a pair that brackets its measured rate misses the p99 by more than 15% under
// the default law: the claim the validation's defaults rest on.
func TestGapRunPairs(t *testing.T) {
	cl := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	spec, err := scenarios.Parse("simulate-validate", []byte(ValidateScenario))
	if err != nil {
		t.Fatal(err)
	}
	_, state, err := saveState(cl, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := ValidateOptions{Rounds: 16}.withDefaults()
	n := 0
	run := func(s *scenarios.Spec) measured {
		n++
		m, err := runOn(context.Background(), cl, s, state, filepath.Join(dir, fmt.Sprint(n)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	at := func(rate float64, probe bool) *scenarios.Spec {
		s := *spec
		s.Load.Rate, s.Duration = rate, scenarios.Duration(o.RunLength)
		if probe {
			s.Duration = scenarios.Duration(o.ProbeLength)
		}
		return &s
	}
	p := run(at(o.ProbeRate, true))
	for !saturated(p.sum.Load.Completed, p.sum.Load.OfferedRPS*p.sum.DurationS) && o.ProbeRate < maxProbeRate {
		o.ProbeRate *= 2
		p = run(at(o.ProbeRate, true))
	}
	first := p.answered()
	o.ProbeRate = math.Max(o.ProbeRate, 2*first)
	shares := []float64{0.20, 0.25, 0.30, 0.35}
	byShare := make([][]measured, len(shares))
	var probes []measured
	for r := range o.Rounds {
		line := fmt.Sprintf("round %2d p99", r+1)
		for i, sh := range shares {
			m := run(at(math.Round(sh*first), false))
			byShare[i] = append(byShare[i], m)
			line += fmt.Sprintf(" %.2f", m.sum.LatencyMs.P99)
		}
		probes = append(probes, run(at(o.ProbeRate, true)))
		t.Logf("%s ms at %v of %.0f/s; probe %.0f/s", line, shares, first, probes[r].answered())
	}
	for i, sh := range shares {
		var p99s []float64
		for _, m := range byShare[i] {
			p99s = append(p99s, m.sum.LatencyServedMs.P99)
		}
		t.Logf("%.0f%%: median p99 %.2f ms, pooled %.2f ms", 100*sh, median(p99s), pool(byShare[i]).hist.QuantileMs(99))
	}
	for _, pr := range []struct{ lo, hi, at int }{
		{1, 3, 2}, {0, 2, 1}, {0, 3, 2}, {0, 3, 1}, // bracketing: the validation's default first
		{0, 1, 2}, {1, 2, 3}, {2, 3, 1}, // extrapolating, up and down
	} {
		v, err := compareModel(spec, 1, sides{byShare[pr.lo], byShare[pr.hi], probes, byShare[pr.at]}, math.Round(shares[pr.at]*first), first, o)
		if err != nil {
			t.Fatal(err)
		}
		var laws []string
		for _, l := range v.Laws {
			laws = append(laws, fmt.Sprintf("%s %+.1f%%", l.Law, 100*l.P99Gap))
		}
		name := fmt.Sprintf("%.0f/%.0f%% -> %.0f%%", 100*shares[pr.lo], 100*shares[pr.hi], 100*shares[pr.at])
		t.Logf("%-14s measured p99 %.2f ms, p99 gap %s; throughput %+.1f%%", name, v.MeasuredP99Ms, strings.Join(laws, ", "), 100*v.ThroughputGap)
		if between := pr.lo < pr.at && pr.at < pr.hi; between && math.Abs(v.P99Gap) > 0.15 {
			t.Errorf("%s, between its gap runs: p99 simulated %.2f ms vs measured %.2f ms (%+.1f%%), want within 15%%",
				name, v.SimulatedP99, v.MeasuredP99Ms, 100*v.P99Gap)
		}
	}
}
