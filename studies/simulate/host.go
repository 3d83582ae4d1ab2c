package simulate

import (
	"errors"
	"fmt"
	"math"
)

// Host is the CPU of a machine the clients share with the primaries (co-location): the generator,
// the client library and every Redis node of a one-machine run compete for the same cores, beside
// whatever else runs there. Config.Host nil (the default, and what a big cluster is) means the
// primaries and the gateways have hosts of their own and only the primaries' threads queue.
//
// The model is one preemptive-resume FIFO server for the CPU work of every decision (generator and
// client, plus the script call on the node), whose availability alternates: the machine's scheduler
// runs other runnable threads for a while (off), then ours (on). Off and on periods are exponential
// and off periods lognormal, so a decision arriving while the host is off waits the rest of the
// gap, and the work that piles up during a gap drains at the host's spare speed: at a fraction rho
// of CapacityRPS a gap of V delays the decisions behind it by up to about V/(1 - rho). That — not
// queueing at Redis — is what sets a co-located run's tail.
type Host struct {
	// CapacityRPS is the most decisions per second the machine gives the limiter's work, over
	// on and off periods (measured: a saturation probe's achieved rate). > 0.
	CapacityRPS float64 `json:"capacity_rps"`
	// OffFraction is the share of time the work gets no CPU (its threads runnable but not
	// running), in [0, 0.95]; OffMeanMs the mean length of such a gap (> 0 when OffFraction > 0).
	// Measured from the tail of a light-load run (FitGaps).
	OffFraction float64 `json:"off_fraction"`
	OffMeanMs   float64 `json:"off_mean_ms"`
	// OffSigma is the lognormal sigma of the gaps' lengths: 0 is its limit, gaps all of
	// OffMeanMs; sqrt(ln 1.5) ~ 0.64 has the residuals' E[R^2]/E[R]^2 of exponential gaps (2).
	OffSigma float64 `json:"off_sigma"`
}

// Validate names the bad field.
func (h Host) Validate() error {
	var errs []error
	if !(h.CapacityRPS > 0) || math.IsInf(h.CapacityRPS, 0) {
		errs = append(errs, fmt.Errorf("host capacity %v decisions/s: must be > 0 (measure it with a saturation probe)", h.CapacityRPS))
	}
	if !(h.OffFraction >= 0 && h.OffFraction <= 0.95) {
		errs = append(errs, fmt.Errorf("host off fraction %v: must be in [0, 0.95]", h.OffFraction))
	}
	if !(h.OffSigma >= 0 && h.OffSigma <= 5) {
		errs = append(errs, fmt.Errorf("host off sigma %v: must be in [0, 5]", h.OffSigma))
	}
	if h.OffFraction > 0 && !(h.OffMeanMs > 0 && h.OffMeanMs < 60_000) {
		errs = append(errs, fmt.Errorf("host off mean %v ms: must be in (0, 60000) when the off fraction is > 0", h.OffMeanMs))
	}
	return errors.Join(errs...)
}

// workS is one decision's CPU on the host at full speed, in seconds: over on and off periods
// the host then serves (1 - OffFraction)/workS = CapacityRPS decisions per second.
func (h Host) workS() float64 { return (1 - h.OffFraction) / h.CapacityRPS }

// gapMeanAt is the gaps' mean length under a fitted one, meanMs, read from a run at rate: a
// decision caught a into a gap also waits the CPU of the rate x a decisions ahead of it, so
// the residuals seen are (1 + rho_on) times the gaps' (Calibration.CoLocate).
func (h Host) gapMeanAt(meanMs, rate float64) float64 { return meanMs / (1 + rate*h.workS()) }

// onMeanS is the mean on period: OffFraction = off/(on + off).
func (h Host) onMeanS() float64 { return h.OffMeanMs / 1e3 * (1 - h.OffFraction) / h.OffFraction }

// hostState is the co-located host: a FIFO of decisions waiting for CPU, the one in service and
// its remaining work, and whether the host is on.
type hostState struct {
	queue     []job
	head      int
	cur       job
	busy      bool
	off       bool
	remaining float64 // seconds of on-time the current job still needs
	since     float64 // when remaining was last brought up to date
	epoch     uint32  // a completion scheduled before the host went off carries an old epoch
}

