package workload

import (
	"math"
	"testing"
)

// kahanHarmonic is an independent reference: forward Kahan-compensated summation of i^-theta.
func kahanHarmonic(n uint64, theta float64) float64 {
	var sum, comp float64
	for i := uint64(1); i <= n; i++ {
		y := math.Pow(float64(i), -theta) - comp
		s := sum + y
		comp = (s - sum) - y
		sum = s
	}
	return sum
}

// TestHarmonicMatchesSummation covers both sides of the exact/Euler–Maclaurin cutoff (64).
func TestHarmonicMatchesSummation(t *testing.T) {
	t.Parallel()
	for _, n := range []uint64{1, 2, 10, 63, 64, 65, 1000, 100_000} {
		for _, theta := range []float64{0.01, 0.5, 0.99, 1, 1.01, 1.2, 2, 5, MaxTheta} {
			have, want := Harmonic(n, theta), kahanHarmonic(n, theta)
			if rel := math.Abs(have-want) / want; rel > 1e-14 {
				t.Errorf("Harmonic(%d, %v) = %.17g, want %.17g (rel err %.2g)", n, theta, have, want, rel)
			}
		}
	}
}

// TestHarmonicClosedForms checks huge n, where summation is impossible, against known limits.
func TestHarmonicClosedForms(t *testing.T) {
	t.Parallel()
	const euler = 0.57721566490153286060651209008240243
	tests := []struct {
		name  string
		n     uint64
		theta float64
		want  float64
	}{
		// H(n, 1) = ln n + gamma + 1/(2n) - 1/(12 n^2) + ...
		{"theta 1, n 1e15", 1e15, 1, math.Log(1e15) + euler + 0.5e-15},
		{"theta 1, n 2^64-1", math.MaxUint64, 1, math.Log(math.MaxUint64) + euler},
		// H(n, 2) = pi^2/6 - 1/n + 1/(2n^2) - ...
		{"theta 2, n 2^40", MaxZipfN, 2, math.Pi*math.Pi/6 - 1/float64(MaxZipfN)},
		// zeta(3), Apéry's constant; the tail beyond 2^40 is 1/(2 n^2) ~ 4e-25.
		{"theta 3, n 2^40", 1 << 40, 3, 1.2020569031595942854},
		// H(n, 1/2) = 2 sqrt(n) + zeta(1/2) + 1/(2 sqrt(n)) + ...
		{"theta 0.5, n 1e16", 1e16, 0.5, 2e8 - 1.4603545088095868129 + 0.5e-8},
	}
	for _, tt := range tests {
		if have := Harmonic(tt.n, tt.theta); math.Abs(have-tt.want)/tt.want > 1e-14 {
			t.Errorf("%s: Harmonic = %.17g, want %.17g", tt.name, have, tt.want)
		}
	}
}

func TestZipfProbAndTopShare(t *testing.T) {
	t.Parallel()
	const n = 1000
	for _, theta := range []float64{0.5, 0.99, 1, 1.2, 3} {
		// TopShare(k) must be the running sum of ZipfProb, on both sides of the exact/asymptotic
		// cutoff (64) of the harmonic numbers.
		check := map[uint64]bool{0: true, 1: true, 2: true, 10: true, 63: true, 64: true, 65: true, 500: true, 999: true}
		sum := 0.0
		for k := range uint64(n) {
			if have, want := TopShare(n, theta, k), sum; check[k] && math.Abs(have-want) > 1e-12 {
				t.Fatalf("theta %v: TopShare(k=%d) = %.15f, want sum of ZipfProb %.15f", theta, k, have, want)
			}
			sum += ZipfProb(n, theta, k)
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("theta %v: sum of ZipfProb = %.15f, want 1", theta, sum)
		}
		// Rank k and rank 2k+1 differ by exactly 2^theta.
		if have, want := ZipfProb(n, theta, 0)/ZipfProb(n, theta, 1), math.Pow(2, theta); math.Abs(have-want) > 1e-12 {
			t.Errorf("theta %v: P(0)/P(1) = %v, want %v", theta, have, want)
		}
	}
	edges := []struct {
		name string
		have float64
		want float64 // NaN means want NaN
	}{
		{"prob k >= n", ZipfProb(10, 1, 10), 0},
		{"prob n 0", ZipfProb(0, 1, 0), math.NaN()},
		{"prob theta 0", ZipfProb(10, 0, 0), math.NaN()},
		{"prob theta NaN", ZipfProb(10, math.NaN(), 0), math.NaN()},
		{"prob single rank", ZipfProb(1, 0.99, 0), 1},
		{"top 0", TopShare(10, 1, 0), 0},
		{"top n", TopShare(10, 1, 10), 1},
		{"top beyond n", TopShare(10, 1, 11), 1},
		{"top n 0", TopShare(0, 1, 0), math.NaN()},
		{"top theta negative", TopShare(10, -1, 1), math.NaN()},
		{"harmonic n 0", Harmonic(0, 1), 0},
		{"harmonic theta 0", Harmonic(10, 0), math.NaN()},
	}
	for _, e := range edges {
		if math.IsNaN(e.want) != math.IsNaN(e.have) || (!math.IsNaN(e.want) && e.have != e.want) {
			t.Errorf("%s = %v, want %v", e.name, e.have, e.want)
		}
	}
}

func BenchmarkHarmonicHugeN(b *testing.B) {
	b.ReportAllocs()
	sink := 0.0
	for b.Loop() {
		sink += TopShare(1<<40, 0.99, 100)
	}
	_ = sink
}
