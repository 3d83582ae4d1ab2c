package limiter

import (
	"context"
	"fmt"
	"hash/maphash"
	"time"
)

// The decision path of LeaseLimiter.Allow, from the request to its decision: the lease pays
// (pay), or the request is denied from local knowledge, or it waits for the fetch in flight on
// its key, or it fetches (unpaid, denyLocally, await, fetchFor). AllowAsync (lease_async.go)
// takes the same steps and parks where Allow waits.

// Allow decides r at r.Now (time.Now when zero): from the key's lease when it holds r.Cost
// tokens, else after a fetch of max(size, missing) tokens, of which at least the missing ones
// must be granted. Remaining is the lease's unspent tokens (the central bucket's on a central
// denial); ResetAfter is 0 on lease decisions (the lease does not know the central bucket).
// A request whose fetch was still in flight when Drop ran is denied (RetryAfter 1 ms): its
// grant died with the gateway. Errors wrap the client's error (classify them with
// ClassifyError), ErrBadReply, ErrBadRequest or the waiting request's context error.
func (l *LeaseLimiter) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	at := decidedAt(r, nowMs)
	l.observe(nowMs)
	var buf [maxStackKey]byte
	key := AppendKey(buf[:0], r.Tenant, r.Endpoint)
	stripe, e := l.entry(key)
	src := Lease
	waited := false
	for {
		// The path most decisions take, its decision built here: the lease pays.
		if l.pay(e, key, nowMs, r.Cost) {
			d := Decision{Allowed: true, Remaining: e.tokens, Source: src, At: at}
			stripe.mu.Unlock()
			return d, nil
		}
		d, step := l.unpaid(e, key, nowMs, r.Cost)
		if step == stepDecided {
			stripe.mu.Unlock()
			d.At = at
			return d, nil
		}
		if !waited {
			waited = true // counted once per decision, however many rounds it waits
			l.waited.Add(1)
		}
		if step == stepWait {
			f := e.fetch
			stripe.mu.Unlock()
			if d, done, err := l.await(ctx, f, key); done {
				return withAt(d, at, err)
			}
			stripe.mu.Lock()
			continue
		}
		d, done, err := l.fetchFor(ctx, stripe, e, key, nowMs, r.Cost)
		if done {
			stripe.mu.Unlock()
			return withAt(d, at, err)
		}
		// Requests spending from the lease meanwhile may have left it short again; then loop
		// and fetch again (each round spends or is refused, so the loop ends).
		src = Central
	}
}

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

// denyLocally denies, without a round trip, a request for cost tokens on key at nowMs that
// lease e cannot pay, when the central bucket is known not to pay it either: it refused as many
// tokens until refusedUntil, or it is drained (refresh-ahead). ok is false when the request must
// wait for a fetch or start one. Called with e's stripe locked.
func (l *LeaseLimiter) denyLocally(e *leaseEntry, key []byte, nowMs, cost int64) (d Decision, ok bool) {
	if nowMs < e.refusedUntil && cost >= e.refusedCost && e.fetch == nil {
		return Decision{RetryAfter: time.Duration(e.refusedUntil-nowMs) * time.Millisecond, Remaining: e.tokens, Source: Lease}, true
	}
	if !l.refresh || !(nowMs < e.drainedUntil || (e.fetch != nil && e.fetch.drained)) {
		return Decision{}, false
	}
	// The last answer found the central bucket with less than one token: deny at once and let
	// one refresh collect what refilled for the requests after it, instead of every request
	// waiting a round trip for a token or two that only one of them can have. However long that
	// refresh takes (a loaded Redis, a failover), nobody waits.
	retry := time.Millisecond
	switch {
	case nowMs < e.refusedUntil:
		retry = time.Duration(e.refusedUntil-nowMs) * time.Millisecond
	case e.fetch == nil:
		l.startRefresh(e, string(key), nowMs).drained = true
	}
	return Decision{RetryAfter: retry, Remaining: e.tokens, Source: Lease}, true
}

// await waits, with key's stripe unlocked, for fetch f in flight on key. done is true when f's
// outcome decides the request: f's error, f's denial (Source Lease), or ctx's end; otherwise f
// brought tokens and the request tries the lease again.
func (l *LeaseLimiter) await(ctx context.Context, f *leaseCall, key []byte) (d Decision, done bool, err error) {
	if l.onWait != nil {
		l.onWait()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return Decision{}, true, fmt.Errorf("limiter: lease %s: waiting for the fetch in flight: %w", string(key), ctx.Err())
	}
	if f.err != nil {
		return Decision{}, true, f.err
	}
	if f.granted == 0 {
		d := f.denial
		d.Source = Lease
		return d, true, nil
	}
	return Decision{}, false, nil
}

// fetchFor runs the fetch of a request for cost tokens on key at nowMs that lease e cannot pay:
// it lacks need = cost - e.tokens >= 1 tokens, so max(size, need) are wanted and at least need
// must be granted. Meanwhile the fetch is e's fetch in flight and stripe is unlocked; it is
// locked again when fetchFor returns. done is true when the fetch decides the request: its error
// or the central denial (Source Central); otherwise the grant joined the lease.
func (l *LeaseLimiter) fetchFor(ctx context.Context, stripe *leaseStripe, e *leaseEntry, key []byte, nowMs, cost int64) (d Decision, done bool, err error) {
	need := cost - e.tokens
	f := &leaseCall{done: make(chan struct{})}
	e.fetch = f
	gen := l.gen.Load()
	stripe.mu.Unlock()
	granted, denial, emptyMs, err := l.fetch(ctx, string(key), nowMs, max(l.size, need), need)
	stripe.mu.Lock()
	granted, denial = l.settle(stripe, e, f, gen, nowMs, need, granted, denial, emptyMs, err)
	if len(f.waiters) > 0 {
		// Requests that AllowAsync parked on this fetch: answered with the stripe unlocked,
		// then this request tries the lease again as usual.
		out := l.wake(stripe, e, f)
		stripe.mu.Unlock()
		deliver(out)
		stripe.mu.Lock()
	}
	if err != nil {
		return Decision{}, true, err
	}
	if granted == 0 {
		denial.Source = Central
		return denial, true, nil
	}
	return Decision{}, false, nil
}

// entry returns key's stripe, locked, and key's lease in it (a new, empty one on first use).
func (l *LeaseLimiter) entry(key []byte) (*leaseStripe, *leaseEntry) {
	stripe := &l.stripes[maphash.Bytes(l.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	e := stripe.m[string(key)] // no allocation: the compiler looks up without a string copy
	if e == nil {
		e = new(leaseEntry)
		stripe.m[string(key)] = e
	}
	return stripe, e
}

// withAt returns d made at at, or err.
func withAt(d Decision, at time.Time, err error) (Decision, error) {
	if err != nil {
		return Decision{}, err
	}
	d.At = at
	return d, nil
}

// observe advances the latest request time seen (the clock of Outstanding) to nowMs, and takes
// the leases that expire by then out of the held count. Called with no stripe locked.
func (l *LeaseLimiter) observe(nowMs int64) {
	for {
		last := l.lastMs.Load()
		if nowMs <= last {
			return
		}
		if l.lastMs.CompareAndSwap(last, nowMs) {
			l.book.expire(nowMs)
			return
		}
	}
}
