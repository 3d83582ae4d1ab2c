//go:build faults

package simulate

import (
	"math"
	"testing"
	"time"

	"ratelab/results"
)

// solveOff, given the median p99 of the model's own runs at 45% of the host, must give back the
// share of time off those runs had. Its 350 simulated runs take most of a minute under -race,
// so it is in the fault tier with the other tests over ~30 s.
func TestSolveOffMatchesTheP99(t *testing.T) {
	t.Parallel()
	const rate, off, horizon = 9000, 0.02, 2 * time.Second
	host := &Host{CapacityRPS: 20_000, OffFraction: off, OffMeanMs: 2, OffSigma: 0.3}
	base := Config{Primaries: 1, Tenants: 100}
	cal := Calibration{Service: Service{Kind: Constant, MeanUs: 20}, Client: ConstantMs(0.2), Host: host}
	var p99s []float64
	all := results.NewHistogram()
	for seed := uint64(100); seed < 111; seed++ {
		cfg := base
		cfg.Rate, cfg.Service, cfg.Client, cfg.Host = rate, cal.Service, cal.Client, host
		cfg.Horizon, cfg.MaxRequests, cfg.Seed = horizon, 10_000_000, seed
		r, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p99s = append(p99s, r.P99Ms)
		all.Merge(r.hist)
	}
	want := median(p99s)
	g := FitGaps(all)
	solved, err := solveOff(base, cal, rate, horizon, want, g.OffFraction)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("runs with off %.3f: median p99 %.2f ms; closed form off %.4f; solved off %.4f", off, want, g.OffFraction, solved)
	if math.Abs(solved-off)/off > 0.15 {
		t.Errorf("solved off %.4f, want %.3f within 15%%", solved, off)
	}
	if none, err := solveOff(base, cal, rate, horizon, 0.1, g.OffFraction); err != nil || none != 0 {
		t.Error("a p99 below the model's without gaps must solve to no gaps")
	}
}
