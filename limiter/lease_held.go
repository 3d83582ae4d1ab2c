package limiter

import (
	"math"
	"sync"
	"sync/atomic"
)

// heldBook counts the tokens a LeaseLimiter holds in its leases on its own clock (the latest
// request time seen): granted, and not yet spent, past their lease's expiry or dropped. That is
// Outstanding at every moment, kept as one atomic count instead of a scan, so that its highest
// value (OutstandingMax) is exact: the count only rises at a grant, and each grant's atomic add
// returns the count at that instant.
//
// A lease is in the count (leaseEntry.counted) from its grant until the clock passes its
// expiry, its tokens are written off as lost, or Drop. Expiries wait in a min-heap: the request
// that moves the clock past the earliest one writes those leases out before it decides, so a
// lease no request touches again leaves the count on time. Spends and write-offs change the
// count only while the lease is in it; a token spent by a request dated before its lease's
// expiry, after the clock passed it, was already out.
type heldBook struct {
	held, most atomic.Int64
	next       atomic.Int64 // the earliest expiry in the heap; math.MaxInt64 when empty
	mu         sync.Mutex   // guards heap; never held while taking a stripe's lock
	heap       []heldExpiry // min-heap by at
}

// heldExpiry is a lease in the count that leaves it at at, unless it was re-dated since (its
// entry's expiresAt differs) or left it otherwise (counted is false).
type heldExpiry struct {
	at     int64
	e      *leaseEntry
	stripe *leaseStripe
}

func (b *heldBook) init() { b.next.Store(math.MaxInt64) }

// spend takes n spent tokens of e out of the count. Called with e's stripe locked.
func (b *heldBook) spend(e *leaseEntry, n int64) {
	if e.counted && n != 0 {
		b.held.Add(-n)
	}
}

// writeOff takes all of e's tokens out of the count: they expired or were dropped. Called with
// e's stripe locked.
func (b *heldBook) writeOff(e *leaseEntry) {
	if e.counted {
		e.counted = false
		b.held.Add(-e.tokens)
	}
}

// holdGrant books a grant into the count: e (in stripe, locked) now holds e.tokens until
// e.expiresAt, of which the count had was before (heldBy). The limiter's clock is read after
// the expiry is queued, so a clock that passes the expiry meanwhile either finds it in the heap
// (and waits for e's stripe) or is seen here.
func (b *heldBook) holdGrant(stripe *leaseStripe, e *leaseEntry, was int64, clock *atomic.Int64) {
	if e.queued != e.expiresAt {
		e.queued = e.expiresAt
		b.push(heldExpiry{at: e.expiresAt, e: e, stripe: stripe})
	}
	var now int64
	if e.counted = e.expiresAt > clock.Load(); e.counted {
		now = e.tokens
	}
	e.most = max(e.most, now)
	if d := now - was; d > 0 {
		b.raise(b.held.Add(d))
	} else if d < 0 {
		b.held.Add(d)
	}
}

// raise lifts the high-water mark to v.
func (b *heldBook) raise(v int64) {
	for {
		most := b.most.Load()
		if v <= most || b.most.CompareAndSwap(most, v) {
			return
		}
	}
}

// heldBy returns how many of e's tokens are in the count. Called with e's stripe locked.
func heldBy(e *leaseEntry) int64 {
	if e.counted {
		return e.tokens
	}
	return 0
}

// expire takes out of the count every lease whose expiry is at or before clockMs. It locks one
// stripe at a time and must be called with none locked.
func (b *heldBook) expire(clockMs int64) {
	for clockMs >= b.next.Load() {
		x, ok := b.pop(clockMs)
		if !ok {
			return
		}
		x.stripe.mu.Lock()
		if x.e.counted && x.e.expiresAt == x.at {
			b.writeOff(x.e)
		}
		x.stripe.mu.Unlock()
	}
}

// push adds x to the heap.
func (b *heldBook) push(x heldExpiry) {
	b.mu.Lock()
	h := append(b.heap, x)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	b.heap = h
	b.next.Store(h[0].at)
	b.mu.Unlock()
}

// pop removes and returns the earliest expiry if it is at or before clockMs.
func (b *heldBook) pop(clockMs int64) (heldExpiry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.heap
	if len(h) == 0 || h[0].at > clockMs {
		return heldExpiry{}, false
	}
	x := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = heldExpiry{} // keep no entry alive through the backing array
	h = h[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].at < h[least].at {
			least = l
		}
		if r < len(h) && h[r].at < h[least].at {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	b.heap = h
	if len(h) == 0 {
		b.next.Store(math.MaxInt64)
	} else {
		b.next.Store(h[0].at)
	}
	return x, true
}

// The readings of what the leases hold, and Drop, which loses it all.

// LostTokens returns the leased tokens never spent: expired, or dropped by Drop.
func (l *LeaseLimiter) LostTokens() int64 { return l.lost.Load() }

// Outstanding returns the unspent, unexpired leased tokens of all keys at the latest request
// time seen: what this gateway holds now (OutstandingMax is the most it held). It locks every
// stripe in turn.
func (l *LeaseLimiter) Outstanding() int64 { return l.OutstandingAt(l.lastMs.Load()) }

// OutstandingMax returns the most tokens this limiter's leases held at any moment so far, over
// all keys: granted, and not yet spent, expired or dropped, on the clock of Outstanding (the
// tokens a crash of this gateway could lose at worst). It is tracked exactly as grants, spends,
// expiries and drops happen, and costs one atomic load. A key's burst excess is bounded by its
// own leases: see KeyOutstandingMax.
func (l *LeaseLimiter) OutstandingMax() int64 { return l.book.most.Load() }

// KeyOutstandingMax calls fn with each key this limiter has leased tokens for and the most
// tokens its lease on the key held at any moment, on the clock of OutstandingMax. A key's
// burst excess stays within the most tokens outstanding in its leases at once, over every
// gateway: with one gateway that is this figure exactly; the sum of the gateways' figures for
// a key bounds it (and equals it when they all held their most at once). It is kept at each
// grant, under the key's lock, so a decision from the lease pays nothing for it. It locks every
// stripe in turn; fn must not call the limiter.
func (l *LeaseLimiter) KeyOutstandingMax(fn func(key string, most int64)) {
	for i := range l.stripes {
		stripe := &l.stripes[i]
		stripe.mu.Lock()
		for k, e := range stripe.m {
			if e.most > 0 {
				fn(k, e.most)
			}
		}
		stripe.mu.Unlock()
	}
}

// OutstandingAt is Outstanding at nowMs (Unix ms).
func (l *LeaseLimiter) OutstandingAt(nowMs int64) int64 {
	var n int64
	for i := range l.stripes {
		stripe := &l.stripes[i]
		stripe.mu.Lock()
		for _, e := range stripe.m {
			if nowMs < e.expiresAt {
				n += e.tokens
			}
		}
		stripe.mu.Unlock()
	}
	return n
}

// Drop simulates the death of the gateway: every lease is lost (counted in LostTokens), and a
// fetch in flight loses its grant too. The central bucket gets nothing back.
func (l *LeaseLimiter) Drop() {
	for i := range l.stripes {
		l.stripes[i].mu.Lock()
	}
	l.gen.Add(1)
	var n int64
	for i := range l.stripes {
		for _, e := range l.stripes[i].m {
			n += e.tokens
			l.book.writeOff(e)
			e.tokens, e.expiresAt = 0, 0
		}
	}
	l.lost.Add(n)
	for i := range l.stripes {
		l.stripes[i].mu.Unlock()
	}
}
