package workload

import "math"

// harmonicCutoff is how many leading terms Harmonic sums exactly before switching to the
// Euler–Maclaurin tail. With three Bernoulli corrections the first neglected term is
// |B8/8! f^(7)(M)| = theta(theta+1)...(theta+6) / 1209600 * M^(-theta-7). At M = 64 it is largest
// for small theta (each +1 on theta multiplies it by about (theta+7)/(64 theta) < 1 once
// theta > 0.11) and stays below 2e-18 for every theta in (0, MaxTheta] — while H >= 1 — so the
// result is as accurate as the float64 sums themselves, for 64 math.Pow calls.
const harmonicCutoff = 64

// Harmonic is the generalized harmonic number H(n, theta) = sum_{i=1..n} i^-theta, the
// normalizer of the Zipf distribution. It is exact summation for n <= 64 and, beyond, the exact
// sum of the first 63 terms plus an Euler–Maclaurin expansion of the rest, accurate to ~1e-15
// relative for any n up to 2^64 in constant time. It returns NaN for theta <= 0 or NaN and 0 for
// n = 0.
//
// Euler–Maclaurin, for f(x) = x^-theta and M = 64:
//
//	sum_{i=M..n} f(i) = ∫_M^n f(x)dx + (f(M)+f(n))/2
//	                    + B2/2! (f^(1)(n)-f^(1)(M)) + B4/4! (f^(3)(n)-f^(3)(M)) + B6/6! (f^(5)(n)-f^(5)(M)) + R
//
// with B2/2! = 1/12, B4/4! = -1/720, B6/6! = 1/30240, f^(1)(x) = -theta x^(-theta-1),
// f^(3)(x) = -theta(theta+1)(theta+2) x^(-theta-3), f^(5)(x) = -theta(theta+1)...(theta+4) x^(-theta-5).
// The integral is (n^(1-theta) - M^(1-theta))/(1-theta), evaluated as
// M^(1-theta) * L * expm1((1-theta)L)/((1-theta)L) with L = ln(n/M) so it stays exact at theta = 1
// (where it is ln(n/M)).
func Harmonic(n uint64, theta float64) float64 {
	if !(theta > 0) {
		return math.NaN()
	}
	if n <= harmonicCutoff {
		return harmonicExact(n, theta)
	}
	const m = float64(harmonicCutoff)
	head := harmonicExact(harmonicCutoff-1, theta) // i = 1..M-1
	nf := float64(n)
	l := math.Log(nf / m)
	integral := math.Pow(m, 1-theta) * l * expm1OverX((1-theta)*l)
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	// d(k, x) = theta(theta+1)...(theta+k-1) * x^(-theta-k): |f^(k)(x)|; odd derivatives are negative.
	d := func(k int, x float64) float64 {
		c := 1.0
		for j := 0; j < k; j++ {
			c *= theta + float64(j)
		}
		return c * math.Pow(x, -theta-float64(k))
	}
	tail := integral + (f(m)+f(nf))/2 +
		(-d(1, nf)+d(1, m))/12 -
		(-d(3, nf)+d(3, m))/720 +
		(-d(5, nf)+d(5, m))/30240
	return head + tail
}

// harmonicExact sums i^-theta for i = n down to 1: smallest terms first, so the large early
// terms do not swallow the small ones' low bits.
func harmonicExact(n uint64, theta float64) float64 {
	s := 0.0
	for i := n; i >= 1; i-- {
		s += math.Pow(float64(i), -theta)
	}
	return s
}

// ZipfProb is the exact probability of rank k (0-based) under Zipf(n, theta):
// (k+1)^-theta / H(n, theta). It is 0 for k >= n and NaN for theta <= 0 or NaN, or n = 0.
func ZipfProb(n uint64, theta float64, k uint64) float64 {
	if !(theta > 0) || n == 0 {
		return math.NaN()
	}
	if k >= n {
		return 0
	}
	return math.Pow(float64(k)+1, -theta) / Harmonic(n, theta)
}

// TopShare is the share of traffic on the k hottest ranks under Zipf(n, theta):
// H(k, theta) / H(n, theta). It is 0 for k = 0, 1 for k >= n, and NaN for theta <= 0 or NaN, or n = 0.
func TopShare(n uint64, theta float64, k uint64) float64 {
	if !(theta > 0) || n == 0 {
		return math.NaN()
	}
	if k >= n {
		return 1
	}
	return Harmonic(k, theta) / Harmonic(n, theta)
}
