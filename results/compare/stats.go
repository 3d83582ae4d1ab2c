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
//
// A latency percentile that is not measurable is +Inf: worse than any finite value. The U test
// ranks +Inf as the largest value (ties among them included), so it needs nothing. The median
// interpolates between order statistics, where +Inf makes NaN (0 x Inf); so the medians are
// taken with every +Inf replaced by the largest float64, and a result above the sample's largest
// finite value, which only a +Inf can produce, is +Inf again: the median of {1, +Inf} is +Inf,
// that of {1, 2, +Inf} is 2.

// sample wraps a copy of xs (benchmath sorts the values it is given).
func sample(xs []float64) *benchmath.Sample {
	return benchmath.NewSample(slices.Clone(xs), &benchmath.DefaultThresholds)
}

// infStandIn stands in for +Inf where benchmath's medians would make NaN of it: the largest
// float64, above every latency, so order statistics and the U test rank it as +Inf does, and an
// interpolation between it and a finite value stays finite. WriteBenchfmt writes it too, so
// benchstat's medians count the runs that could not be measured.
const infStandIn = math.MaxFloat64

// finiteSample wraps a copy of xs with +Inf replaced by infStandIn, and returns the largest
// finite value of xs (-Inf when there is none) to map the results back with (unInf).
func finiteSample(xs []float64) (*benchmath.Sample, float64) {
	c := slices.Clone(xs)
	top := math.Inf(-1)
	for i, x := range c {
		if math.IsInf(x, 1) {
			c[i] = infStandIn
		} else {
			top = max(top, x)
		}
	}
	return benchmath.NewSample(c, &benchmath.DefaultThresholds), top
}

// unInf maps a statistic of a finiteSample back: above the largest finite value is +Inf.
func unInf(v, top float64) float64 {
	if v > top {
		return math.Inf(1)
	}
	return v
}

// median returns the sample median of xs (the mean of the middle two for an even count); +Inf
// when the middle holds a value that is not measurable.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s, top := finiteSample(xs)
	return unInf(benchmath.AssumeNothing.Summary(s, 0.95).Center, top)
}

// medianCI returns benchmath's distribution-free confidence interval for the median of xs and
// its actual coverage (at least confidence). A side that runs out of values is infinite: 5
// values cannot give a finite 95% interval. An upper end at a value that is not measurable is
// +Inf too.
func medianCI(xs []float64, confidence float64) (lo, hi, coverage float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), 0
	}
	smp, top := finiteSample(xs)
	s := benchmath.AssumeNothing.Summary(smp, confidence)
	return unInf(s.Lo, top), unInf(s.Hi, top), s.Confidence
}

// mannWhitneyP is the two-sided p-value of the U test that a and b come from one distribution;
// +Inf ranks above every finite value.
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
