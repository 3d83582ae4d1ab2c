//go:build experiment

package compare

import (
	"math/rand/v2"
	"testing"
)

// ciStallNormal and ciStallSlow are p99s (ms) from one CI run of cmd/ratelab's
// TestCompareDetectsInjectedDelay on a shared VM whose CPU stalls now and then: ten runs of the
// normal build twice (BASE, SAME) and ten of the build with 2 ms injected (SLOW).
var (
	ciStallNormal = []float64{0.901, 0.950, 1.006, 1.095, 1.299, 5.987, 6.319, 7.879, 9.199, 18.847,
		0.981, 1.057, 1.076, 3.379, 5.383, 5.483, 7.259, 7.719, 9.927, 10.359}
	ciStallSlow = []float64{3.577, 4.335, 5.531, 7.519, 10.839, 14.223, 14.671, 15.087, 15.839, 29.391}
)

// TestPowerUnderCIStalls sizes TestCompareDetectsInjectedDelay's repetitions: it resamples the
// p99s CI measured and counts how often the U test (mannWhitneyP, the gate's) finds the 2 ms at
// alpha 0.01 with n runs per set, and with looks at 10, 20, 30 and 40 stopping at the first
// significant one (what that test does). An experiment, beside that test in `make compare-power`:
// go test -tags experiment -run TestPowerUnderCIStalls -v ./results/compare
func TestPowerUnderCIStalls(t *testing.T) {
	const trials, alpha = 1000, 0.01
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(from []float64, n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = from[rng.IntN(len(from))]
		}
		return xs
	}
	power := map[int]float64{}
	for _, n := range []int{10, 20, 40} {
		hits := 0
		for range trials {
			if mannWhitneyP(draw(ciStallNormal, n), draw(ciStallSlow, n)) < alpha {
				hits++
			}
		}
		power[n] = float64(hits) / trials
		t.Logf("%d runs per set: the 2 ms is significant in %.1f%% of resamples", n, 100*power[n])
	}
	sequential := 0
	for range trials {
		a, b := draw(ciStallNormal, 40), draw(ciStallSlow, 40)
		for n := 10; n <= 40; n += 10 {
			if mannWhitneyP(a[:n], b[:n]) < alpha {
				sequential++
				break
			}
		}
	}
	t.Logf("looks at 10, 20, 30, 40 runs per set: significant at one of them in %.1f%%", 100*float64(sequential)/trials)
	if power[10] > 0.5 || power[40] < 0.95 || float64(sequential)/trials < 0.95 {
		t.Errorf("power %v, sequential %.3f: want 10 runs short of a reliable verdict under these stalls and 40 (or looks up to 40) at least 95%%",
			power, float64(sequential)/trials)
	}
}
