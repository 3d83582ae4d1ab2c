package engine

import (
	"time"

	"ratelab/limiter"
	"ratelab/scenarios/check"
	"ratelab/scenarios/faults"
)

// Record is one decision as a worker finished it: what was asked, what the limiter answered, how
// long it took from the request's intended start, and the checker's verdict. A worker owns one
// Record and reuses it for every decision, so the stream costs no allocation.
type Record struct {
	// Worker is the worker that decided (0..concurrency-1); Sec the second of the run the
	// request was intended in; Key its tenant x endpoint index.
	Worker, Sec, Key int
	// Region is the index (in spec order) of the region whose gateway decided; 0 without regions.
	Region int
	// AtMs is the time the decision is judged at (Unix ms): the wall clock, or the schedule's
	// clock with limiter.clock: schedule; never a skewed gateway clock. With limiter.clock: redis
	// the judge sets it to the time the script used (Decision.At), where the limiter says.
	AtMs int64
	// Cost is the request's tokens.
	Cost int64
	// Latency runs from the intended start to the answer.
	Latency time.Duration
	// Decision and Err are the limiter's answer; ErrKind classifies Err.
	Decision limiter.Decision
	Err      error
	ErrKind  limiter.ErrorKind
	// Verdict is the checker's (set by the judge, the first consumer); Conforming on an error.
	Verdict check.Verdict
}

// A Consumer hears every record of an in-process run (Options.Consumers), after the engine's own
// consumers, from many workers at once (and, for a decision the limiter parked, from the
// limiter's goroutine that answered it): it must be safe for concurrent use, cheap (it runs in
// the decision path), and must not keep the pointer.
type Consumer interface {
	Consume(r *Record)
}

// judge is the first consumer: it asks the checker for each decision's verdict, attributing
// overspend to the active fault where one explains it, and books a timed-out decision as an
// unknown outcome (the script may have run after the client gave up).
type judge struct {
	checker check.Checker
	faults  *faults.Runner
	// central: the decisions are the store's, so a fault's cause applies only to central and
	// lease decisions, not to a fail policy's. An in-process limiter under test (memory) decides
	// Local, and a fault's cause applies to it as to the store's decisions.
	central bool
	// redisClock: the store decides at its own clock, and the decision says when (Decision.At);
	// judging at the client's clock would read network jitter as overspend or false denies.
	redisClock bool
}

func (j judge) Consume(r *Record) {
	r.Verdict = check.Conforming
	if j.redisClock && !r.Decision.At.IsZero() {
		r.AtMs = r.Decision.At.UnixMilli()
	}
	if r.Err != nil {
		if r.ErrKind == limiter.KindTimeout {
			j.checker.ObserveUnknown(r.Key, r.AtMs, r.Cost)
		}
		return
	}
	src := r.Decision.Source
	cause := check.Cause(src)
	if src == limiter.Central || src == limiter.Lease || !j.central {
		if c, ok := j.faults.CurrentCause(); ok {
			cause = c
		}
	}
	r.Verdict = j.checker.ObserveAs(r.Key, r.AtMs, r.Cost, r.Decision.Allowed, cause)
}
