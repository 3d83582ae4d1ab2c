package engine

import (
	"ratelab/limiter"
	"ratelab/results"
	"ratelab/run/check"
)

// Account is what a set of records came to — one second's, a region's, a whole run's: the one
// account every driver books its records in (Book) and every figure of a run is computed from
// (Interval for a row, FillSummary and results.LatencyOf for the summary, a region's figures).
// It is not safe for concurrent use: the engine's recorder keeps one per stripe and second
// under a lock.
type Account struct {
	sec                                   int // which second the slot holds; -1 when empty
	allowed, denied, failOpen, failClosed int64
	// errs counts the decisions that ended in an error, by kind (OutcomeError); answered the
	// store failures a fail policy answered, by kind.
	errs, answered [limiter.NumErrorKinds]int64
	// unknown counts the decisions the store may have debited unseen (Record.MayHaveDebited);
	// waitShort the store's denials whose WAIT came back short (Decision.Unreplicated).
	unknown, waitShort     int64
	overspend, falseDenies int64
	overspendTokens        int64
	// hist holds the latencies of the decided requests only: one that got no decision is a
	// failure in the latency over offered requests (see results.LatencyOf), never a latency.
	hist *results.Histogram
}

// NewAccount returns an empty account.
func NewAccount() *Account { return &Account{sec: -1, hist: results.NewHistogram()} }

// Hist is the latency histogram of the account's decided requests.
func (s *Account) Hist() *results.Histogram { return s.hist }

// Unknown is the number of records the store may have debited unseen.
func (s *Account) Unknown() int64 { return s.unknown }

// Verdicts are the confirmed overspend (requests and tokens) and false denies booked.
func (s *Account) Verdicts() (overspend, overspendTokens, falseDenies int64) {
	return s.overspend, s.overspendTokens, s.falseDenies
}

// Book adds one record, classified (Classify) and judged, to s.
func (s *Account) Book(r *Record) {
	switch r.Outcome {
	case OutcomeError:
		s.errs[r.ErrKind]++
	case OutcomeFailedOpen:
		s.failOpen++
	case OutcomeFailedClosed:
		s.failClosed++
	case OutcomeAllowed:
		s.allowed++
	default:
		s.denied++
	}
	if r.Outcome.Decided() {
		s.hist.Record(r.Latency)
	}
	if f := r.Decision.Failure; f.Failed && r.Outcome != OutcomeError {
		s.answered[f.Kind]++
	}
	if r.MayHaveDebited {
		s.unknown++
	}
	if r.Decision.Unreplicated {
		s.waitShort++
	}
	switch r.Verdict {
	case check.Overspend:
		s.overspend++
		s.overspendTokens += r.Cost
	case check.FalseDeny:
		s.falseDenies++
	}
}

// Add adds s to d.
func (d *Account) Add(s *Account) {
	d.allowed += s.allowed
	d.denied += s.denied
	d.failOpen += s.failOpen
	d.failClosed += s.failClosed
	for i := range d.errs {
		d.errs[i] += s.errs[i]
		d.answered[i] += s.answered[i]
	}
	d.unknown += s.unknown
	d.waitShort += s.waitShort
	d.overspend += s.overspend
	d.falseDenies += s.falseDenies
	d.overspendTokens += s.overspendTokens
	d.hist.Merge(s.hist)
}

// errors is the number of decisions that ended in an error (no decision).
func (d *Account) Errors() int64 {
	var n int64
	for _, e := range d.errs {
		n += e
	}
	return n
}

// decided is the number of requests that got a decision (a fail policy's answer included).
func (d *Account) Decided() int64 { return d.allowed + d.denied + d.failOpen + d.failClosed }

// storeErrors is the store failures of kind k: the decisions that ended in one, and those a
// fail policy answered.
func (d *Account) storeErrors(k limiter.ErrorKind) int64 { return d.errs[k] + d.answered[k] }

// Interval is the row of second sec with these stats and the dispatcher's counts: every driver
// writes its rows with it. Store failures count by kind whether the decision ended in one or a
// fail policy answered it; the percentiles are over the second's decided requests.
func (s *Account) Interval(sec int, offered, sent, dropped int64) results.Interval {
	iv := results.Interval{
		TS: float64(sec), Offered: offered, Sent: sent, Dropped: dropped,
		Allowed: s.allowed, Denied: s.denied, FailedOpen: s.failOpen, FailedClosed: s.failClosed,
		Errors:       s.Errors(),
		Timeout:      s.storeErrors(limiter.KindTimeout),
		ClusterDown:  s.storeErrors(limiter.KindClusterDown),
		TryAgain:     s.storeErrors(limiter.KindTryAgain),
		Conn:         s.storeErrors(limiter.KindConn),
		Unreplicated: s.storeErrors(limiter.KindUnreplicated),
		Other:        s.storeErrors(limiter.KindOther),
		Moved:        s.storeErrors(limiter.KindMoved),
		Ask:          s.storeErrors(limiter.KindAsk),
		NoScript:     s.storeErrors(limiter.KindNoScript),
		Unknown:      s.unknown, WaitShort: s.waitShort,
		Overspend: s.overspend, FalseDenies: s.falseDenies,
	}
	if s.hist.Count() > 0 {
		iv.P50Ms = s.hist.QuantileMs(50)
		iv.P90Ms = s.hist.QuantileMs(90)
		iv.P99Ms = s.hist.QuantileMs(99)
		iv.P999Ms = s.hist.QuantileMs(99.9)
		iv.MaxMs = s.hist.MaxMs()
	}
	return iv
}

// FillSummary sets the summary's outcomes and store failures by kind from the run's totals t:
// every driver's summary takes them from here.
func (t *Account) FillSummary(sum *results.Summary) {
	sum.Outcomes = results.Outcomes{
		Allowed: t.allowed, Denied: t.denied, FailedOpen: t.failOpen, FailedClosed: t.failClosed, Errors: t.Errors(),
		WaitShort: t.waitShort,
	}
	for k := range t.errs {
		addError(&sum.Errors, limiter.ErrorKind(k), t.storeErrors(limiter.ErrorKind(k)))
	}
}