// hostArrive queues j for CPU at t.
func (e *model) hostArrive(t float64, j job) {
	h := e.host
	h.queue = append(h.queue, j)
	if !h.busy {
		e.hostStart(t)
	}
}

func (e *model) hostStart(t float64) {
	h := e.host
	h.cur = h.queue[h.head]
	h.queue[h.head] = job{}
	h.head++
	if h.head > 1024 && h.head*2 > len(h.queue) {
		h.queue = append(h.queue[:0], h.queue[h.head:]...)
		h.head = 0
	}
	h.busy, h.remaining, h.since = true, e.cfg.Host.workS(), t
	if !h.off {
		e.sched.push(event{t: t + h.remaining, kind: evHostDone, epoch: h.epoch})
	}
}

func (e *model) hostDone(t float64, epoch uint32) {
	h := e.host
	if epoch != h.epoch || !h.busy || h.off {
		return
	}
	j := h.cur
	h.busy = false
	if h.head < len(h.queue) {
		e.hostStart(t)
	}
	e.route(t, j)
}

// hostToggle switches the host off or on at t and schedules the next switch while there is
// traffic to come or work left.
func (e *model) hostToggle(t float64) {
	h := e.host
	if h.off {
		h.off = false
		if h.busy {
			h.since = t
			e.sched.push(event{t: t + h.remaining, kind: evHostDone, epoch: h.epoch})
		}
	} else {
		h.off = true
		h.epoch++
		if h.busy {
			h.remaining = math.Max(0, h.remaining-(t-h.since))
		}
	}
	if t < e.end || h.busy || h.head < len(h.queue) {
		e.sched.push(event{t: t + e.period(h.off), kind: evHostToggle})
	}
}

// period draws the length of an on (exponential) or off (lognormal; constant with OffSigma 0)
// period, in seconds.
func (e *model) period(off bool) float64 {
	h := e.cfg.Host
	if !off {
		return h.onMeanS() * e.r.ExpFloat64()
	}
	m := h.OffMeanMs / 1e3
	return m * math.Exp(h.OffSigma*e.r.NormFloat64()-h.OffSigma*h.OffSigma/2)
}

// startHost begins the on/off process at 0 in its stationary state.
func (e *model) startHost() {
	h := e.cfg.Host
	if h == nil {
		return
	}
	e.host = &hostState{}
	if h.OffFraction <= 0 {
		return
	}
	// Stationary start: off with probability OffFraction; the first period is a fresh draw (a
	// slight simplification of the residual for non-exponential gaps).
	e.host.off = e.r.Float64() < h.OffFraction
	e.sched.push(event{t: e.period(e.host.off), kind: evHostToggle})
}

// HostLoad makes the host's gaps grow with our own load: the more of the cores our own threads
// (the generator, go-redis, redis-server) keep busy, the more often one of them wakes to find
// every core taken, without the waits getting longer. On a quiet host the share of decisions
// delayed past 1 ms grows with our rate while the delays keep their length, and gaps fitted at
// one light rate and held fixed leave the model's p99 low at busier rates (docs/capacity.md,
// "The gaps grow with our own load", has the figures and the commands).
//
// So the share of time off is solved at two of our rates (Calibration.WithLoad, solveOff) and
// carried to other rates by a law (Law):
//
//   - LawFloor (the default): off = b + a x C(n, rho), through both points: b the background's
//     own share (what the machine gives to others whatever our rate), a x C(n, rho) our load's,
//     C the Erlang C probability that a thread which wakes finds all n cores busy, n the
//     machine's cores and rho = rate / Host.CapacityRPS. On 2 cores C = 2 rho^2 / (1 + rho).
//     Where most of the time off is the background's, the p99 grows little with our rate, and
//     a law through the origin cannot hold that floor. Between the two points it
//     interpolates, each point weighing in [0, 1], so their noise is not amplified; beyond
//     them it extrapolates with two parameters from two points, which amplifies it, so the
//     validation's gap runs bracket its measured rate (DefaultLowShare, DefaultHighShare). A
//     pair that would need b < 0 falls back to LawErlangC's fit, and one whose higher rate
//     solved the smaller share (noise) to the two shares' mean.
//   - LawErlangC: off = a x C(n, rho), the least-squares scale through the origin of the two
//     points: one parameter, so it extrapolates from gap runs below the measured rate without
//     amplifying their noise, but reads the background as our own load.
//   - LawProportional: off = a x rate through the origin, the first-order law. Carried from
//     gap runs below the measured rate it reads low: the share grows faster than the rate.
//
// docs/capacity.md ("Validation") compares the three on the same runs. The gaps' length is the
// two fits' average weighted by the decisions each tail held.
type HostLoad struct {
	// LowRPS and HighRPS are the two gap runs' rates, LowOff and HighOff the share of time off
	// solved at each.
	LowRPS  float64 `json:"low_rps"`
	LowOff  float64 `json:"low_off_fraction"`
	HighRPS float64 `json:"high_rps"`
	HighOff float64 `json:"high_off_fraction"`
	// Law is the shape the share follows between and beyond the two points: LawFloor,
	// LawErlangC or LawProportional; "" (a calibration without the field) is LawProportional.
	Law string `json:"law,omitempty"`
	// Cores is the host's cores, the n of LawFloor and LawErlangC (>= 1 under them); rho is the
	// rate over the calibration's Host.CapacityRPS.
	Cores int `json:"cores,omitempty"`
}

