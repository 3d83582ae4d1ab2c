package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// A light run on a host that is off 20% of the time in exponential gaps of 20 ms: a decision
// takes 0.3-0.5 ms, plus the rest of the gap when it arrives in one (exponential, mean 20 ms).
// FitGaps must read the gaps back.
func TestFitGaps(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 3))
	h := results.NewHistogram()
	for range 200_000 {
		ms := 0.3 + 0.2*r.Float64()
		if r.Float64() < 0.2 {
			ms += 20 * r.ExpFloat64()
		}
		h.Record(time.Duration(ms * 1e6))
	}
	g := FitGaps(h)
	if math.Abs(g.OffFraction-0.2) > 0.02 {
		t.Errorf("off fraction %.3f, want 0.2", g.OffFraction)
	}
	// The tail holds residuals above T - b = 2 - 0.4 ms: an exponential's mean excess is still
	// 20 ms over that, so E[R] ~ 21.6 ms, and E[R^2]/E[R]^2 = (400 + 21.6^2)/21.6^2 ~ 1.86.
	if g.ResidualMeanMs < 20 || g.ResidualMeanMs > 23.5 {
		t.Errorf("residual mean %.1f ms, want ~21.6", g.ResidualMeanMs)
	}
	if g.ResidualK < 1.75 || g.ResidualK > 2.0 {
		t.Errorf("residual k %.2f, want ~1.86", g.ResidualK)
	}
	if med := g.Body.median(); med < 0.35 || med > 0.45 {
		t.Errorf("body median %.3f ms, want ~0.4", med)
	}
	quiet := results.NewHistogram()
	for i := range 10_000 {
		quiet.Record(time.Duration(300+i%200) * time.Microsecond)
	}
	if g := FitGaps(quiet); g.OffFraction != 0 || g.TailShare != 0 {
		t.Errorf("a run without a tail fitted gaps %+v", g)
	}
}

