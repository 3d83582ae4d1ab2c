package check

import (
	"fmt"
	"sync"

	"ratelab/limiter"
)

// TwoTier is the overspend envelope of limiter.kind two-tier: both tiers are judged.
//
//   - The quota: per tenant, at most Quota tokens conform in each fixed window of WindowMs
//     aligned on the Unix epoch — exactly the window the limiter counts, so this tier has no
//     boundary slack to forgive. Each request is counted in the window of its own decision time,
//     also when it is observed after requests of a later window; the envelope keeps a tenant's
//     newest window and the one before it, and judges a request older than both (only possible
//     with a reorder window longer than the quota window) in the older.
//   - The burst: per tenant endpoint, the exact token buckets of Bucket (N, D and E).
//
// An allowed request conforms only when its tenant's quota has room AND the bucket envelope has
// the tokens; then both are debited. An allowed request beyond the quota is overspend (the
// bucket is not asked, nothing is debited); one within the quota is judged by the bucket. A
// denied request is rightly denied when the quota is full; otherwise the bucket decides whether
// the denial was false. So a request the limiter denies for its quota while the envelope's quota
// still had room counts as a false deny only if the bucket had the tokens too, and only
// provisionally: if the tenant's allowed requests observed within the reorder window fill the
// envelope's quota window of that denial, they explain it (reordering) and it is withdrawn.
//
// Unknown outcomes (see Checker): each tier keeps N and D, and the two are judged per
// resolution: D counts an unknown outcome in the quota, and debits it from the bucket, when both
// have room for it. The burst excess is the bucket tier's: E debits every allowed request,
// beyond the quota or not, and every unknown outcome.
//
// Lock order: the tenant's stripe, then the bucket key's stripe inside Bucket.
type TwoTier struct {
	bucket          *Bucket
	quota, windowMs int64
	endpoints       int
	tenants         []quotaState
	stripes         [stripeCount]tierStripe
}

// quotaWindow is a tenant's conforming tokens in one quota window, under N and D.
type quotaWindow struct{ idx, n, d int64 }

// quotaPending are one resolution's provisional false denies of a tenant: denials while the
// envelope's quota still had room, which the tenant's allowed requests still in flight may
// explain (see ObserveAs). at is the first one's time (Unix ms).
type quotaPending struct{ at, count int64 }

// quotaState is one tenant's quota in the envelope: its newest window, the one before, and its
// provisional false denies under N and D. 80 bytes.
type quotaState struct {
	cur, prev    quotaWindow
	pendN, pendD quotaPending
}

// tierStripe guards the quota state of the tenants t with t mod 256 == its index, and counts what
// the quota tier judged: allowed requests beyond the quota (under N, confirmed, and D,
// possible), denials a full quota explains (under D) and provisional false denies the quota
// withdrew (under D and N). 8 + 7 x 8 + 16 x 8 = 192 bytes.
type tierStripe struct {
	mu                       sync.Mutex
	over, overTokens         int64
	possOver, possOverTokens int64
	denied                   int64
	withdrawn, possWithdrawn int64
	byCause                  [overspendCauseSlots]int64
}

// NewTwoTier returns the two-tier envelope for tenants x endpoints keys (key = tenant *
// endpoints + endpoint, the engine's dense index): a bucket of policy per key and a quota of
// quota tokens per tenant per windowMs. It panics on sizes < 1 or a policy, quota or window that
// is not valid: the spec validates them first.
func NewTwoTier(tenants, endpoints int, policy limiter.BucketPolicy, quota, windowMs int64) *TwoTier {
	if tenants < 1 || endpoints < 1 || quota < 1 || windowMs < 1 {
		panic(fmt.Sprintf("check: NewTwoTier(tenants %d, endpoints %d, quota %d, window %d ms): all must be >= 1", tenants, endpoints, quota, windowMs))
	}
	if err := policy.Validate(); err != nil {
		panic(fmt.Sprintf("check: NewTwoTier policy: %v", err))
	}
	return &TwoTier{
		bucket:    NewBucket(tenants*endpoints, func(int) limiter.BucketPolicy { return policy }),
		quota:     quota,
		windowMs:  windowMs,
		endpoints: endpoints,
		tenants:   make([]quotaState, tenants),
	}
}

// lockTenant locks key's tenant and returns its quota state and the window nowMs is counted in
// (see the type's doc), moving the tenant to a newer window when nowMs is in one.
func (c *TwoTier) lockTenant(key int, nowMs int64) (*tierStripe, *quotaState, *quotaWindow) {
	t := key / c.endpoints
	sh := &c.stripes[t%stripeCount]
	sh.mu.Lock()
	q := &c.tenants[t]
	switch idx := nowMs / c.windowMs; {
	case idx > q.cur.idx:
		if idx == q.cur.idx+1 {
			q.prev = q.cur
		} else {
			q.prev = quotaWindow{idx: idx - 1}
		}
		q.cur = quotaWindow{idx: idx}
		return sh, q, &q.cur
	case idx == q.cur.idx:
		return sh, q, &q.cur
	default:
		return sh, q, &q.prev
	}
}

