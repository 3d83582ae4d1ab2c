package engine

import (
	"time"

	"ratelab/limiter"
	"ratelab/run/check"
	"ratelab/run/faults"
)

// Record is one decision as a driver finished it: what was asked, what the limiter answered, how
// long it took from the request's intended start, the one classification of its outcome, and
// the checker's verdict. Every driver emits it — the in-process workers, the HTTP driver, a
// multi-region run (Region) — and every consumer reads it and nothing else. A worker owns one
// Record and reuses it for every decision, so the stream costs no allocation.
type Record struct {
	// Worker is the worker that decided (0..concurrency-1; the HTTP driver's records carry 0);
	// Sec the second of the run the request was intended in; Key its tenant x endpoint index.
	Worker, Sec, Key int
	// Region is the index (in spec order) of the region whose gateway decided; 0 without regions.
	Region int
	// Gateway is the index of the gateway that decided (Session.Gateways).
	Gateway int
	// AtMs is the time the decision is judged at (Unix ms): the wall clock, or the schedule's
	// clock with limiter.clock: schedule; never a skewed gateway clock. With limiter.clock: redis
	// the judge sets it to the time the script used (Decision.At, its millisecond), where the
	// limiter says; a kind judged to the microsecond (Session.JudgeTick) is judged at
	// Decision.At itself, and AtMs places it in its second.
	AtMs int64
	// Cost is the request's tokens.
	Cost int64
	// Latency runs from the intended start to the answer.
	Latency time.Duration
	// Decision and Err are the limiter's answer; Classify fills the fields below from them.
	Decision limiter.Decision
	Err      error
	// Outcome is what the user got (see Outcome); ErrKind classifies Err when Outcome is
	// OutcomeError.
	Outcome Outcome
	ErrKind limiter.ErrorKind
	// MayHaveDebited: the store may have debited the request although its answer never reached
	// the client — an error that limiter.MayHaveDebited calls so, or a fail policy's answer to
	// one (Decision.Failure). Such a decision is an unknown outcome in every figure it can move.
	MayHaveDebited bool
	// Verdict is the checker's (set by the judge, the first consumer); Conforming on an error.
	Verdict check.Verdict
	// Opaque: the limiter is a black box (an HTTP target that is not ratelab's gateway), so a
	// request that got no answer may have been let through all the same. Through ratelab's own
	// limiters and gateway a request that got no decision never passed.
	Opaque bool
}

// Outcome is what one decision came to for the user: the one classification every consumer
// reads (outcomes, per-second rows, regions, live metrics, tokens back).
type Outcome uint8

const (
	// OutcomeAllowed: the limiter let the request through (central, lease, or an in-process
	// bucket, a fail-local policy's included).
	OutcomeAllowed Outcome = iota
	// OutcomeDenied: the limiter refused it (a 429).
	OutcomeDenied
	// OutcomeFailedOpen: the store failed and the endpoint's policy let it through.
	OutcomeFailedOpen
	// OutcomeFailedClosed: the store failed and the endpoint's policy refused it.
	OutcomeFailedClosed
	// OutcomeError: no decision — an error no fail policy answered (ErrKind says which).
	OutcomeError
)

// Decided reports whether the user got a decision (allowed or denied, a fail policy's answer
// included): a request that got none is a failure in the latency over offered requests.
func (o Outcome) Decided() bool { return o != OutcomeError }

// Classify fills r's Outcome, ErrKind and MayHaveDebited from its Decision and Err. Every driver
// calls it once per record, before the consumers; nothing else classifies an outcome.
func Classify(r *Record) {
	if r.Err != nil {
		r.Outcome = OutcomeError
		r.ErrKind = limiter.ClassifyError(r.Err)
		r.MayHaveDebited = limiter.MayHaveDebited(r.Err)
		return
	}
	r.ErrKind = 0
	r.MayHaveDebited = r.Decision.Failure.Failed && r.Decision.Failure.MayHaveDebited
	switch {
	case r.Decision.Source == limiter.FailOpen:
		r.Outcome = OutcomeFailedOpen
	case r.Decision.Source == limiter.FailClosed:
		r.Outcome = OutcomeFailedClosed
	case r.Decision.Allowed:
		r.Outcome = OutcomeAllowed
	default:
		r.Outcome = OutcomeDenied
	}
}

// StoreFailure reports the kind of the store failure behind r, if any: the error of a decision
// that ended in one, or the failure a fail policy answered.
func (r *Record) StoreFailure() (limiter.ErrorKind, bool) {
	if r.Outcome == OutcomeError {
		return r.ErrKind, true
	}
	f := r.Decision.Failure
	return f.Kind, f.Failed
}

// A Consumer hears every record of an in-process run (Options.Consumers), after the engine's own
// consumers, from many workers at once (and, for a decision the limiter parked, from the
// limiter's goroutine that answered it): it must be safe for concurrent use, cheap (it runs in
// the decision path), and must not keep the pointer.
type Consumer interface {
	Consume(r *Record)
}

// judge is the first consumer: it asks the checker for each decision's verdict, attributing
// overspend to the active fault where one explains it, and books every decision the store may
// have debited unseen (Record.MayHaveDebited) as an unknown outcome.
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
	// micro: the checker's clock is in Unix µs (Session.JudgeTick), not ms.
	micro bool
}

func (j judge) Consume(r *Record) {
	r.Verdict = check.Conforming
	at := r.AtMs
	if j.micro {
		at *= 1000
	}
	if j.redisClock && !r.Decision.At.IsZero() {
		r.AtMs = r.Decision.At.UnixMilli()
		at = r.AtMs
		if j.micro {
			// Redis's TIME is whole µs; At recovered from the script's float clock lies within
			// a few tens of ns of it.
			at = r.Decision.At.Round(time.Microsecond).UnixMicro()
		}
	}
	src := r.Decision.Source
	cause := check.Cause(src)
	if src == limiter.Central || src == limiter.Lease || !j.central {
		if c, ok := j.faults.CurrentCause(); ok {
			cause = c
		}
	}
	r.Verdict = Observe(j.checker, r, at, cause)
}

// Observe judges r on c at at, on c's clock (Unix ms; Unix µs for a checker of a kind judged to
// the microsecond, Session.JudgeTick), labelling any overspend with cause, as every driver's
// judge does, and returns the confirmed verdict. A request that got no decision is an unknown
// outcome when the store may have debited it, and nothing otherwise; it may have passed only
// through an opaque target (Record.Opaque). A decided one is judged as
// the user got it; a refusal the store may have debited all the same (a fail policy's answer to
// a timeout) is an unknown outcome besides: the envelope's D resolution debits it, which
// explains the refusal there, N does not. An allowed answer is in the allowed stream whatever
// the store did.
func Observe(c check.Checker, r *Record, at int64, cause check.Cause) check.Verdict {
	if r.Outcome == OutcomeError {
		if r.MayHaveDebited {
			c.ObserveUnknown(r.Key, at, r.Cost, r.Opaque)
		}
		return check.Conforming
	}
	v := c.ObserveAs(r.Key, at, r.Cost, r.Decision.Allowed, cause)
	if r.MayHaveDebited && !r.Decision.Allowed {
		c.ObserveUnknown(r.Key, at, r.Cost, false)
	}
	return v
}
