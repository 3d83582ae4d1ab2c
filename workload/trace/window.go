package trace

import (
	"math"
	"time"
)

// Window is the window a replay of t at speed (1 = the recorded pace, 2 = twice as fast) covers,
// from offset 0, and the mean rate of its requests over it. It is the one definition of a trace's
// length and rate: the scenario engine's replay, the HTTP attack and `ratelab trace info` read it.
//
// A generated trace knows its window (Span). A file keeps none, so the window closes one mean
// interval after the last request: n requests at offsets first..last are n-1 intervals of
// (last-first)/(n-1). For a constant pacer that is the schedule it was drawn from (1,500
// requests at 1,000/s sit at 0..1.499 s: window 1.5 s, rate 1,000/s; whole seconds would read
// 2 s and 750/s); for a Poisson schedule it is an estimate. With no interval to measure (one
// request, or all at one instant) the window closes a second after the last request. The window
// always ends after the last request's offset at speed (at / speed, truncated to the
// nanosecond, as the replays compute it), so every request falls inside. An empty trace has
// window 0 and rate 0; a speed that is not > 0 counts as 1.
func (t *Trace) Window(speed float64) (window time.Duration, rate float64) {
	n := len(t.Requests)
	if n == 0 {
		return 0, 0
	}
	if !(speed > 0) || math.IsInf(speed, 1) {
		speed = 1
	}
	first, last := t.Requests[0].At, t.Requests[n-1].At
	var end float64 // ns at speed 1
	switch {
	case t.Span > last:
		end = float64(t.Span)
	case n > 1 && last > first:
		end = float64(last) + float64(last-first)/float64(n-1)
	default:
		end = float64(last + time.Second)
	}
	window = time.Duration(math.Ceil(end / speed))
	window = max(window, time.Duration(float64(last)/speed)+1)
	return window, float64(n) / window.Seconds()
}