// The engine's host against the fit: gaps fitted from a light run, simulated at the same light
// load, must give back the light run's tail — its share, its residuals' mean and their
// E[R^2]/E[R]^2 (the lognormal's mean and sigma trade against each other; the residuals are
// what the latencies show).
func TestHostGapsRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 4))
	h := results.NewHistogram()
	for range 100_000 {
		ms := 0.3 + 0.2*r.Float64()
		if r.Float64() < 0.3 {
			ms += math.Exp(math.Log(12) + 0.9*r.NormFloat64()) // heavier than exponential
		}
		h.Record(time.Duration(ms * 1e6))
	}
	want := FitGaps(h)
	host := &Host{CapacityRPS: 20_000, OffFraction: want.OffFraction, OffMeanMs: want.OffMeanMs, OffSigma: want.OffSigma}
	res, err := Simulate(Config{Primaries: 1, Rate: 300, Tenants: 100, Service: Service{Kind: Constant, MeanUs: 20},
		Client: want.Body.shift(-0.02), Host: host, Horizon: 300 * time.Second, MaxRequests: 90_000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	have := FitGaps(res.hist)
	t.Logf("light run: tail %.3f, residuals mean %.1f ms k %.2f (gaps: off %.3f mean %.1f ms sigma %.2f); model: tail %.3f, residuals mean %.1f ms k %.2f",
		want.TailShare, want.ResidualMeanMs, want.ResidualK, want.OffFraction, want.OffMeanMs, want.OffSigma, have.TailShare, have.ResidualMeanMs, have.ResidualK)
	if math.Abs(have.TailShare-want.TailShare) > 0.03 {
		t.Errorf("tail share %.3f, light run %.3f", have.TailShare, want.TailShare)
	}
	// Tolerance 15%: the fit reads only residuals above T - b as if they were all of them, which
	// overstates their mean (measured here: +11% after the round trip).
	if math.Abs(have.ResidualMeanMs-want.ResidualMeanMs)/want.ResidualMeanMs > 0.15 {
		t.Errorf("residual mean %.1f ms, light run %.1f ms", have.ResidualMeanMs, want.ResidualMeanMs)
	}
	if math.Abs(have.ResidualK-want.ResidualK)/want.ResidualK > 0.15 {
		t.Errorf("residual k %.2f, light run %.2f", have.ResidualK, want.ResidualK)
	}
}

// Co-location caps throughput at the host's capacity whatever the primaries could do, and a gap
// of V stretches to about V/(1-rho): p99 grows with the host's utilisation.
func TestHostCapacityAndTail(t *testing.T) {
	t.Parallel()
	host := &Host{CapacityRPS: 5000, OffFraction: 0.2, OffMeanMs: 10}
	run := func(rate float64) *Result {
		res, err := Simulate(Config{Primaries: 1, Rate: rate, Tenants: 100, Service: Service{Kind: Constant, MeanUs: 20},
			Client: ConstantMs(0.3), Host: host, MaxInflight: 512, Horizon: 20 * time.Second, Timeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	over := run(10_000)
	if math.Abs(over.ThroughputRPS-5000)/5000 > 0.05 || over.Dropped == 0 {
		t.Errorf("offered twice the host's 5000/s: throughput %.0f/s, dropped %d; want ~5000/s and drops", over.ThroughputRPS, over.Dropped)
	}
	if over.Primaries[0].Utilisation > 0.2 {
		t.Errorf("primary utilisation %.2f: the host, not the primary, must limit", over.Primaries[0].Utilisation)
	}
	light, busy := run(500), run(3000)
	if busy.ThroughputRPS < 0.98*3000 {
		t.Errorf("at 60%% of the host: throughput %.0f/s, want 3000", busy.ThroughputRPS)
	}
	if busy.P99Ms < 1.3*light.P99Ms {
		t.Errorf("p99 %.1f ms at rho 0.6 vs %.1f ms at 0.1: gaps must stretch with the host's load", busy.P99Ms, light.P99Ms)
	}
	if off := (Host{CapacityRPS: 1, OffFraction: 1}).Validate(); off == nil {
		t.Error("off fraction 1 accepted")
	}
}

// The gaps' share of time off follows the calibration's law through the two gap runs' shares,
// scaled by least squares, within [0, 0.95]; a calibration without gap runs keeps its fixed host.
func TestHostLoadLaw(t *testing.T) {
	t.Parallel()
	host := &Host{CapacityRPS: 30_000, OffFraction: 0.003, OffMeanMs: 2}
	c := Calibration{Host: host, Gaps: Gaps{Decisions: 1000}}
	if have := c.HostAt(9000); have != host {
		t.Errorf("HostAt without gap runs = %+v, want the calibration's host", have)
	}
	lo := Gaps{OffFraction: 0.01, OffMeanMs: 3, Decisions: 10_000}
	hi := Gaps{OffFraction: 0.03, OffMeanMs: 3, Decisions: 30_000}
	c, err := c.WithLoad(lo, 4000, hi, 12_000)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Load; l.Law != DefaultHostLaw || l.Cores != runtime.NumCPU() {
		t.Errorf("WithLoad's law %q on %d cores, want %q on the host's %d", l.Law, l.Cores, DefaultHostLaw, runtime.NumCPU())
	}
	// Proportional: (4000, 1%) and (12000, 3%) lie on off = rate / 400,000.
	prop := c
	pl := *c.Load
	pl.Law = LawProportional
	prop.Load = &pl
	for _, tc := range []struct{ rate, want float64 }{
		{4000, 0.01}, {12_000, 0.03}, {8000, 0.02}, {16_000, 0.04}, {0, 0}, {1e6, 0.95},
	} {
		if have := prop.HostAt(tc.rate).OffFraction; math.Abs(have-tc.want) > 1e-12 {
			t.Errorf("proportional: off at %.0f/s = %v, want %v", tc.rate, have, tc.want)
		}
	}
	// Erlang C on 2 cores, C = 2 rho^2 / (1 + rho) with rho = rate / 30,000: two points on
	// 0.1 x C are recovered exactly, and the share grows about as rho^2 between and beyond.
	c2 := func(rho float64) float64 { return 2 * rho * rho / (1 + rho) }
	ec := HostLoad{LowRPS: 6000, LowOff: 0.1 * c2(0.2), HighRPS: 12_000, HighOff: 0.1 * c2(0.4),
		Law: LawErlangC, Cores: 2}
	for _, rate := range []float64{6000, 9000, 12_000, 15_000, 0} {
		if have, want := ec.offAt(rate, 30_000), 0.1*c2(rate/30_000); math.Abs(have-want) > 1e-12 {
			t.Errorf("erlang-c: off at %.0f/s = %v, want %v", rate, have, want)
		}
	}
	if have := ec.offAt(30_000, 30_000); math.Abs(have-0.1) > 1e-12 {
		t.Errorf("erlang-c: off at the capacity = %v, want the scale 0.1 (every core busy)", have)
	}
	// Floor: a background share b = 1% plus 0.1 x C through both points is recovered exactly,
	// between and beyond them; at rate 0 what is left is the background's.
	fl := HostLoad{LowRPS: 6000, LowOff: 0.01 + 0.1*c2(0.2), HighRPS: 12_000, HighOff: 0.01 + 0.1*c2(0.4),
		Law: LawFloor, Cores: 2}
	for _, rate := range []float64{6000, 9000, 12_000, 15_000, 0} {
		if have, want := fl.offAt(rate, 30_000), 0.01+0.1*c2(rate/30_000); math.Abs(have-want) > 1e-12 {
			t.Errorf("floor: off at %.0f/s = %v, want %v", rate, have, want)
		}
	}
	// Between the points it interpolates: each point's weight is in [0, 1], so the share at a
	// rate between them lies between theirs whatever they are.
	for _, pair := range [][2]float64{{0.02, 0.03}, {0.03, 0.0301}, {0.001, 0.08}} {
		l := HostLoad{LowRPS: 7500, LowOff: pair[0], HighRPS: 10_500, HighOff: pair[1], Law: LawFloor, Cores: 2}
		if have := l.offAt(9000, 30_000); !(pair[0] <= have && have <= pair[1]) {
			t.Errorf("floor through %v: off at 9000/s = %v, outside the two points'", pair, have)
		}
	}
	// A pair the law cannot hold: a smaller share at the higher rate (noise) gives the two's
	// mean at every rate; one that would need a negative background falls back to Erlang C's
	// scale through the origin.
	if have := (HostLoad{LowRPS: 7500, LowOff: 0.03, HighRPS: 10_500, HighOff: 0.02, Law: LawFloor, Cores: 2}).offAt(20_000, 30_000); math.Abs(have-0.025) > 1e-12 {
		t.Errorf("floor with the higher rate's share smaller: off %v, want the mean 0.025", have)
	}
	steep := HostLoad{LowRPS: 6000, LowOff: 0.001, HighRPS: 12_000, HighOff: 0.05, Law: LawFloor, Cores: 2}
	origin := steep
	origin.Law = LawErlangC
	if have, want := steep.offAt(9000, 30_000), origin.offAt(9000, 30_000); math.Abs(have-want) > 1e-12 || want <= 0 {
		t.Errorf("floor needing b < 0: off %v, want Erlang C's through the origin %v", have, want)
	}
	// Both fits' gaps are 3 ms; each corrected for its run's queueing (1 + rate x work).
	w := host.workS()
	want := (0.01*10_000*3/(1+4000*w) + 0.03*30_000*3/(1+12_000*w)) / (0.01*10_000 + 0.03*30_000)
	if math.Abs(c.Host.OffMeanMs-want) > 1e-9 {
		t.Errorf("gaps' mean %v ms, want %v", c.Host.OffMeanMs, want)
	}
	// Points off the law take its least-squares scale, a = sum(f x off) / sum(f^2): (4000, 1%)
	// and (8000, 4%) give 4.5e-6 per decision/s proportionally, and a share of 0 at the low
	// rate still counts.
	for _, tc := range []struct {
		l          HostLoad
		rate, want float64
	}{
		{HostLoad{LowRPS: 4000, LowOff: 0.01, HighRPS: 8000, HighOff: 0.04}, 6000, 0.027},
		{HostLoad{LowRPS: 4000, LowOff: 0.01, HighRPS: 8000, HighOff: 0.04, Law: LawProportional}, 10_000, 0.045},
		{HostLoad{LowRPS: 4000, LowOff: 0, HighRPS: 8000, HighOff: 0.04}, 6000, 0.024},
		{HostLoad{LowRPS: 4000, LowOff: 0, HighRPS: 8000, HighOff: 0}, 6000, 0},
		// Erlang C on 1 core is rho itself: the proportional law's answer.
		{HostLoad{LowRPS: 4000, LowOff: 0.01, HighRPS: 8000, HighOff: 0.04, Law: LawErlangC, Cores: 1}, 6000, 0.027},
		{HostLoad{LowRPS: 4000, LowOff: 0, HighRPS: 8000, HighOff: 0, Law: LawErlangC, Cores: 2}, 6000, 0},
	} {
		if have := tc.l.offAt(tc.rate, 20_000); math.Abs(have-tc.want) > 1e-12 {
			t.Errorf("%+v: off at %.0f/s = %v, want %v", tc.l, tc.rate, have, tc.want)
		}
	}
	for _, bad := range []HostLoad{
		{Law: "quadratic"},
		{Law: LawErlangC, Cores: 0},
		{Law: LawFloor, Cores: 0},
	} {
		err := bad.Validate()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad.Law)) {
			t.Errorf("%+v: Validate() = %v, want an error naming the law", bad, err)
		}
	}
	if err := (HostLoad{}).Validate(); err != nil {
		t.Errorf("a calibration from before the law (law \"\"): %v", err)
	}
	if _, err := (Calibration{}).WithLoad(lo, 4000, hi, 12_000); err == nil {
		t.Error("gap runs without a co-located host accepted")
	}
	if _, err := c.WithLoad(lo, 12_000, hi, 4000); err == nil {
		t.Error("gap runs with the low rate above the high one accepted")
	}
}

// At a light load FitGaps must read back the gaps the model ran with, though the rests shorter
// than its threshold never reach the tail: the moments of the residuals above it read sigma
// 0.34 for 0.8, the truncated maximum likelihood must not. The mean of heavy gaps (sigma 1.2)
// rests on a few long ones: it read 5.1 ms for 4, within the 30% allowed.
func TestFitGapsUndoesTheTruncation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ off, mean, sigma float64 }{{0.02, 2, 0.8}, {0.01, 2.5, 0.2}, {0.05, 4, 1.2}} {
		host := &Host{CapacityRPS: 50_000, OffFraction: tc.off, OffMeanMs: tc.mean, OffSigma: tc.sigma}
		res, err := Simulate(Config{Primaries: 1, Rate: 1000, Tenants: 100, Service: Service{Kind: Constant, MeanUs: 20},
			Client: ConstantMs(0.2), Host: host, Horizon: 400 * time.Second, MaxRequests: 400_000, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		g := FitGaps(res.hist)
		t.Logf("gaps off %.3f mean %.1f ms sigma %.1f: fitted off %.4f mean %.2f ms sigma %.2f (threshold %.1f ms, tail %.4f)",
			tc.off, tc.mean, tc.sigma, g.OffFraction, g.OffMeanMs, g.OffSigma, g.ThresholdMs, g.TailShare)
		if math.Abs(g.OffFraction-tc.off)/tc.off > 0.15 || math.Abs(g.OffMeanMs-tc.mean)/tc.mean > 0.3 || math.Abs(g.OffSigma-tc.sigma) > 0.2 {
			t.Errorf("fitted off %.4f mean %.2f ms sigma %.2f, want %.3f, %.1f ms, %.1f (15%%, 30%%, 0.2)", g.OffFraction, g.OffMeanMs, g.OffSigma, tc.off, tc.mean, tc.sigma)
		}
	}
}

// The gaps' shape comes from the runs pooled, except a disturbed one: four runs with 1% of
// their decisions in 2-4 ms gaps and one with 10% in 20-40 ms ones read as the four.
func TestTrimmedGapsLeavesOutADisturbedRun(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	run := func(share, gapMs float64) measured {
		h := results.NewHistogram()
		for range 20_000 {
			ms := 0.2 + 0.1*r.Float64()
			if r.Float64() < share {
				ms += gapMs * (1 + r.Float64())
			}
			h.Record(time.Duration(ms * 1e6))
		}
		sum := &results.Summary{DurationS: 4}
		sum.Load.Completed = 20_000
		return measured{sum: sum, hist: h}
	}
	quiet := []measured{run(0.01, 2), run(0.01, 2), run(0.01, 2), run(0.01, 2)}
	want, _ := trimmedGaps(quiet)
	have, rate := trimmedGaps(append(quiet, run(0.1, 20)))
	if rate != 5000 {
		t.Errorf("rate %v, want the pooled runs' 5,000/s", rate)
	}
	if have.TailShare != want.TailShare || have.OffMeanMs != want.OffMeanMs {
		t.Errorf("with a disturbed run: tail %.4f, gaps %.2f ms; without: %.4f, %.2f ms", have.TailShare, have.OffMeanMs, want.TailShare, want.OffMeanMs)
	}
	if want.OffMeanMs < 1 || want.OffMeanMs > 6 {
		t.Errorf("gaps' mean %.2f ms from rests of 2-4 ms", want.OffMeanMs)
	}
}

// erlangC against the other textbook route to it, through Erlang B: B(0) = 1,
// B(k) = A B(k-1) / (k + A B(k-1)), and C = B / (1 - rho (1 - B)).
func TestErlangC(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 8, 64} {
		for _, rho := range []float64{0.01, 0.15, 0.3, 0.5, 0.9, 0.999} {
			a, b := float64(n)*rho, 1.0
			for k := 1; k <= n; k++ {
				b = a * b / (float64(k) + a*b)
			}
			want := b / (1 - rho*(1-b))
			if have := erlangC(n, rho); math.Abs(have-want) > 1e-12*math.Max(1, want) {
				t.Errorf("erlangC(%d, %v) = %v, want %v", n, rho, have, want)
			}
		}
	}
	if have := erlangC(1, 0.3); math.Abs(have-0.3) > 1e-15 {
		t.Errorf("erlangC(1, 0.3) = %v: one server waits as often as it is busy", have)
	}
	for _, tc := range []struct{ rho, want float64 }{{0, 0}, {-1, 0}, {1, 1}, {2, 1}} {
		if have := erlangC(2, tc.rho); have != tc.want {
			t.Errorf("erlangC(2, %v) = %v, want %v", tc.rho, have, tc.want)
		}
	}
}
