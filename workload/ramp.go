package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// MaxRampRate bounds every rate of a Profile, in requests per second: far above what one
// generator sends, low enough that the cumulative arrival count of a long run stays exact in
// float64 (2^53 requests is 28 years at this rate).
const MaxRampRate = 1e7

// Stage is one piece of a piecewise-linear arrival rate: the rate moves linearly from where the
// previous stage left it to To requests per second over Over. A stage whose To equals the
// previous rate holds it; Over 0 is a step to To.
type Stage struct {
	To   float64
	Over time.Duration
}

// StagesDuration is the stages' total length.
func StagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, s := range stages {
		d += s.Over
	}
	return d
}

// Profile is a piecewise-linear arrival rate over [0, duration): it starts at a rate, follows
// the stages, and holds the last stage's rate for whatever of duration they leave; a duration
// shorter than the stages cuts them there.
//
// Inside a segment that starts at T with rate r0 and slope a (requests/s per second), the rate
// is r(t) = r0 + a·τ with τ = t - T, and the cumulative arrivals are
// Λ(t) = N + r0·τ + a·τ²/2, N being Λ(T). The inverse, the τ at which Λ reaches N + m, is the
// positive root of a/2·τ² + r0·τ - m = 0, written τ = 2m / (r0 + √(r0² + 2am)): no cancellation
// for either sign of a, and r0 = 0 gives √(2m/a).
type Profile struct {
	segs     []segment
	duration time.Duration
	total    float64 // Λ(duration)
}

// segment is one linear piece of a Profile.
type segment struct {
	start, length time.Duration
	r0, slope     float64 // requests/s at start; requests/s per second
	n0, n1        float64 // Λ at start and at end
}

// NewProfile returns the profile that starts at rate start (requests per second) and follows
// stages for duration. Every rate is finite, >= 0 and at most MaxRampRate; every Over >= 0;
// duration > 0.
func NewProfile(start float64, stages []Stage, duration time.Duration) (*Profile, error) {
	if !(start >= 0 && start <= MaxRampRate) { // also rejects NaN
		return nil, fmt.Errorf("%w: ramp start rate %v: must be between 0 and %g requests per second", ErrInvalid, start, MaxRampRate)
	}
	if duration <= 0 {
		return nil, fmt.Errorf("%w: ramp duration %v: must be > 0", ErrInvalid, duration)
	}
	p := &Profile{duration: duration, segs: make([]segment, 0, len(stages)+1)}
	at, rate := time.Duration(0), start
	for i, s := range stages {
		if !(s.To >= 0 && s.To <= MaxRampRate) {
			return nil, fmt.Errorf("%w: ramp stage %d rate %v: must be between 0 and %g requests per second", ErrInvalid, i, s.To, MaxRampRate)
		}
		if s.Over < 0 {
			return nil, fmt.Errorf("%w: ramp stage %d length %v: must be >= 0", ErrInvalid, i, s.Over)
		}
		if s.Over > 0 && at < duration {
			slope := (s.To - rate) / s.Over.Seconds()
			p.add(at, min(s.Over, duration-at), rate, slope)
		}
		at, rate = at+s.Over, s.To
	}
	if at < duration {
		p.add(at, duration-at, rate, 0)
	}
	return p, nil
}

// add appends the segment [start, start+length) with rate r0 and slope.
func (p *Profile) add(start, length time.Duration, r0, slope float64) {
	n0 := 0.0
	if k := len(p.segs); k > 0 {
		n0 = p.segs[k-1].n1
	}
	d := length.Seconds()
	s := segment{start: start, length: length, r0: r0, slope: slope, n0: n0, n1: n0 + r0*d + slope*d*d/2}
	p.segs = append(p.segs, s)
	p.total = s.n1
}

// Duration is the profile's length.
func (p *Profile) Duration() time.Duration { return p.duration }

// Total is the expected number of arrivals over the whole profile, Λ(duration).
func (p *Profile) Total() float64 { return p.total }

// find returns the index of the segment holding elapsed, or -1 outside [0, duration).
func (p *Profile) find(elapsed time.Duration) int {
	if elapsed < 0 || elapsed >= p.duration {
		return -1
	}
	for i := len(p.segs) - 1; i >= 0; i-- {
		if p.segs[i].start <= elapsed {
			return i
		}
	}
	return -1
}

