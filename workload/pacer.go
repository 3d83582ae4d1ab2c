package workload

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Pacer is an open-loop arrival schedule. Next returns the intended start offset, measured from
// the run's start, of the next request; the driver sends at that instant whether or not earlier
// requests have completed, and measures latency from it (so a stall shows in p99 instead of
// silently thinning the load). ok is false once the schedule has passed its duration; every later
// call returns ok = false too.
//
// Rate is the offered rate in requests per second at elapsed (0 outside the run), for reports.
//
// A Pacer is owned by one scheduling goroutine; implementations are not safe for concurrent use.
type Pacer interface {
	Next() (offset time.Duration, ok bool)
	Rate(elapsed time.Duration) float64
}

var (
	_ Pacer = (*Constant)(nil)
	_ Pacer = (*Poisson)(nil)
)

// validRun checks the two inputs every pacer shares.
func validRun(kind string, rate float64, duration time.Duration) error {
	if !(rate > 0) || math.IsInf(rate, 1) { // also rejects NaN
		return fmt.Errorf("%w: %s pacer rate %v: must be a finite number of requests per second > 0",
			ErrInvalid, kind, rate)
	}
	if duration <= 0 {
		return fmt.Errorf("%w: %s pacer duration %v: must be > 0", ErrInvalid, kind, duration)
	}
	return nil
}

// Constant sends at a fixed rate: request i (from 0) starts at offset i * 1s / rate.
//
// Each offset is computed from i, never by adding up gaps, so there is no drift however long the
// run: for an integer rate (the usual case, e.g. 1000 or 100000 rps) the offset is the exact
// floor(i * 1e9 / rate) nanoseconds in 128-bit integer arithmetic; for a fractional rate it is
// floor(i * (1e9/rate)) in float64, off by at most a few ulps of the offset (< 1 ns below 2^52 ns,
// about 52 days) and never accumulating.
type Constant struct {
	rate     float64
	duration time.Duration
	perNs    float64 // 1e9 / rate: the gap in nanoseconds, for fractional rates
	intRate  uint64  // rate when it is a whole number in [1, 1e9]; 0 otherwise
	i        uint64  // index of the next request
	done     bool
}

// NewConstant returns a constant-rate pacer. rate is requests per second, finite and > 0;
// duration > 0. It schedules ceil(rate * duration) requests, all with offset < duration.
func NewConstant(rate float64, duration time.Duration) (*Constant, error) {
	if err := validRun("constant", rate, duration); err != nil {
		return nil, err
	}
	c := &Constant{rate: rate, duration: duration, perNs: float64(time.Second) / rate}
	if rate == math.Trunc(rate) && rate >= 1 && rate <= float64(time.Second) {
		c.intRate = uint64(rate)
	}
	return c, nil
}

// Next returns the offset of the next request. It allocates nothing.
func (c *Constant) Next() (time.Duration, bool) {
	if c.done {
		return 0, false
	}
	var off time.Duration
	if c.intRate != 0 {
		// i * 1e9 can exceed 64 bits for a long run at a high rate: multiply to 128 bits and
		// divide back. hi >= rate would make the quotient >= 2^64 ns (Div64 panics on that);
		// such an offset is centuries past any duration, so it simply ends the schedule.
		hi, lo := bits.Mul64(c.i, uint64(time.Second))
		if hi >= c.intRate {
			c.done = true
			return 0, false
		}
		q, _ := bits.Div64(hi, lo, c.intRate)
		if q >= uint64(c.duration) {
			c.done = true
			return 0, false
		}
		off = time.Duration(q)
	} else {
		f := math.Floor(float64(c.i) * c.perNs)
		if !(f < float64(c.duration)) {
			c.done = true
			return 0, false
		}
		off = time.Duration(f)
	}
	c.i++
	return off, true
}

// Rate is the configured rate inside [0, duration) and 0 outside.
func (c *Constant) Rate(elapsed time.Duration) float64 {
	if elapsed < 0 || elapsed >= c.duration {
		return 0
	}
	return c.rate
}

// Poisson sends as a Poisson process: gaps between starts are independent and exponential with
// mean 1s / rate, so arrivals are bursty the way independent clients are. The gaps come from a
// PCG generator seeded by the caller, so the same seed gives the same schedule.
//
// Here the offset is necessarily a running sum of gaps; it is kept in float64 nanoseconds and
// truncated only on output, so rounding does not compound (relative error ~1e-16 per gap).
type Poisson struct {
	rate     float64
	duration time.Duration
	perNs    float64 // mean gap in nanoseconds
	src      rand.PCG
	rng      *rand.Rand
	t        float64 // offset of the next request, ns
	done     bool
}

// NewPoisson returns a Poisson pacer. rate is the mean requests per second, finite and > 0;
// duration > 0; seed fixes the schedule. The first request starts at offset 0.
func NewPoisson(rate float64, duration time.Duration, seed uint64) (*Poisson, error) {
	if err := validRun("poisson", rate, duration); err != nil {
		return nil, err
	}
	p := &Poisson{rate: rate, duration: duration, perNs: float64(time.Second) / rate}
	p.src.Seed(seed, DeriveSeed(seed, poissonStream))
	p.rng = rand.New(&p.src)
	return p, nil
}

// poissonStream tags the PCG's second seed word so a Poisson pacer and a Stream built from the
// same seed do not share a random sequence.
const poissonStream = 0x9e3779b97f4a7c15

// Next returns the offset of the next request. It allocates nothing.
func (p *Poisson) Next() (time.Duration, bool) {
	if p.done || !(p.t < float64(p.duration)) {
		p.done = true
		return 0, false
	}
	off := time.Duration(p.t)
	p.t += p.rng.ExpFloat64() * p.perNs // ExpFloat64 has mean 1
	return off, true
}

// Rate is the mean rate inside [0, duration) and 0 outside.
func (p *Poisson) Rate(elapsed time.Duration) float64 {
	if elapsed < 0 || elapsed >= p.duration {
		return 0
	}
	return p.rate
}
