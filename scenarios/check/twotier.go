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
//     boundary slack to forgive. Its clock never moves backwards per tenant.
//   - The burst: per tenant endpoint, the exact token bucket of Bucket.
//
// An allowed request conforms only when its tenant's quota has room AND the bucket envelope has
// the tokens; then both are debited. An allowed request beyond the quota is overspend (the
// bucket is not asked, nothing is debited); one within the quota is judged by the bucket. A
// denied request is rightly denied when the quota is full; otherwise the bucket decides whether
// the denial was false. So a request the limiter denies for its quota while the envelope's quota
// still had room counts as a false deny only if the bucket had the tokens too, and only
// provisionally: if the tenant's allowed requests observed within the reorder window fill the
// envelope's quota, they explain the denial (reordering) and it is withdrawn.
//
// Lock order: the tenant's stripe, then the bucket key's stripe inside Bucket.
type TwoTier struct {
	bucket          *Bucket
	quota, windowMs int64
	endpoints       int
	tenants         []quotaState
	stripes         [stripeCount]tierStripe
}

// quotaState is one tenant's quota window in the envelope, and its provisional false denies:
// denials while the envelope's quota still had room, which the tenant's allowed requests still
// in flight may explain (see ObserveAs).
type quotaState struct {
	idx, count    int64
	pendAt, pendN int64
	// credit is quota counted for unknown outcomes (timeouts), refundable when an allowed
	// request shows the limiter still had that room.
	credit int64
}

// tierStripe guards the quota state of the tenants t with t mod 256 == its index, and counts the
// decisions the quota tier judged alone (never passed to the bucket envelope).
type tierStripe struct {
	mu        sync.Mutex
	keyCounts // falseDenies stays 0: the bucket envelope judges those
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

// lockTenant locks key's tenant and returns its quota state, moved to the window of nowMs (or
// kept in its newer window: time never moves backwards).
func (c *TwoTier) lockTenant(key int, nowMs int64) (*tierStripe, *quotaState) {
	t := key / c.endpoints
	sh := &c.stripes[t%stripeCount]
	sh.mu.Lock()
	q := &c.tenants[t]
	if idx := nowMs / c.windowMs; idx > q.idx {
		q.idx, q.count, q.credit = idx, 0, 0
	}
	return sh, q
}

// ObserveAs judges one decision on key at nowMs; see the type's doc.
func (c *TwoTier) ObserveAs(key int, nowMs, cost int64, allowed bool, cause Cause) Verdict {
	sh, q := c.lockTenant(key, nowMs)
	defer sh.mu.Unlock()
	fits := q.count+cost <= c.quota
	if allowed && !fits && q.credit > 0 {
		// The limiter had room the envelope lacks: an unknown outcome counted here did not
		// take it after all. Give it back before judging.
		r := min(q.credit, q.count+cost-c.quota)
		q.count -= r
		q.credit -= r
		fits = q.count+cost <= c.quota
	}
	switch {
	case allowed && !fits:
		sh.allowed++
		sh.overRequests++
		sh.over += cost
		sh.byCause[min(int(cause), overspendCauseSlots-1)]++
		return Overspend
	case allowed:
		v := c.bucket.ObserveAs(key, nowMs, cost, true, cause)
		if v == Conforming {
			q.count += cost
			if q.pendN > 0 && q.count >= c.quota {
				c.withdrawQuota(sh, q, nowMs)
			}
		}
		return v
	case !fits:
		sh.denied++
		return Denied
	default:
		v := c.bucket.ObserveAs(key, nowMs, cost, false, cause)
		if v == FalseDeny {
			if q.pendN == 0 || nowMs-q.pendAt > c.bucket.window {
				q.pendAt, q.pendN = nowMs, 0
			}
			q.pendN++
		}
		return v
	}
}

// withdrawQuota takes back a tenant's provisional false denies once its quota is full in the
// envelope: requests in flight together reach Redis in another order than the envelope sees
// them, so the limiter may deny for a full quota while allowed requests that filled it are still
// on their way to the envelope. When those arrive within the reorder window and fill the quota,
// the denials are explained. A limiter that denies with room left never fills the envelope's
// quota, so its false denies stay. The caller holds the tenant's stripe lock.
func (c *TwoTier) withdrawQuota(sh *tierStripe, q *quotaState, nowMs int64) {
	if nowMs-q.pendAt <= c.bucket.window {
		sh.withdrawn += q.pendN
		if c.bucket.onCancel != nil {
			c.bucket.onCancel(q.pendAt, q.pendN)
		}
	}
	q.pendAt, q.pendN = 0, 0
}

// ObserveUnknown books a decision whose outcome is unknown: when the quota had room the script
// most likely allowed it, so the quota counts it (refundably: an allowed request beyond the quota
// later shows it did not) and the bucket envelope treats it as it does any unknown outcome; when
// the quota was full the script denied it.
func (c *TwoTier) ObserveUnknown(key int, nowMs, cost int64) {
	sh, q := c.lockTenant(key, nowMs)
	defer sh.mu.Unlock()
	if q.count+cost <= c.quota {
		q.count += cost
		q.credit += cost
		c.bucket.ObserveUnknown(key, nowMs, cost)
		return
	}
	sh.unknown++
}

// QuotaTotals returns what the quota tier judged alone: allowed requests beyond the quota
// (overspend) and denials the full quota explains.
func (c *TwoTier) QuotaTotals() (overspend, denied int64) {
	for i := range c.stripes {
		sh := &c.stripes[i]
		sh.mu.Lock()
		overspend += sh.overRequests
		denied += sh.denied
		sh.mu.Unlock()
	}
	return overspend, denied
}

// Totals sums both tiers' counters.
func (c *TwoTier) Totals() Totals {
	t := c.bucket.Totals()
	var byCause [overspendCauseSlots]int64
	for i := range c.stripes {
		sh := &c.stripes[i]
		sh.mu.Lock()
		k := sh.keyCounts
		k.withdrawn = 0
		k.addTo(&t, &byCause)
		// Withdrawn quota denials were counted as false denies by the bucket envelope.
		n := min(sh.withdrawn, t.FalseDenies)
		t.FalseDenies -= n
		t.Withdrawn += n
		sh.mu.Unlock()
	}
	c.bucket.causes.add(t.ByCause, &byCause)
	return t
}

// CauseFor returns the Cause for name (shared with the bucket envelope).
func (c *TwoTier) CauseFor(name string) Cause { return c.bucket.CauseFor(name) }

// SetReorderWindow sets the bucket envelope's reorder window (see Bucket).
func (c *TwoTier) SetReorderWindow(ms int64, onCancel func(atMs, n int64)) {
	c.bucket.SetReorderWindow(ms, onCancel)
}