// ObserveAs judges one decision on key at nowMs; see the type's doc. The verdict is the confirmed
// one: overspend under N, a false deny under D.
func (c *TwoTier) ObserveAs(key int, nowMs, cost int64, allowed bool, cause Cause) Verdict {
	sh, q, w := c.lockTenant(key, nowMs)
	defer sh.mu.Unlock()
	fitsN, fitsD := w.n+cost <= c.quota, w.d+cost <= c.quota
	var s sides // the resolutions the bucket judges: those whose quota has room
	if fitsN {
		s |= sideN
	}
	if fitsD {
		s |= sideD
	}
	if !allowed {
		if !fitsD {
			sh.denied++
		}
		o := c.bucket.judge(key, nowMs, cost, false, cause, s)
		if o&falseN != 0 {
			c.pend(&q.pendN, nowMs)
		}
		if o&falseD != 0 {
			c.pend(&q.pendD, nowMs)
		}
		return o.verdict(false)
	}
	if !fitsN {
		sh.over++
		sh.overTokens += cost
		sh.byCause[min(int(cause), overspendCauseSlots-1)]++
	}
	if !fitsD {
		sh.possOver++
		sh.possOverTokens += cost
	}
	o := c.bucket.judge(key, nowMs, cost, true, cause, s)
	if fitsN && o&overN == 0 {
		w.n += cost
		sh.possWithdrawn += c.explain(&q.pendN, w.idx, w.n, nowMs)
	}
	if fitsD && o&overD == 0 {
		c.countD(sh, q, w, cost, nowMs)
	}
	if !fitsN {
		return Overspend
	}
	return o.verdict(true)
}

// countD counts cost conforming tokens in D's quota window w and withdraws the confirmed
// provisional false denies that filling it explains. The caller holds the tenant's stripe lock.
func (c *TwoTier) countD(sh *tierStripe, q *quotaState, w *quotaWindow, cost, nowMs int64) {
	w.d += cost
	at := q.pendD.at
	if n := c.explain(&q.pendD, w.idx, w.d, nowMs); n > 0 {
		sh.withdrawn += n
		if c.bucket.onCancel != nil {
			c.bucket.onCancel(at, n)
		}
	}
}

// pend books a provisional false deny at nowMs, starting afresh when the pending ones are older
// than the reorder window.
func (c *TwoTier) pend(p *quotaPending, nowMs int64) {
	if p.count == 0 || nowMs-p.at > c.bucket.window {
		p.at, p.count = nowMs, 0
	}
	p.count++
}

// explain takes back a tenant's provisional false denies once the quota window they were made in,
// idx, is full (count >= quota) in the envelope, and returns how many: requests in flight
// together reach Redis in another order than the envelope sees them, so the limiter may deny for
// a full quota while allowed requests that filled it are still on their way to the envelope.
// When those arrive within the reorder window and fill the quota, the denials are explained. A
// limiter that denies with room left never fills the envelope's quota, so its false denies stay.
func (c *TwoTier) explain(p *quotaPending, idx, count, nowMs int64) int64 {
	if p.count == 0 || count < c.quota || p.at/c.windowMs != idx {
		return 0
	}
	var n int64
	if d := nowMs - p.at; d <= c.bucket.window && d >= -c.bucket.window {
		n = p.count
	}
	*p = quotaPending{}
	return n
}

// ObserveUnknown books a decision whose outcome is unknown: N counts it nowhere; D counts it in
// the quota and debits it from the bucket when both have room (the script allows it only then);
// the bucket's E debits it when it may have passed.
func (c *TwoTier) ObserveUnknown(key int, nowMs, cost int64, passed bool) {
	sh, q, w := c.lockTenant(key, nowMs)
	defer sh.mu.Unlock()
	var s sides
	if w.d+cost <= c.quota {
		s = sideD
	}
	if c.bucket.unknown(key, nowMs, cost, s, passed) {
		c.countD(sh, q, w, cost, nowMs)
	}
}

// QuotaTotals returns what the quota tier judged alone: allowed requests beyond the quota
// (confirmed overspend) and denials the full quota explains (with every unknown outcome counted).
func (c *TwoTier) QuotaTotals() (overspend, denied int64) {
	for i := range c.stripes {
		sh := &c.stripes[i]
		sh.mu.Lock()
		overspend += sh.over
		denied += sh.denied
		sh.mu.Unlock()
	}
	return overspend, denied
}

// Totals sums both tiers' counters.
func (c *TwoTier) Totals() Totals {
	t := c.bucket.rawTotals()
	var byCause [overspendCauseSlots]int64
	var withdrawn, possWithdrawn int64
	for i := range c.stripes {
		sh := &c.stripes[i]
		sh.mu.Lock()
		t.OverspendRequests += sh.over
		t.OverspendTokens += sh.overTokens
		t.PossibleOverspendRequests += sh.possOver
		t.PossibleOverspendTokens += sh.possOverTokens
		withdrawn += sh.withdrawn
		possWithdrawn += sh.possWithdrawn
		for j, n := range sh.byCause {
			byCause[j] += n
		}
		sh.mu.Unlock()
	}
	// Withdrawn quota denials were counted as false denies by the bucket envelope (which may
	// have withdrawn some of them itself: never below zero).
	withdrawn = min(withdrawn, t.FalseDenies)
	t.FalseDenies -= withdrawn
	t.Withdrawn += withdrawn
	t.PossibleFalseDenies -= min(possWithdrawn, t.PossibleFalseDenies)
	c.bucket.causes.add(t.ByCause, &byCause)
	t.order()
	return t
}

// CauseFor returns the Cause for name (shared with the bucket envelope).
func (c *TwoTier) CauseFor(name string) Cause { return c.bucket.CauseFor(name) }

// SetReorderWindow sets the bucket envelope's reorder window (see Bucket); the quota tier uses
// the same.
func (c *TwoTier) SetReorderWindow(ms int64, onCancel func(atMs, n int64)) {
	c.bucket.SetReorderWindow(ms, onCancel)
}
