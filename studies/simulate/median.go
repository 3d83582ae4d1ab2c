package simulate

import (
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// median of xs (xs is reordered).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// medianInterval is a distribution-free confidence interval for the median of the population
// xs were drawn from (xs is reordered), at coverage at least want: the k-th smallest and k-th
// largest of the n values, k the largest with P(Binomial(n, 1/2) < k) <= (1 - want)/2, since
// the median lies below the k-th smallest exactly when fewer than k values fall below it. It
// returns the interval and its coverage, 1 - 2 P(B < k); with too few values for want (n = 5
// reaches 93.75% at most) it returns the whole range and that range's coverage.
func medianInterval(xs []float64, want float64) (lo, hi, coverage float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0
	}
	sort.Float64s(xs)
	b := distuv.Binomial{N: float64(n), P: 0.5}
	k := 1
	for k+1 <= (n+1)/2 && b.CDF(float64(k)) <= (1-want)/2 {
		k++ // P(B < k+1) = P(B <= k)
	}
	return xs[k-1], xs[n-k], 1 - 2*b.CDF(float64(k-1))
}
