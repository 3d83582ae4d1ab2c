package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// quotaKeyPart follows the tenant's hash tag in a quota key: rl:{tenant}:quota:<index>. An
// endpoint starting with it would name a quota key, so the two-tier limiters refuse it.
const quotaKeyPart = "quota:"

// TwoTierPolicy is a long quota per tenant AND a short burst bucket per tenant endpoint, checked
// together: a request passes only if both have room, and a request denied by either debits
// neither. Example: 10,000 per day per tenant and 100/s with a burst of 200 per endpoint.
type TwoTierPolicy struct {
	// Bucket is the burst tier, one token bucket per tenant endpoint (as TokenBucket).
	Bucket BucketPolicy
	// Quota is the long tier's limit: cost units per tenant per QuotaWindow, 1..2^53.
	Quota int64
	// QuotaWindow is the quota's fixed window (aligned on multiples since the Unix epoch), a
	// whole number of milliseconds from 1 ms to 2^40 ms; 24*time.Hour for a daily quota.
	QuotaWindow time.Duration
}

// Validate reports every problem of p at once, each with its field name.
func (p TwoTierPolicy) Validate() error {
	var errs []error
	if err := checkPolicy(p.Bucket); err != nil {
		errs = append(errs, fmt.Errorf("bucket: %w", err))
	}
	if p.Quota < 1 || p.Quota > 1<<53 {
		errs = append(errs, fmt.Errorf("quota %d: must be 1..2^53 cost units per window", p.Quota))
	}
	if err := checkWindow(p.QuotaWindow); err != nil {
		errs = append(errs, fmt.Errorf("quota window: %w", err))
	}
	return errors.Join(errs...)
}

// QuotaTTL is the PEXPIRE of a quota key: the window plus WindowKeySlack.
func (p TwoTierPolicy) QuotaTTL() time.Duration { return p.QuotaWindow + WindowKeySlack }

// QuotaKey returns a tenant's quota counter key for quota window index (floor of Unix ms / window
// ms): "rl:{" + tenant + "}:quota:" + index, under the tenant's hash tag like its bucket keys.
func QuotaKey(tenant string, index int64) string {
	var buf [maxStackKey]byte
	b := AppendKey(buf[:0], tenant, quotaKeyPart)
	return string(strconv.AppendInt(b, index, 10))
}

// Tier names the tier that denied a two-tier request.
type Tier uint8

// The tiers, as two_tier.lua's tier_denied reply.
const (
	// TierNone: the request was allowed.
	TierNone Tier = iota
	// TierBucket: the endpoint's bucket lacked tokens (whatever the quota had).
	TierBucket
	// TierQuota: the bucket had the tokens but the tenant's quota window did not.
	TierQuota
)

// String returns "none", "bucket" or "quota".
func (t Tier) String() string {
	switch t {
	case TierNone:
		return "none"
	case TierBucket:
		return "bucket"
	case TierQuota:
		return "quota"
	}
	return "tier(" + strconv.Itoa(int(t)) + ")"
}

// twoTierRequestMs is requestMs plus the two-tier rule on endpoints.
func twoTierRequestMs(r Request) (int64, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return 0, err
	}
	if strings.HasPrefix(r.Endpoint, quotaKeyPart) {
		return 0, fmt.Errorf("%w: endpoint %q: must not start with %q (that names the tenant's quota key)", ErrBadRequest, r.Endpoint, quotaKeyPart)
	}
	return nowMs, nil
}

// decideTwoTier makes one two-tier decision at nowMs for cost units on the endpoint's bucket s and
// the tenant's quota windows q, the arithmetic of lua/two_tier.lua step by step:
//
//	s         = p.Bucket.Refill(s, nowMs)               // the bucket's own clamped now
//	count     = q's count in window idx = floor(nowMs / W); to_end = (idx + 1) * W - nowMs
//	allowed   = tokens >= cost && count + cost <= Q     // then tokens -= cost, count += cost
//	retry_ms  = 0 if allowed; -1 if cost > burst or cost > Q; else max(bucket's
//	            ceil((cost - tokens) / rate_per_ms) if short, to_end if the quota is short)
//	remaining = min(floor(tokens), max(0, Q - count));  reset_ms of that tier (bucket on a tie):
//	            bucket ceil((burst - tokens) / rate_per_ms), quota to_end (0 if count is 0)
//
// It returns the bucket state to store (refilled even when denied) and updates q in place.
func decideTwoTier(p TwoTierPolicy, s BucketState, q *fixedWindowState, nowMs, cost int64) (BucketState, Decision, Tier) {
	s = p.Bucket.Refill(s, nowMs)
	rate := p.Bucket.PerMs()
	c := float64(cost)
	w := p.QuotaWindow.Milliseconds()
	idx := nowMs / w
	count := quotaCount(q, idx)
	toEnd := (idx+1)*w - nowMs

	bucketOK := s.Tokens >= c
	quotaOK := *count+cost <= p.Quota
	var d Decision
	tier := TierNone
	switch {
	case bucketOK && quotaOK:
		s.Tokens -= c
		*count += cost
		d.Allowed = true
	case cost > p.Bucket.Burst || cost > p.Quota:
		d.RetryAfter = RetryNever
	default:
		var retry int64
		if !bucketOK {
			retry = int64(math.Ceil((c - s.Tokens) / rate))
		}
		if !quotaOK {
			retry = max(retry, toEnd)
		}
		d.RetryAfter = msDuration(retry)
	}
	if !d.Allowed {
		tier = TierQuota
		if !bucketOK {
			tier = TierBucket
		}
	}
	d.Remaining = int64(math.Floor(s.Tokens))
	d.ResetAfter = msDuration(int64(math.Ceil((float64(p.Bucket.Burst) - s.Tokens) / rate)))
	if qrem := max(0, p.Quota-*count); qrem < d.Remaining {
		d.Remaining = qrem
		d.ResetAfter = 0
		if *count > 0 {
			d.ResetAfter = msDuration(toEnd)
		}
	}
	return s, d, tier
}

