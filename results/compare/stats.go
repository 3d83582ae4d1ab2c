package compare

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// The statistics are golang.org/x/perf/benchmath's AssumeNothing, what benchstat uses: the
// median with a distribution-free confidence interval from order statistics, and a two-sided
// Mann-Whitney U test (exact for small samples, ties included). Only the minimum-runs
// arithmetic below is ratelab's, to say in the output when a verdict cannot be reached.

// sample wraps a copy of xs (benchmath sorts the values it is given).
func sample(xs []float64) *benchmath.Sample {
	return benchmath.NewSample(slices.Clone(xs), &benchmath.DefaultThresholds)
}

// median returns the sample median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return benchmath.AssumeNothing.Summary(sample(xs), 0.95).Center
}

// medianCI returns benchmath's distribution-free confidence interval for the median of xs and
// its actual coverage (at least confidence). A side that runs out of values is infinite: 5
// values cannot give a finite 95% interval.
func medianCI(xs []float64, confidence float64) (lo, hi, coverage float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	s := benchmath.AssumeNothing.Summary(sample(xs), confidence)
	return s.Lo, s.Hi, s.Confidence
}

// mannWhitneyP is the two-sided p-value of the U test that a and b come from one distribution.
func mannWhitneyP(a, b []float64) float64 {
	return benchmath.AssumeNothing.Compare(sample(a), sample(b)).P
}

// minRunsFor returns the least number of values per side for which a two-sided U test can reach
// p < alpha at all (5 at alpha 0.05): with fewer, even two samples that do not overlap are not
// significant. With equal sizes n the smallest p is 2 / C(2n, n).
func minRunsFor(alpha float64) int {
	for n := 1; n <= 64; n++ {
		if 2/binom(2*n, n) <= alpha {
			return n
		}
	}
	return 65
}

// minRunsForCI returns the least number of values whose median has a finite interval at
// confidence (6 at 95%).
func minRunsForCI(confidence float64) int {
	xs := make([]float64, 0, 64)
	for n := 1; n < 64; n++ {
		xs = append(xs, float64(n))
		if lo, hi, _ := medianCI(xs, confidence); !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
			return n
		}
	}
	return 64
}

// binom is C(n, k) as a float64.
func binom(n, k int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k))
}
