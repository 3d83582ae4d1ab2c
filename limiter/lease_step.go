package limiter

// leaseStep is what one attempt at a decision came to.
type leaseStep uint8

const (
	stepDecided leaseStep = iota // decided: from the lease, or denied locally
	stepWait                     // the lease cannot pay and a fetch is in flight (e.fetch)
	stepFetch                    // the lease cannot pay and no fetch is in flight: start one
)

// pay spends cost from e's lease if it can, after writing off a lease that has expired, and
// starts a refresh-ahead top-up when the spend leaves the lease low or near its expiry. Small
// enough to inline into the callers, which build the decision themselves: the path most
// decisions take makes no call. Called with e's stripe locked.
func (l *LeaseLimiter) pay(e *leaseEntry, key []byte, nowMs, cost int64) bool {
	if e.tokens > 0 && nowMs >= e.expiresAt {
		l.writeOffExpired(e)
	}
	if e.tokens < cost {
		return false
	}
	e.tokens -= cost
	l.book.spend(e, cost)
	if l.refresh && e.fetch == nil {
		l.refreshIfLow(e, key, nowMs)
	}
	return true
}

// writeOffExpired loses the tokens left in e's expired lease. Called with e's stripe locked.
func (l *LeaseLimiter) writeOffExpired(e *leaseEntry) {
	l.lost.Add(e.tokens)
	l.book.writeOff(e)
	e.tokens = 0
}

// refreshIfLow starts a refresh-ahead top-up of e's lease when a spend has left it at or under
// the low mark, or near its expiry, and the central bucket is not known to refuse it. Called
// with e's stripe locked and no fetch of e's in flight.
func (l *LeaseLimiter) refreshIfLow(e *leaseEntry, key []byte, nowMs int64) {
	if e.tokens < l.size && nowMs >= e.refusedUntil && (e.tokens <= l.lowMark || nowMs >= e.expiresAt-l.refreshMs) {
		// Tokens from a grant that drained the central bucket: the top-up brings only what
		// refilled since, so the requests the lease cannot pay meanwhile are denied at once
		// instead of waiting for it, as for a drained key's refresh (see denyLocally).
		l.startRefresh(e, string(key), nowMs).drained = e.drainedUntil != 0
	}
}

// unpaid is what becomes of a request e's lease could not pay (pay was false): denied from
// local knowledge, or waiting for the fetch in flight, or a fetch of its own. Called with e's
// stripe locked.
func (l *LeaseLimiter) unpaid(e *leaseEntry, key []byte, nowMs, cost int64) (Decision, leaseStep) {
	if d, ok := l.denyLocally(e, key, nowMs, cost); ok {
		return d, stepDecided
	}
	if e.fetch != nil {
		return Decision{}, stepWait
	}
	return Decision{}, stepFetch
}

// try is pay, then unpaid: the decision of a request for cost tokens on key at nowMs from
// lease e alone (Source src when the lease pays), or what it must wait for. Called with e's
// stripe locked; Decision.At is the caller's to set.
func (l *LeaseLimiter) try(e *leaseEntry, key []byte, nowMs, cost int64, src Source) (Decision, leaseStep) {
	if l.pay(e, key, nowMs, cost) {
		return Decision{Allowed: true, Remaining: e.tokens, Source: src}, stepDecided
	}
	return l.unpaid(e, key, nowMs, cost)
}
