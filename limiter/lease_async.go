package limiter

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

var _ AsyncLimiter = (*LeaseLimiter)(nil)

// leaseWaiter is a request parked by AllowAsync on its key's fetch in flight (leaseCall.waiters)
// until that fetch answers; then it is decided as Allow would after await, or parked again.
type leaseWaiter struct {
	ctx        context.Context
	key        []byte // its own copy: the caller's buffer is gone
	nowMs      int64
	cost       int64
	at         time.Time
	parkedAt   time.Time // the wall clock when AllowAsync parked it
	src        Source    // Central once its own fetch brought tokens, as in Allow
	done       Deferred
	answered   atomic.Bool // set by whichever answers first: a fetch's waking, or ctx's end
	stopCancel func() bool // unregisters the ctx watch; nil when ctx cannot end
}

// leaseAnswer is a waiter's decision, delivered once its stripe is unlocked: a Deferred may take
// time, or even decide again on the same key.
type leaseAnswer struct {
	w   *leaseWaiter
	d   Decision
	err error
}

// AllowAsync decides r as Allow does, without holding the caller while Redis answers: a request
// the lease pays, or that is denied locally, is answered at once (parked false); one that would
// wait in Allow (for its own fetch or for the fetch in flight on its key) is parked on that
// fetch instead, and done hears its decision when the fetch answers. Parked requests on a key are
// decided in the order they parked, each at its own request time, and each gets what Allow
// would have given it: a share of the grant, the central denial (Source Central for the request
// whose fetch it was, Lease for the others), the fetch's error, or its own ctx's error if ctx
// ends first. One difference from Allow: a request parked on another request's fetch that fails
// tries again (a fetch of its own, or the next one on its key) when it has been parked less than
// the lease timeout, as a request that came to the key just after the failure would; so a slow
// Redis fails the requests whose own fetch timed out, not every request queued on the key, and a
// parked request waits at most about twice the timeout.
//
// The fetch a parked request starts runs under the lease timeout (DefaultTimeout when that is 0)
// with ctx's values but not its cancellation: a request that gives up does not fail the others
// parked on the fetch. It waits for one of WithLeaseMaxFetches slots first.
func (l *LeaseLimiter) AllowAsync(ctx context.Context, r Request, done Deferred) (Decision, bool, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, false, err
	}
	at := decidedAt(r, nowMs)
	l.observe(nowMs)
	var buf [maxStackKey]byte
	key := AppendKey(buf[:0], r.Tenant, r.Endpoint)
	stripe, e := l.entry(key)
	// As in Allow, the lease paying is decided here.
	if l.pay(e, key, nowMs, r.Cost) {
		d := Decision{Allowed: true, Remaining: e.tokens, Source: Lease, At: at}
		stripe.mu.Unlock()
		return d, false, nil
	}
	d, step := l.unpaid(e, key, nowMs, r.Cost)
	if step == stepDecided {
		stripe.mu.Unlock()
		d.At = at
		return d, false, nil
	}
	l.waited.Add(1)
	w := &leaseWaiter{ctx: ctx, key: bytes.Clone(key), nowMs: nowMs, cost: r.Cost, at: at, src: Lease, done: done,
		parkedAt: time.Now()}
	if ctx.Done() != nil {
		w.stopCancel = context.AfterFunc(ctx, func() {
			// Not through answer: this may run before stopCancel is set.
			if w.answered.CompareAndSwap(false, true) {
				w.done.Decided(Decision{}, fmt.Errorf("limiter: lease %s: waiting for the fetch in flight: %w", string(w.key), ctx.Err()))
			}
		})
	}
	if step == stepWait {
		if l.onWait != nil {
			l.onWait()
		}
		e.fetch.waiters = append(e.fetch.waiters, w)
	} else {
		l.fetchAsync(stripe, e, w)
	}
	stripe.mu.Unlock()
	return Decision{}, true, nil
}

