package simulate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The interval's order statistics and coverage against the binomial sums by hand, and its
// coverage in fact: over many samples from a known distribution, the true median falls inside
// at least as often as promised.
func TestMedianInterval(t *testing.T) {
	t.Parallel()
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // reversed: medianInterval sorts
		}
		return xs
	}
	for _, tc := range []struct {
		n              int
		lo, hi, covers float64
	}{
		// n = 5: no k > 1 reaches 95%, so the whole range, 1 - 2/32.
		{5, 1, 5, 1 - 2.0/32},
		// n = 16: P(B <= 3) = 697/65536 <= 0.025 < P(B <= 4) = 2517/65536, so the 4th and 13th.
		{16, 4, 13, 1 - 2*697.0/65536},
		{1, 1, 1, 0},
	} {
		lo, hi, c := medianInterval(seq(tc.n), 0.95)
		if lo != tc.lo || hi != tc.hi || math.Abs(c-tc.covers) > 1e-9 {
			t.Errorf("n=%d: [%v, %v] at %.4f, want [%v, %v] at %.4f", tc.n, lo, hi, c, tc.lo, tc.hi, tc.covers)
		}
	}
	if lo, hi, c := medianInterval(nil, 0.95); lo != 0 || hi != 0 || c != 0 {
		t.Errorf("no values: [%v, %v] at %v, want zeros", lo, hi, c)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const trials = 4000
	for _, n := range []int{5, 16, 40} {
		in, promised := 0, 0.0
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = r.ExpFloat64() // median ln 2
			}
			lo, hi, c := medianInterval(xs, 0.95)
			promised = c
			if lo <= math.Ln2 && math.Ln2 <= hi {
				in++
			}
		}
		if got := float64(in) / trials; got < promised-0.015 {
			t.Errorf("n=%d: the median inside %.3f of the time, promised %.3f", n, got, promised)
		}
	}
}
