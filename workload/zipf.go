package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Zipf parameters.
const (
	// DefaultTheta is the YCSB skew: P(rank k) ∝ 1/(k+1)^0.99.
	DefaultTheta = 0.99
	// MaxTheta bounds the exponent to the range the sampler is tested over. At theta = 64 rank 0
	// already takes all but 5e-20 of the traffic, so larger values describe nothing new.
	MaxTheta = 64.0
	// MaxZipfN is the largest number of ranks, 2^40 (1.1e12). The sampler works in float64: near
	// rank k a rank's acceptance interval is about (1-theta)/k of H(k) (theta < 1), so above ~2^44 it shrinks
	// to a few ulps and rounding biases the draws; 2^40 keeps a margin below that.
	MaxZipfN = uint64(1) << 40
)

// Zipf draws ranks 0..n-1 with P(k) = (k+1)^-theta / H(n, theta), where
// H(n, theta) = sum_{i=1..n} i^-theta is the generalized harmonic number. Any theta > 0 works:
// below 1, at 1 and above 1 (math/rand/v2's Zipf needs s > 1).
//
// Sampling is rejection-inversion (W. Hörmann, G. Derflinger, "Rejection-inversion to generate
// variates from monotone discrete distributions", ACM TOMACS 6(3), 1996), in the form used by
// Apache Commons' ZipfDistribution. Work on 1-based ranks k = 1..n with weight h(k) = k^-theta.
// The hat is the continuous function h(x) = x^-theta with integral
//
//	H(x) = (x^(1-theta) - 1) / (1-theta)      (-> ln x as theta -> 1; computed without the 0/0)
//
// Because h is convex and decreasing, the area under it over [k-1/2, k+1/2] is at least h(k).
// So give rank k the interval (H(k+1/2) - h(k), H(k+1/2)] of length exactly h(k): these
// intervals are disjoint and all lie inside (H(3/2) - h(1), H(n+1/2)]. Draw u uniformly there,
// invert x = H^-1(u), round k = floor(x + 1/2); u lands in rank k's interval with probability
// proportional to h(k) — accept, else draw again. Measured acceptance is >= 0.98 for theta from
// 0.001 to 64 and n from 2 to 2^40, so a draw costs O(1) expected time, a few transcendental calls,
// no tables and no allocation.
// A precomputed squeeze s accepts most points without evaluating H: if k - x <= s the point is
// inside the rank's interval for every k >= 2 (and k = 1's interval reaches the bottom of the range).
//
// A Zipf holds only constants, so it is safe for concurrent use with one *rand.Rand per goroutine.
type Zipf struct {
	n      uint64
	nf     float64 // float64(n)
	theta  float64
	hLow   float64 // H(3/2) - h(1): the bottom of the u range
	hHigh  float64 // H(n + 1/2): the top of the u range
	scheck float64 // the squeeze: accept without testing when k - x <= scheck
}

// NewZipf returns a Zipf distribution over n ranks with exponent theta.
// n must be in [1, MaxZipfN]; theta must be finite and in (0, MaxTheta].
func NewZipf(n uint64, theta float64) (*Zipf, error) {
	if n < 1 || n > MaxZipfN {
		return nil, fmt.Errorf("%w: zipf n %d: must be in [1, 2^40] ranks", ErrInvalid, n)
	}
	if !(theta > 0 && theta <= MaxTheta) { // also rejects NaN
		return nil, fmt.Errorf("%w: zipf theta %v: must be in (0, %v]; %v is the YCSB skew",
			ErrInvalid, theta, MaxTheta, DefaultTheta)
	}
	z := &Zipf{n: n, nf: float64(n), theta: theta}
	z.hLow = z.hIntegral(1.5) - 1
	z.hHigh = z.hIntegral(z.nf + 0.5)
	z.scheck = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z, nil
}

// N is the number of ranks.
func (z *Zipf) N() uint64 { return z.n }

// Theta is the exponent.
func (z *Zipf) Theta() float64 { return z.theta }

// Draw returns a rank in [0, n): rank 0 is the hottest. It allocates nothing.
func (z *Zipf) Draw(r *rand.Rand) uint64 {
	for {
		// r.Float64 is in [0, 1), so u is in (hLow, hHigh].
		u := z.hHigh + r.Float64()*(z.hLow-z.hHigh)
		x := z.hIntegralInverse(u)
		// Round to the nearest 1-based rank and clamp against rounding at both ends.
		kf := math.Floor(x + 0.5)
		if kf < 1 {
			kf = 1
		} else if kf > z.nf {
			kf = z.nf
		}
		if kf-x <= z.scheck || u >= z.hIntegral(kf+0.5)-z.h(kf) {
			return uint64(kf) - 1
		}
	}
}

// h(x) = x^-theta, the unnormalized weight of 1-based rank x.
func (z *Zipf) h(x float64) float64 { return math.Exp(-z.theta * math.Log(x)) }

// hIntegral is H(x) = (x^(1-theta) - 1)/(1-theta) = ln(x) * expm1(t)/t with t = (1-theta)*ln(x);
// the second form is exact as theta -> 1, where H(x) -> ln x.
func (z *Zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1OverX((1-z.theta)*lx) * lx
}

// hIntegralInverse is H^-1(u) = (1 + (1-theta)*u)^(1/(1-theta)) = exp(u * log1p(t)/t) with
// t = (1-theta)*u, again exact as theta -> 1 where H^-1(u) = e^u. t is clamped at -1 (x = 0)
// against rounding at the bottom of the range when theta > 1.
func (z *Zipf) hIntegralInverse(u float64) float64 {
	t := u * (1 - z.theta)
	if t < -1 {
		t = -1
	}
	return math.Exp(log1pOverX(t) * u)
}

// expm1OverX is (e^x - 1)/x, continuous at 0 (third-order Taylor below 1e-8).
func expm1OverX(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x/3*(1+0.25*x))
}

// log1pOverX is ln(1+x)/x, continuous at 0 (third-order Taylor below 1e-8).
func log1pOverX(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}
