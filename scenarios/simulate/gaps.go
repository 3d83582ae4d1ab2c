package simulate

import (
	"math"

	"ratelab/results"
)

// Gaps is what FitGaps reads from a light-load run's latencies: the share of time the run's
// threads were kept off the CPU, the mean length of those gaps, and the latency of the
// decisions no gap touched.
type Gaps struct {
	// ThresholdMs separates the body from the tail: max(2 ms, 5 x the 10th percentile; the
	// median would move with the tail when gaps touch most decisions).
	ThresholdMs float64 `json:"threshold_ms"`
	// TailShare is the share of latencies above the threshold.
	TailShare float64 `json:"tail_share"`
	// OffFraction, OffMeanMs and OffSigma are Host's (see there).
	OffFraction float64 `json:"off_fraction"`
	OffMeanMs   float64 `json:"off_mean_ms"`
	OffSigma    float64 `json:"off_sigma"`
	// ResidualMeanMs and ResidualK are the tail's residuals (latency minus the body's median):
	// their mean and E[R^2]/E[R]^2 (2 for exponential gaps).
	ResidualMeanMs float64 `json:"residual_mean_ms"`
	ResidualK      float64 `json:"residual_k"`
	// Body is the latency distribution below the threshold, in ms.
	Body Empirical `json:"body"`
}

// minTailShare is the smallest tail FitGaps fits: below it (a quiet machine, or a short run)
// there are too few delayed decisions to estimate a gap length, and the host is taken as
// never off.
const minTailShare = 0.002

// FitGaps reads the host's gaps from the latencies of a run at a rate far below the machine's
// capacity, where no decision waits behind another: a decision is then either answered in a
// round trip (the body) or, when it arrives while the scheduler runs other threads, delayed by
// the rest of that gap. With exponential gaps of mean m the rest is exponential of mean m too,
// so the tail above a threshold T (well above the body) is
//
//	P(latency > T) = p * exp(-(T - b)/m),  E[latency - T | latency > T] = m,
//
// with p the share of time off (PASTA: Poisson arrivals see time averages) and b the body's
// median. Gaps are fitted as lognormal (exponential ones are a special case) from the first two
// moments of the tail's residuals, below.
func FitGaps(lat *results.Histogram) Gaps {
	const steps = 20_000 // quantile grid of 0.005%
	q := make([]float64, steps+1)
	for i := range q {
		q[i] = lat.QuantileMs(100 * float64(i) / steps)
	}
	g := Gaps{ThresholdMs: math.Max(2, 5*q[steps/10])}
	cut := steps + 1 // first grid point above the threshold
	for i, v := range q {
		if v > g.ThresholdMs {
			cut = i
			break
		}
	}
	g.TailShare = float64(steps+1-cut) / float64(steps+1)
	// The body: quantiles below the threshold, rescaled to run from p=0 to p=1.
	top := max(cut-1, 0)
	if top == 0 {
		g.Body = ConstantMs(q[0])
	} else {
		for i := 0; i <= top; i += max(1, top/200) {
			g.Body = append(g.Body, Quantile{P: float64(i) / float64(top), Ms: q[i]})
		}
		if last := g.Body[len(g.Body)-1]; last.P < 1 {
			g.Body = append(g.Body, Quantile{P: 1, Ms: math.Max(last.Ms, q[top])})
		}
	}
	if g.TailShare < minTailShare {
		return g
	}
	// The residuals R = latency - b of the tail. A gap of length G caught at a uniform point
	// leaves R with E[R] = E[G^2]/(2 E[G]) and E[R^2] = E[G^3]/(3 E[G]); for lognormal G
	// (mu, sigma) that is E[R] = exp(mu + 3 sigma^2/2)/2 and E[R^2]/E[R]^2 = (4/3) exp(sigma^2),
	// so k = E[R^2]/E[R]^2 gives sigma^2 = ln(3k/4) (k = 2, sigma^2 = ln 1.5, is as heavy as
	// exponential gaps), and E[R] gives mu. The tail holds only residuals above T - b, so this
	// slightly overstates E[R] when T - b is not small next to it.
	b := g.Body.median()
	var s1, s2 float64
	for _, v := range q[cut:] {
		r := v - b
		s1 += r
		s2 += r * r
	}
	n := float64(steps + 1 - cut)
	g.ResidualMeanMs, g.ResidualK = s1/n, (s2/n)/((s1/n)*(s1/n))
	if !(g.ResidualMeanMs > 0) {
		return g
	}
	sig2 := math.Max(0, math.Log(3*g.ResidualK/4))
	mu := math.Log(2*g.ResidualMeanMs) - 1.5*sig2
	g.OffSigma = math.Sqrt(sig2)
	g.OffMeanMs = math.Exp(mu + sig2/2)
	// Arrivals see the host off a share p of the time (PASTA); the tail caught those whose
	// residual exceeded T - b, which for residuals well above it is nearly all of them.
	g.OffFraction = math.Min(0.95, g.TailShare)
	return g
}
