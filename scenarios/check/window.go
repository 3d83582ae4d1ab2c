package check

import "sync"

// Window is the overspend envelope of the window algorithms: at most Limit tokens allowed
// in any window of Window ms, per key (a sliding window, whatever window the algorithm itself
// keeps — so the fixed window's double burst at a window edge shows up as overspend). For each key
// it keeps the times of the last Limit conforming tokens in a ring, allocated at the key's first
// allowed request: 8 bytes x Limit per key that was ever allowed, plus a slice header.
//
// An allowed request conforms when fewer than Limit - cost + 1 conforming tokens fall in
// (t - Window, t]; otherwise it is overspend (counted, not recorded). A denied request that would
// have conformed is a false deny, provisional for the reorder window like the token bucket's.
// Times are clamped like the token bucket's: never backwards. Memory: the ring plus 40 bytes.
type Window struct {
	limit, window int64
	rings         [][]int64 // per key: conforming times, oldest first from head[key]
	head          []int32
	size          []int32
	last          []int64
	pend          []pendingDenies // provisional false denies, as in Bucket
	reorderMs     int64
	onCancel      func(atMs, n int64)
	stripes       [stripeCount]windowStripe

	causes causeTable
}

type windowStripe struct {
	mu sync.Mutex
	keyCounts
}

// NewWindow returns the envelope "at most limit in any windowMs" for keys dense keys.
func NewWindow(keys int, limit, windowMs int64) *Window {
	c := &Window{
		limit: max(limit, 1), window: max(windowMs, 1),
		rings: make([][]int64, keys), head: make([]int32, keys), size: make([]int32, keys), last: make([]int64, keys),
		pend: make([]pendingDenies, keys), reorderMs: DefaultReorderWindowMs,
	}
	c.causes.init()
	return c
}

// CauseFor returns the Cause for name, registering it if new (see causeTable).
func (c *Window) CauseFor(name string) Cause { return c.causes.causeFor(name) }

// SetReorderWindow sets how long a contested denial stays provisional (see
// Bucket.Observe: requests in flight together may reach the store in another order).
func (c *Window) SetReorderWindow(ms int64, onCancel func(atMs, n int64)) {
	c.reorderMs, c.onCancel = max(ms, 0), onCancel
}

// inWindow counts key's conforming tokens in (t - window, t]. Caller holds the stripe lock.
func (c *Window) inWindow(key int, t int64) int64 {
	ring := c.rings[key]
	n := int(c.size[key])
	h := int(c.head[key])
	var in int64
	for i := 0; i < n; i++ {
		if ring[(h+i)%len(ring)] > t-c.window {
			in++
		}
	}
	return in
}

// record appends cost conforming tokens at t, dropping the oldest beyond limit.
func (c *Window) record(key int, t, cost int64) {
	if c.rings[key] == nil {
		c.rings[key] = make([]int64, c.limit)
	}
	ring := c.rings[key]
	for range min(cost, c.limit) {
		n := int(c.size[key])
		h := int(c.head[key])
		if n < len(ring) {
			ring[(h+n)%len(ring)] = t
			c.size[key]++
		} else {
			ring[h] = t
			c.head[key] = int32((h + 1) % len(ring))
		}
	}
}

// ObserveAs judges one decision; see the type's doc.
func (c *Window) ObserveAs(key int, nowMs, cost int64, allowed bool, cause Cause) Verdict {
	sh := &c.stripes[key%stripeCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := max(nowMs, c.last[key])
	c.last[key] = t
	pd := &c.pend[key]
	if pd.count > 0 && t-pd.atMs > c.reorderMs {
		*pd = pendingDenies{} // past the window: they stay counted
	}
	in := c.inWindow(key, t)
	fits := in+cost <= c.limit
	switch {
	case allowed && fits:
		sh.allowed++
		c.record(key, t, cost)
		// A denial seen earlier that this allowed request explains (it took the room first in
		// the store) is withdrawn.
		if room := c.limit - in - cost; pd.count > 0 && int64(pd.cost) > room {
			n := min(int64(pd.count), int64(pd.cost)-room)
			sh.falseDenies -= n
			sh.withdrawn += n
			if c.onCancel != nil {
				c.onCancel(pd.atMs, n)
			}
			pd.count -= int32(n)
			pd.cost -= int32(n)
			if pd.count <= 0 || pd.cost <= 0 {
				*pd = pendingDenies{}
			}
		}
		return Conforming
	case allowed:
		sh.allowed++
		sh.overRequests++
		sh.over += cost
		sh.byCause[min(int(cause), overspendCauseSlots-1)]++
		return Overspend
	case in+cost+int64(pd.cost) <= c.limit:
		sh.denied++
		sh.falseDenies++
		if pd.count == 0 {
			pd.atMs = t
		}
		pd.count++
		pd.cost += int32(min(cost, 1<<30))
		return FalseDeny
	default:
		sh.denied++
		return Denied
	}
}

// ObserveUnknown books a decision whose outcome is unknown (a timeout) as if it was allowed:
// window algorithms count what they allow, and the script most likely ran.
func (c *Window) ObserveUnknown(key int, nowMs, cost int64) {
	sh := &c.stripes[key%stripeCount]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := max(nowMs, c.last[key])
	c.last[key] = t
	if c.inWindow(key, t)+cost <= c.limit {
		c.record(key, t, cost)
	}
	sh.unknown++
}

// Totals sums the counters of all keys.
func (c *Window) Totals() Totals {
	t := Totals{ByCause: map[string]int64{}}
	var byCause [overspendCauseSlots]int64
	for i := range c.stripes {
		sh := &c.stripes[i]
		sh.mu.Lock()
		sh.addTo(&t, &byCause)
		sh.mu.Unlock()
	}
	c.causes.add(t.ByCause, &byCause)
	return t
}