// Rate is the profile's rate at elapsed, 0 outside [0, duration). At a step it is the rate after.
func (p *Profile) Rate(elapsed time.Duration) float64 {
	i := p.find(elapsed)
	if i < 0 {
		return 0
	}
	s := &p.segs[i]
	return s.r0 + s.slope*(elapsed-s.start).Seconds()
}

// Arrivals is Λ(elapsed): the expected number of arrivals in [0, elapsed), clamped to the
// profile.
func (p *Profile) Arrivals(elapsed time.Duration) float64 {
	switch {
	case elapsed <= 0:
		return 0
	case elapsed >= p.duration:
		return p.total
	}
	s := &p.segs[p.find(elapsed)]
	tau := (elapsed - s.start).Seconds()
	return s.n0 + s.r0*tau + s.slope*tau*tau/2
}

// At is the instant the cumulative arrivals pass n: the smallest t with Λ(t') > n for every
// t' > t, i.e. inf{t : Λ(t) > n}. ok is false when Λ never passes n within the profile. seg is a
// hint, the index of a segment at or before the answer (0 when unknown); At returns the
// segment it used, for the next call. It allocates nothing.
func (p *Profile) At(n float64, seg int) (off time.Duration, next int, ok bool) {
	if !(n < p.total) || n < 0 {
		return 0, seg, false
	}
	for seg < len(p.segs)-1 && n >= p.segs[seg].n1 {
		seg++
	}
	s := &p.segs[seg]
	m := n - s.n0
	if m <= 0 {
		return s.start, seg, true
	}
	disc := max(s.r0*s.r0+2*s.slope*m, 0) // < 0 only by rounding at the end of a ramp down
	den := s.r0 + math.Sqrt(disc)
	tau := float64(s.length)
	if den > 0 {
		tau = min(2*m/den*float64(time.Second), tau)
	}
	return s.start + time.Duration(tau), seg, true
}

// Ramp follows a Profile as an open-loop schedule: the constant form sends request n (from 0) at
// At(n), the instant the cumulative arrivals pass n, so every second holds the integral of the
// rate over it to within one request and nothing drifts; the Poisson form is the non-homogeneous
// Poisson process of the profile's rate by time rescaling: unit-mean exponential gaps in
// arrival count (E1, E1+E2, ...) mapped through At. Like Poisson, its first request is at At(0).
//
// Offsets never decrease: each is at least the previous one, which absorbs the rounding of At
// at segment ends. A Ramp is owned by one goroutine.
type Ramp struct {
	p    *Profile
	n    float64 // cumulative arrival count of the next request
	seg  int     // At's hint
	prev time.Duration
	rng  *rand.Rand // nil: constant spacing
	src  rand.PCG
	done bool
}

var _ Pacer = (*Ramp)(nil)

// NewRamp returns the constant-spacing schedule of p.
func NewRamp(p *Profile) *Ramp { return &Ramp{p: p} }

// NewRampPoisson returns the Poisson schedule of p; seed fixes it (the same stream tag as
// NewPoisson, so a seed gives the same gaps in arrival count).
func NewRampPoisson(p *Profile, seed uint64) *Ramp {
	r := &Ramp{p: p}
	r.src.Seed(seed, DeriveSeed(seed, poissonStream))
	r.rng = rand.New(&r.src)
	return r
}

// Next returns the offset of the next request. It allocates nothing.
func (r *Ramp) Next() (time.Duration, bool) {
	if r.done {
		return 0, false
	}
	off, seg, ok := r.p.At(r.n, r.seg)
	if !ok || off >= r.p.duration {
		r.done = true
		return 0, false
	}
	off = max(off, r.prev)
	r.seg, r.prev = seg, off
	if r.rng != nil {
		r.n += r.rng.ExpFloat64()
	} else {
		r.n++
	}
	return off, true
}

// Rate is the profile's rate at elapsed.
func (r *Ramp) Rate(elapsed time.Duration) float64 { return r.p.Rate(elapsed) }
