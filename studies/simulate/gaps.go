package simulate

import (
	"math"

	"ratelab/results"
)

// Gaps is what FitGaps reads from a light-load run's latencies: the share of time the run's
// threads were kept off the CPU, the mean length of those gaps, and the latency of the
// decisions no gap touched.
type Gaps struct {
	// ThresholdMs separates the body from the tail: max(1 ms, 5 x the 10th percentile; the
	// median would move with the tail when gaps touch most decisions). The floor stays below a
	// quiet host's p99: a floor above it leaves the delays which set the p99 in the body, where
	// the model reads them at the calibration rate and never more.
	ThresholdMs float64 `json:"threshold_ms"`
	// TailShare is the share of latencies above the threshold, of Decisions latencies read.
	TailShare float64 `json:"tail_share"`
	Decisions int64   `json:"decisions"`
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
// median. The gaps' lengths are fitted as a lognormal, by maximum likelihood of the tail's
// residuals (truncatedFit), and p from the tail's share.
func FitGaps(lat *results.Histogram) Gaps {
	const steps = 20_000 // quantile grid of 0.005%
	q := make([]float64, steps+1)
	for i := range q {
		q[i] = lat.QuantileMs(100 * float64(i) / steps)
	}
	g := Gaps{ThresholdMs: math.Max(1, 5*q[steps/10]), Decisions: lat.Count()}
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
	// (mu, sigma) that is E[R] = exp(mu + 3 sigma^2/2)/2 and E[R^2]/E[R]^2 = (4/3) exp(sigma^2)
	// (k = 2, sigma^2 = ln 1.5, is as heavy as exponential gaps). They are reported as seen.
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
	// The moments above are those of the residuals above T - b only: rests shorter than that
	// are missed, so they make the gaps look narrower and rarer than they are
	// (TestFitGapsUndoesTheTruncation). The gaps are fitted by maximum likelihood of the
	// residuals truncated at c = T - b instead (truncatedFit), and the share of time off is the
	// tail's share over the chance that a rest exceeds c.
	rs := make([]float64, 0, len(q)-cut)
	for _, v := range q[cut:] {
		rs = append(rs, v-b)
	}
	mu, sigma, above := truncatedFit(rs, math.Max(g.ThresholdMs-b, 1e-3))
	g.OffSigma = sigma
	g.OffMeanMs = math.Exp(mu + sigma*sigma/2)
	// Arrivals see the host off a share p of the time (PASTA); the tail caught those whose rest
	// exceeded c, a share `above` of them (at least a tenth: below that the fit is too far out).
	g.OffFraction = math.Min(0.95, g.TailShare/math.Max(above, 0.1))
	return g
}

// truncatedFit fits lognormal gap lengths G (mu, sigma of ln G, in ms) to residuals rs, each a
// gap's rest caught at a uniform point and seen only when above c, by maximum likelihood. A
// rest R has density P(G > r)/E[G]; seen only above c, its likelihood is divided by
// P(R > c) = E[(G - c)+]/E[G], so
//
//	ln L = sum ln P(G > r_i) - n ln E[(G - c)+],  E[(G - c)+] = E[G] Phi(d1) - c Phi(d2),
//
// with d1 = (mu + sigma^2 - ln c)/sigma and d2 = d1 - sigma. sigma is searched on a grid of
// 0.05 from 0.05 to 2.5 and mu, for each, by golden section. above is P(R > c) at the fit.
func truncatedFit(rs []float64, c float64) (mu, sigma, above float64) {
	if len(rs) == 0 {
		return 0, 0, 1
	}
	lc := math.Log(c)
	logL := func(mu, sig float64) float64 {
		var l float64
		for _, r := range rs {
			l += logSurvival((math.Log(r) - mu) / sig)
		}
		d1 := (mu + sig*sig - lc) / sig
		tail := math.Exp(mu+sig*sig/2)*phi(d1) - c*phi(d1-sig)
		if !(tail > 0) {
			return math.Inf(-1)
		}
		return l - float64(len(rs))*math.Log(tail)
	}
	var hi float64
	for _, r := range rs {
		hi = math.Max(hi, r)
	}
	best := math.Inf(-1)
	for sig := 0.05; sig <= 2.5+1e-9; sig += 0.05 {
		// Golden section over mu in [ln c - 6, ln max + 2].
		a, b := lc-6, math.Log(hi)+2
		const g = 0.6180339887498949
		x1, x2 := b-g*(b-a), a+g*(b-a)
		f1, f2 := logL(x1, sig), logL(x2, sig)
		for range 60 {
			if f1 < f2 {
				a, x1, f1 = x1, x2, f2
				x2 = a + g*(b-a)
				f2 = logL(x2, sig)
			} else {
				b, x2, f2 = x2, x1, f1
				x1 = b - g*(b-a)
				f1 = logL(x1, sig)
			}
		}
		m := (a + b) / 2
		if l := logL(m, sig); l > best {
			best, mu, sigma = l, m, sig
		}
	}
	d1 := (mu + sigma*sigma - lc) / sigma
	eg := math.Exp(mu + sigma*sigma/2)
	above = (eg*phi(d1) - c*phi(d1-sigma)) / eg
	return mu, sigma, above
}

// phi is the standard normal CDF.
func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// logSurvival is ln P(Z > z) for a standard normal Z, without underflow far in the tail.
func logSurvival(z float64) float64 {
	if z < 8 {
		return math.Log(0.5 * math.Erfc(z/math.Sqrt2))
	}
	return -z*z/2 - math.Log(z*math.Sqrt(2*math.Pi))
}