// quotaCount returns the count of window idx in q, moving q's two windows forward when idx is
// newer (a new window counts 0, as a missing Redis key does). A window older than both held is
// not remembered: it gets a scratch count of 0 (see FixedWindow for the same limit).
func quotaCount(q *fixedWindowState, idx int64) *int64 {
	switch {
	case idx == q.curIdx:
		return &q.cur
	case idx == q.prevIdx:
		return &q.prev
	case idx > q.curIdx:
		q.prevIdx, q.prev = q.curIdx, q.cur
		q.curIdx, q.cur = idx, 0
		return &q.cur
	case idx > q.prevIdx:
		q.prevIdx, q.prev = idx, 0
		return &q.prev
	}
	return new(int64)
}

// tenantTiers is one tenant's state in the twin: its quota windows and its endpoints' buckets,
// under one lock so that a decision reads and writes both atomically.
type tenantTiers struct {
	quota   fixedWindowState
	buckets map[string]*BucketState
}

// TwoTier is the in-memory twin of RedisTwoTier: the same decisions from the same arithmetic
// (decideTwoTier), with the limits of TokenBucket (keys never expire) and FixedWindow (only the
// two newest quota windows of a tenant are held). It is safe for concurrent use; a decision on an
// existing tenant endpoint allocates nothing. The zero value is not usable: use NewTwoTier.
type TwoTier struct {
	policy  TwoTierPolicy
	tenants stateStripes[tenantTiers]
}

var _ Limiter = (*TwoTier)(nil)

// NewTwoTier returns an empty in-memory two-tier limiter with policy p. Timeout and NOSCRIPT
// options are ignored; WithPolicyFunc and WithRedisClock are refused (ErrBadConfig).
func NewTwoTier(p TwoTierPolicy, opts ...Option) (*TwoTier, error) {
	if _, err := newTwoTierConfig(p, opts); err != nil {
		return nil, err
	}
	t := &TwoTier{policy: p}
	t.tenants.init()
	return t, nil
}

// newTwoTierConfig checks p and applies opts, refusing the options two tiers cannot honour.
func newTwoTierConfig(p TwoTierPolicy, opts []Option) (config, error) {
	if err := p.Validate(); err != nil {
		return config{}, fmt.Errorf("%w: two-tier policy: %w", ErrBadConfig, err)
	}
	cfg, err := newWindowConfig("two tier", opts)
	if err != nil {
		return cfg, err
	}
	if cfg.redisClock {
		return cfg, fmt.Errorf("%w: two tier: WithRedisClock does not apply: the quota window is chosen from the request's time; drop the option", ErrBadConfig)
	}
	return cfg, nil
}

// Allow decides r at r.Now (time.Now when zero). ctx is not used.
func (t *TwoTier) Allow(_ context.Context, r Request) (Decision, error) {
	nowMs, err := twoTierRequestMs(r)
	if err != nil {
		return Decision{}, err
	}
	d, _ := t.AllowTierAt(r.Tenant, r.Endpoint, nowMs, r.Cost)
	d.At = decidedAt(r, nowMs)
	return d, nil
}

// AllowAt decides a request of cost units (>= 0) of tenant's endpoint at nowMs (Unix ms, > 0):
// the pure, clock-free form of Allow (the request checks of Allow are not repeated; Decision.At
// is nowMs).
func (t *TwoTier) AllowAt(tenant, endpoint string, nowMs, cost int64) Decision {
	d, _ := t.AllowTierAt(tenant, endpoint, nowMs, cost)
	return d
}

// AllowTierAt is AllowAt that also returns the tier that denied the request (TierNone if allowed).
func (t *TwoTier) AllowTierAt(tenant, endpoint string, nowMs, cost int64) (Decision, Tier) {
	stripe, st := t.tenants.lockString(tenant)
	if st.buckets == nil {
		st.buckets = make(map[string]*BucketState)
	}
	b := st.buckets[endpoint]
	if b == nil {
		b = new(BucketState)
		st.buckets[endpoint] = b
	}
	var d Decision
	var tier Tier
	*b, d, tier = decideTwoTier(t.policy, *b, &st.quota, nowMs, cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, time.UnixMilli(nowMs)
	return d, tier
}

// BucketState returns the stored bucket of tenant's endpoint and whether it exists. Like
// QuotaCount it is a probe for tests and reports; it may leave an empty entry for an unknown tenant.
func (t *TwoTier) BucketState(tenant, endpoint string) (BucketState, bool) {
	stripe, st := t.tenants.lockString(tenant)
	defer stripe.mu.Unlock()
	if b := st.buckets[endpoint]; b != nil {
		return *b, true
	}
	return BucketState{}, false
}

// QuotaCount returns tenant's count in quota window index: 0 when the twin does not hold that
// window (never counted into, or older than the two newest).
func (t *TwoTier) QuotaCount(tenant string, index int64) int64 {
	stripe, st := t.tenants.lockString(tenant)
	defer stripe.mu.Unlock()
	switch q := st.quota; index {
	case q.curIdx:
		return q.cur
	case q.prevIdx:
		return q.prev
	}
	return 0
}