// The shapes of HostLoad.Law.
const (
	LawFloor        = "floor"
	LawErlangC      = "erlang-c"
	LawProportional = "proportional"
	// DefaultHostLaw is what a new calibration uses.
	DefaultHostLaw = LawFloor
)

// Validate names the bad field.
func (l HostLoad) Validate() error {
	if err := checkLaw(l.Law); err != nil {
		return err
	}
	if (l.Law == LawErlangC || l.Law == LawFloor) && l.Cores < 1 {
		return fmt.Errorf("host load law %q needs cores >= 1, have %d: recalibrate, or set law %q", l.Law, l.Cores, LawProportional)
	}
	return nil
}

// checkLaw says whether law names a HostLoad.Law ("" is LawProportional).
func checkLaw(law string) error {
	switch law {
	case LawErlangC, LawProportional, LawFloor, "":
		return nil
	}
	return fmt.Errorf("host load law %q: want %q, %q or %q", law, LawFloor, LawErlangC, LawProportional)
}

// shape is the law's share of time off at rate, up to its scale, on a host whose capacity for
// our work is capacityRPS.
func (l HostLoad) shape(rate, capacityRPS float64) float64 {
	if l.Law != LawErlangC && l.Law != LawFloor {
		return rate
	}
	return erlangC(l.Cores, rate/capacityRPS)
}

// offAt is the share of time off at rate, within [0, 0.95], on a host whose capacity for our
// work is capacityRPS: under LawFloor b + a x shape(rate) through both gap runs' (shape, share)
// (HostLoad: the mean of the two when a < 0, the through-origin fit when b < 0); otherwise
// a x shape(rate), a the least-squares scale through the origin of the two points.
func (l HostLoad) offAt(rate, capacityRPS float64) float64 {
	fl, fh := l.shape(l.LowRPS, capacityRPS), l.shape(l.HighRPS, capacityRPS)
	clamp := func(off float64) float64 { return math.Min(0.95, math.Max(0, off)) }
	if l.Law == LawFloor && fh > fl {
		a := (l.HighOff - l.LowOff) / (fh - fl)
		b := l.LowOff - a*fl
		switch {
		case a < 0:
			return clamp((l.LowOff + l.HighOff) / 2)
		case b >= 0:
			return clamp(b + a*l.shape(rate, capacityRPS))
		}
	}
	if fl*fl+fh*fh == 0 {
		return 0
	}
	a := (fl*l.LowOff + fh*l.HighOff) / (fl*fl + fh*fh)
	return clamp(a * l.shape(rate, capacityRPS))
}

// erlangC is the probability that an arrival to n servers, each busy a share rho of the time
// (Poisson arrivals, exponential service: M/M/n), finds all n busy; 1 from rho >= 1. With
// offered load A = n x rho, C = (A^n/n!)/(1 - rho) / (sum_{k<n} A^k/k! + (A^n/n!)/(1 - rho)),
// summed term by term (t = A^k/k!) so no factorial overflows.
func erlangC(n int, rho float64) float64 {
	if rho <= 0 {
		return 0
	}
	if rho >= 1 {
		return 1
	}
	a := float64(n) * rho
	sum, t := 0.0, 1.0
	for k := 0; k < n; k++ {
		sum += t
		t *= a / float64(k+1)
	}
	last := t / (1 - rho)
	return last / (sum + last)
}