// answer delivers w's decision from its fetch unless w was answered already (its ctx ended).
// Called with no stripe locked, after the stripe's lock was taken since w was parked (so
// stopCancel is visible).
func (w *leaseWaiter) answer(d Decision, err error) {
	if !w.answered.CompareAndSwap(false, true) {
		return
	}
	if w.stopCancel != nil {
		w.stopCancel()
	}
	if err == nil {
		d.At = w.at
	}
	w.done.Decided(d, err)
}

// deliver answers every waiter of out; called with no stripe locked.
func deliver(out []leaseAnswer) {
	for _, a := range out {
		a.w.answer(a.d, a.err)
	}
}

// fetchAsync starts, in the background, the fetch of parked request w that lease e cannot pay,
// with w as its first waiter, as fetchFor runs it for Allow. Called with e's stripe locked.
func (l *LeaseLimiter) fetchAsync(stripe *leaseStripe, e *leaseEntry, w *leaseWaiter) {
	need := w.cost - e.tokens
	f := &leaseCall{done: make(chan struct{}), owner: w, waiters: []*leaseWaiter{w}}
	e.fetch = f
	gen := l.gen.Load()
	key, nowMs := string(w.key), w.nowMs
	ctx := context.WithoutCancel(w.ctx)
	l.refreshing.Add(1)
	go func() {
		defer l.refreshing.Done()
		l.slots <- struct{}{}
		defer func() { <-l.slots }()
		if l.timeout == 0 {
			// No request's deadline bounds this fetch: its owner may give up, the others not.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, l.fetchTimeout())
			defer cancel()
		}
		granted, denial, emptyMs, err := l.fetch(ctx, key, nowMs, max(l.size, need), need)
		stripe.mu.Lock()
		l.settle(stripe, e, f, gen, nowMs, need, granted, denial, emptyMs, err)
		out := l.wake(stripe, e, f)
		stripe.mu.Unlock()
		deliver(out)
	}()
}

// wake decides, in the order they parked, the requests parked on fetch f, which settle has just
// booked into e: each gets f's error or denial, or tries the lease again and is answered, parked
// on the fetch in flight, or starts a fetch of its own. It returns the answers for delivery once
// stripe is unlocked. Called with stripe locked.
func (l *LeaseLimiter) wake(stripe *leaseStripe, e *leaseEntry, f *leaseCall) []leaseAnswer {
	ws := f.waiters
	f.waiters = nil
	var out []leaseAnswer
	var now time.Time
	if f.err != nil {
		now = time.Now()
	}
	for _, w := range ws {
		if w.answered.Load() {
			continue // its ctx ended first
		}
		switch {
		case f.err != nil:
			if f.owner == w || now.Sub(w.parkedAt) >= l.fetchTimeout() {
				out = append(out, leaseAnswer{w: w, err: f.err})
				continue
			}
			// Another request's fetch failed within this one's own timeout: it tries again,
			// as it would have had it come to its key after that fetch.
		case f.granted == 0:
			d := f.denial
			d.Source = Lease
			if f.owner == w {
				d.Source = Central
			}
			out = append(out, leaseAnswer{w: w, d: d})
			continue
		case f.owner == w:
			w.src = Central
		}
		d, step := l.try(e, w.key, w.nowMs, w.cost, w.src)
		switch step {
		case stepDecided:
			out = append(out, leaseAnswer{w: w, d: d})
		case stepWait:
			e.fetch.waiters = append(e.fetch.waiters, w)
		case stepFetch:
			l.fetchAsync(stripe, e, w)
		}
	}
	return out
}

// fetchTimeout is the deadline of a background fetch: the lease timeout, or DefaultTimeout when
// it is 0 (no request's deadline bounds such a fetch).
func (l *LeaseLimiter) fetchTimeout() time.Duration {
	if l.timeout == 0 {
		return DefaultTimeout
	}
	return l.timeout
}
