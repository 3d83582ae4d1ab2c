package check

// Window is the overspend envelope of the window algorithms: at most Limit tokens allowed in any
// window of Window ms, per key (a sliding window, whatever window the algorithm itself keeps — so
// the fixed window's double burst at a window edge shows up as overspend).
//
// Each request is judged at its own decision time t, also when it is observed after newer ones
// (requests complete out of order): it conforms when every window of Window ms that contains t
// — (s - Window, s] for each s in [t, t + Window) — has room for its cost beside the conforming
// tokens recorded so far, the ones later than t included. Otherwise it is overspend (counted, not
// recorded). A denied request that would have conformed is a false deny, provisional for the
// reorder window like the token bucket's (see Bucket.Observe). Verdicts are immediate: a request
// is judged against what has been observed when it arrives.
//
// Unknown outcomes (see Checker): N does not count them; D counts one in its window when the
// window has room for it (the algorithm only counts what it allows). Overspend is judged on
// both, false denies on both; the burst excess is 0 (a window has no burst).
//
// Time: a key's clock is its newest decision time; a request up to the reorder window older is
// judged at its own time, an older one at the window's edge (newest - reorder window): such a
// request is later than any decision can be in flight, and the tokens it would be judged
// against are no longer kept.
//
// Memory: per key an 80-byte windowLog and its runs, one per millisecond with conforming
// tokens, 24 bytes each, kept for Window + reorder window ms: at most min(W + R, 2 x limit x
// ceil((W + R) / W)) runs live (W the window, R the reorder window, both in ms; each resolution
// holds at most limit tokens per window and a run at least one token), in a buffer of at most
// 1.5 times that — at most 36 x min(W + R, 2 x limit x ceil((W + R) / W)) bytes, whatever the
// limit. A judgement costs two binary searches plus a step per run newer than the request.
type Window struct {
	limit, window int64
	keys          []windowLog
	reorderMs     int64
	onCancel      func(atMs, n int64)
	stripes       [stripeCount]stripe

	causes causeTable
}

// NewWindow returns the envelope "at most limit in any windowMs" for keys dense keys.
func NewWindow(keys int, limit, windowMs int64) *Window {
	c := &Window{
		limit: max(limit, 1), window: max(windowMs, 1),
		keys: make([]windowLog, keys), reorderMs: DefaultReorderWindowMs,
	}
	c.causes.init()
	return c
}

// CauseFor returns the Cause for name, registering it if new (see causeTable).
func (c *Window) CauseFor(name string) Cause { return c.causes.causeFor(name) }

// SetReorderWindow sets how long a contested denial stays provisional (see
// Bucket.Observe: requests in flight together may reach the store in another order), and how
// far behind the newest decision a request is still judged at its own time.
func (c *Window) SetReorderWindow(ms int64, onCancel func(atMs, n int64)) {
	c.reorderMs, c.onCancel = min(max(ms, 0), maxReorderMs), onCancel
}

// advance moves key's clock to nowMs if it is newer, drops what no request can be judged against
// any more and the provisional false denies past the reorder window, and returns the time the
// request is judged at (see the type's doc). The caller holds the stripe lock.
func (c *Window) advance(l *windowLog, nowMs int64) int64 {
	if nowMs > l.newest {
		if nowMs-l.newest > c.reorderMs {
			// Every pending denial is older than the window; dropping them here also keeps
			// pendingDenies.age exact.
			l.pendN, l.pendD = pendingDenies{}, pendingDenies{}
		}
		l.newest = nowMs
		l.prune(nowMs - c.window - c.reorderMs)
	}
	l.pendN.expire(l.newest, c.reorderMs)
	l.pendD.expire(l.newest, c.reorderMs)
	return max(nowMs, l.newest-c.reorderMs)
}

// ObserveAs judges one decision; see the type's doc. The verdict is the confirmed one.
func (c *Window) ObserveAs(key int, nowMs, cost int64, allowed bool, cause Cause) Verdict {
	sh := &c.stripes[key%stripeCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := &c.keys[key]
	t := c.advance(l, nowMs)
	pn, pd := l.peak(t, c.window)
	if !allowed {
		sh.denied++
		if pn+cost+int64(l.pendN.cost) <= c.limit {
			sh.possFalseDenies++
			l.pendN.add(t, cost)
		}
		if pd+cost+int64(l.pendD.cost) <= c.limit {
			sh.falseDenies++
			l.pendD.add(t, cost)
			return FalseDeny
		}
		return Denied
	}
	sh.allowed++
	fitsN, fitsD := pn+cost <= c.limit, pd+cost <= c.limit
	var dn, dd int64
	if fitsN {
		dn = cost
	} else {
		sh.overspent(cost, cause)
	}
	if fitsD {
		dd = cost
	} else {
		sh.possOverRequests++
		sh.possOver += cost
	}
	l.record(t, dn, dd)
	// A denial seen earlier that this allowed request explains (it took the room first in the
	// store) is withdrawn.
	if fitsN && l.pendN.count > 0 && int64(l.pendN.cost) > c.limit-pn-cost {
		sh.possFalseDenies -= l.pendN.take(float64(int64(l.pendN.cost) - (c.limit - pn - cost)))
	}
	if fitsD {
		c.explainD(sh, l, pd+cost)
	}
	if !fitsN {
		return Overspend
	}
	return Conforming
}

// explainD withdraws the confirmed provisional false denies that D's latest count, in, leaves no
// room for. The caller holds the stripe lock.
func (c *Window) explainD(sh *stripe, l *windowLog, in int64) {
	room := c.limit - in
	if l.pendD.count == 0 || int64(l.pendD.cost) <= room {
		return
	}
	at := l.pendD.at(l.newest)
	n := l.pendD.take(float64(int64(l.pendD.cost) - room))
	sh.falseDenies -= n
	sh.withdrawn += n
	if c.onCancel != nil {
		c.onCancel(at, n)
	}
}

// ObserveUnknown books a decision whose outcome is unknown (a timeout): D counts it in its window
// if there is room (window algorithms count what they allow), N does not. Window envelopes have
// no burst excess, so whether it passed does not matter.
func (c *Window) ObserveUnknown(key int, nowMs, cost int64, _ bool) {
	sh := &c.stripes[key%stripeCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := &c.keys[key]
	t := c.advance(l, nowMs)
	sh.unknown++
	if _, pd := l.peak(t, c.window); pd+cost <= c.limit {
		l.record(t, 0, cost)
		c.explainD(sh, l, pd+cost)
	}
}

// Totals sums the counters of all keys.
func (c *Window) Totals() Totals {
	t := newTotals()
	var byCause [overspendCauseSlots]int64
	for i := range c.stripes {
		sh := &c.stripes[i]
		sh.mu.Lock()
		sh.addTo(&t, &byCause)
		sh.mu.Unlock()
	}
	c.causes.add(t.ByCause, &byCause)
	t.order()
	return t
}
