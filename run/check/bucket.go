package check

import (
	"fmt"
	"sync"

	"ratelab/limiter"
)

const (
	// overspendMaxClasses is how many distinct policies are cached. Class ids are uint16:
	// 0 = not looked up yet, 1..65534 = cached policy id+1, overspendUncached = call the func.
	overspendMaxClasses = 1<<16 - 2
	overspendUncached   = 1<<16 - 1
	overspendChunk      = 256 // policies per table chunk
)

// Bucket is the overspend envelope of the token-bucket limiters: for each key three virtual
// token buckets of the key's policy, started full, that see the observed requests in the order
// Observe is called for that key. They refill with the arithmetic of limiter.BucketPolicy.Refill
// — that of the Lua script and of the in-memory twin, time in Unix ms, a clock that never goes
// backwards — so a correct central limiter whose decisions are observed in its own order scores
// exactly zero overspend and zero false denies. Reordering between the limiter and Observe
// (requests in flight together) is the only source of a residue.
//
//   - N and D are exact buckets: they debit conforming requests only. N never debits an unknown
//     outcome, D debits each one it has the tokens for (see Checker): confirmed overspend and
//     possible false denies are judged on N, possible overspend and confirmed false denies on D.
//   - E debits every allowed request, overspent ones included, and every unknown outcome that
//     may have passed (ObserveUnknown), and may go below zero: its deepest deficit is the key's
//     burst excess (see Totals.BurstExcess).
//     A stream that conforms to (rate, burst + x) never takes E below -x. E is also the bucket
//     of the allowed stream as it happened: a denial is false only if E had the tokens too (see
//     Observe).
//
// Memory: 72 bytes per key, in one record so that an observation touches one or two adjacent
// cache lines — the key's clock, the tokens of N, D and E, E's deepest deficit (8 bytes each),
// N's and D's provisional false denies (12 each), 5 bytes of fail-policy debt (an allowed
// fail-open or local decision the store never counted: the store's later overspend on that key
// is attributed to it), a flag (ePassed) and a 2-byte policy class — plus about 100 KB fixed (256 padded lock stripes, the policy table and its index). The policy func
// is called once per key, at its first observation; distinct policies are deduplicated into a
// table of up to 65534 classes (a key beyond that calls the func whenever its clock advances).
// A policy is therefore fixed per key for the checker's lifetime.
//
// Safe for concurrent use: Observe takes the key's stripe lock and allocates nothing after a key's
// first observation.
type Bucket struct {
	policy func(key int) limiter.BucketPolicy
	keys   []bucketKey

	causes causeTable

	// window is how far (ms, on the requests' clock) a contested denial stays open; see Observe.
	window int64
	// onCancel, if set, hears of confirmed provisional false denies withdrawn (at the denied
	// request's ms).
	onCancel func(atMs int64, n int64)
	stripes  [stripeCount]stripe

	// The policy table. Entry i lives at chunks[i/256][i%256]. It grows under polMu; an entry is
	// written before any key's class points at it, and that class is read under the key's stripe
	// lock after it was written under the same lock, so readers need no lock. Chunks never move,
	// so a reader never sees a slice header being replaced.
	polMu  sync.Mutex
	polIdx map[limiter.BucketPolicy]uint16
	nPol   int
	chunks [(overspendMaxClasses + overspendChunk - 1) / overspendChunk]*[overspendChunk]limiter.BucketPolicy
}

// bucketKey is one key's envelope state: 72 bytes.
type bucketKey struct {
	lastMs       int64   // the key's clock (Unix ms); 0: not observed yet (every bucket full)
	n, d, e      float64 // tokens of the N, D and E buckets
	excess       float64 // E's deepest deficit so far, >= 0
	pendN, pendD pendingDenies
	debt         float32 // tokens N paid for decisions the store never saw
	debtBy       Cause   // the cause of that debt (fail-open, local)
	// ePassed: E debited an unknown outcome that may have passed since it was last full, which
	// N never debits: until E is full again it is not N's allowed stream (allowedStream).
	ePassed bool
	class   uint16 // see overspendMaxClasses
}

// allowedStream is what the N resolution's allowed stream as it happened (every allowed request
// debited, overspent ones too) holds, given N's tokens n: E's, unless E also debited an unknown
// outcome N does not (ePassed); then n, which is no less.
func (k *bucketKey) allowedStream(n float64) float64 {
	if k.ePassed {
		return n
	}
	return min(n, k.e)
}

// NewBucket returns a checker for keys dense indices 0..keys-1 (the engine maps
// tenant x endpoint to one index). policy gives a key's bucket policy; it must return a policy
// that passes BucketPolicy.Validate (the spec validates it), must not call back into the
// checker, and may be called from any goroutine. NewBucket panics on keys < 0 or a nil
// policy: both are wiring errors.
func NewBucket(keys int, policy func(key int) limiter.BucketPolicy) *Bucket {
	if keys < 0 {
		panic(fmt.Sprintf("check: NewBucket keys %d: must be >= 0 (tenants x endpoints)", keys))
	}
	if policy == nil {
		panic("check: NewBucket policy is nil: pass a func returning each key's limiter.BucketPolicy")
	}
	c := &Bucket{
		policy: policy,
		keys:   make([]bucketKey, keys),
		window: DefaultReorderWindowMs,
		polIdx: make(map[limiter.BucketPolicy]uint16),
	}
	c.causes.init()
	return c
}

// SetReorderWindow sets how long (ms, on the requests' clock) a denial the envelope disagrees with
// stays provisional; set it to at least the longest time a decision can be in flight (the
// limiter's timeout); at most 2^30 ms, longer is cut to that. onCancel, if not nil, is told of
// confirmed provisional false denies withdrawn, with the time of the denied request. Call before
// the first Observe.
func (c *Bucket) SetReorderWindow(ms int64, onCancel func(atMs int64, n int64)) {
	c.window = min(max(ms, 0), maxReorderMs)
	c.onCancel = onCancel
}

// Keys is the number of keys the checker was sized for.
func (c *Bucket) Keys() int { return len(c.keys) }

// Observe judges one decision on key at nowMs (Unix milliseconds, > 0) for cost tokens (>= 0) and
// returns the confirmed verdict. The key's buckets first refill to nowMs — a nowMs older than the
// key's latest observation refills nothing and does not move its clock back — then, on N and D
// alike:
//
//	allowed, tokens >= cost  -> conforming, tokens -= cost
//	allowed, tokens <  cost  -> overspend  (counted with its cost; not debited)
//	denied,  tokens >= cost  -> false deny (not debited; provisional, see below)
//	denied,  tokens <  cost  -> denied
//
// where a denial is false only if E, which debited every allowed request, overspent ones too,
// also holds the tokens. An overspent request is not debited from N and D, so they stay up to
// its cost ahead of the limiter, which did spend it: a limiter that let a request through a
// little early and denies a later one for want of that token is counted once, as the overspend,
// and not again for every refusal until its bucket is full (on a key kept empty by its traffic,
// one overspend by a millionth of a token read as dozens of false denies). Without overspend E
// holds what N holds, and the verdicts are those of N and D alone.
//
// The verdict is Overspend when N overspends (attributed to src), FalseDeny when D calls the
// denial false, Conforming or Denied otherwise.
//
// Concurrent requests on one key may reach the limiter in another order than they reach Observe:
// the limiter gives the last token to B and denies A, Observe sees A first and calls its denial
// false. So a false deny stays provisional for the reorder window (SetReorderWindow): tokens it
// could have had are reserved for it, and if an allowed request debits the envelope below what
// the provisional denials reserve, that request is the one that took their tokens in the limiter,
// and as many of them as it explains are withdrawn. A limiter that denies wrongly leaves the
// envelope's tokens unspent, so its false denies are not withdrawn. Withdrawn ones are not in
// Totals; onCancel hears of the confirmed ones (D's).
//
// Observe panics on a key outside [0, Keys()) or a negative cost. It allocates nothing except at a
// key's first observation when its policy is new to the table.
func (c *Bucket) Observe(key int, nowMs int64, cost int64, allowed bool, src limiter.Source) Verdict {
	return c.ObserveAs(key, nowMs, cost, allowed, Cause(src))
}

// CauseFor returns the Cause for name, registering it if new (see causeTable).
func (c *Bucket) CauseFor(name string) Cause { return c.causes.causeFor(name) }

// sides selects the resolutions an observation is judged on: both for Bucket's own callers;
// TwoTier leaves out a resolution whose quota already decided the request.
type sides uint8

const (
	sideN sides = 1 << iota
	sideD
	bothSides = sideN | sideD
)

// outcome says what each judged resolution made of an observation.
type outcome uint8

const (
	overN  outcome = 1 << iota // allowed, N lacked the tokens
	overD                      // allowed, D lacked the tokens
	falseN                     // denied, N had the tokens
	falseD                     // denied, D had the tokens
)

// verdict is the confirmed verdict of an outcome: overspend on N, false deny on D.
func (o outcome) verdict(allowed bool) Verdict {
	switch {
	case allowed && o&overN != 0:
		return Overspend
	case allowed:
		return Conforming
	case o&falseD != 0:
		return FalseDeny
	default:
		return Denied
	}
}

// ObserveAs is Observe with the overspend, if any, attributed to cause.
func (c *Bucket) ObserveAs(key int, nowMs int64, cost int64, allowed bool, cause Cause) Verdict {
	return c.judge(key, nowMs, cost, allowed, cause, bothSides).verdict(allowed)
}

// judge judges one decision on the resolutions s (see Observe) under key's stripe lock. E and the
// allowed and denied counts see every decision, whatever s.
func (c *Bucket) judge(key int, nowMs, cost int64, allowed bool, cause Cause, s sides) outcome {
	if uint(key) >= uint(len(c.keys)) || cost < 0 {
		c.badObserve(key, cost)
	}
	sh := &c.stripes[uint(key)%stripeCount]
	sh.mu.Lock()
	k := &c.keys[key]
	c.refill(k, key, nowMs)
	need := float64(cost) // exact: costs are far below 2^53
	var o outcome
	if allowed {
		sh.allowed++
		c.debitE(sh, k, key, need)
		o = c.allowD(sh, k, need, cost, s) | c.allowN(sh, k, need, cost, cause, s)
	} else {
		sh.denied++
		if s&sideN != 0 && k.allowedStream(k.n) >= need+float64(k.pendN.cost) {
			o |= falseN
			sh.possFalseDenies++
			k.pendN.add(k.lastMs, cost)
		}
		if s&sideD != 0 && min(k.d, k.e) >= need+float64(k.pendD.cost) {
			o |= falseD
			sh.falseDenies++
			k.pendD.add(k.lastMs, cost)
		}
	}
	sh.mu.Unlock()
	return o
}

// allowN judges an allowed request on N, if s asks for it. The caller holds the stripe lock.
func (c *Bucket) allowN(sh *stripe, k *bucketKey, need float64, cost int64, cause Cause, s sides) outcome {
	if s&sideN == 0 {
		return 0
	}
	if k.n >= need {
		k.n -= need
		if k.pendN.count > 0 && k.n < float64(k.pendN.cost) {
			sh.possFalseDenies -= k.pendN.take(float64(k.pendN.cost) - k.n)
		}
		if cause == Cause(limiter.FailOpen) || cause == Cause(limiter.Local) {
			// The envelope paid for a decision the store never counted: the store will let
			// these tokens through again, and that overspend is this cause's doing.
			k.debt += float32(need)
			k.debtBy = cause
		}
		return 0
	}
	if d := k.debt; d > 0 && float64(d) >= need-1e-6 {
		k.debt = d - float32(need)
		cause = k.debtBy
	}
	sh.overspent(cost, cause)
	return overN
}

// allowD judges an allowed request on D, if s asks for it. The caller holds the stripe lock.
func (c *Bucket) allowD(sh *stripe, k *bucketKey, need float64, cost int64, s sides) outcome {
	if s&sideD == 0 {
		return 0
	}
	if k.d >= need {
		k.d -= need
		c.explainD(sh, k)
		return 0
	}
	sh.possOverRequests++
	sh.possOver += cost
	return overD
}

// explainD withdraws the confirmed provisional false denies that D's latest debit explains: it
// took D below what they reserve, so in the limiter it took their tokens first. The caller holds
// the stripe lock.
func (c *Bucket) explainD(sh *stripe, k *bucketKey) {
	if k.pendD.count == 0 || k.d >= float64(k.pendD.cost) {
		return
	}
	at := k.pendD.at(k.lastMs)
	n := k.pendD.take(float64(k.pendD.cost) - k.d)
	sh.falseDenies -= n
	sh.withdrawn += n
	if c.onCancel != nil {
		c.onCancel(at, n)
	}
}

// debitE debits need tokens from E and books any deeper deficit as burst excess. The caller holds
// the stripe lock.
func (c *Bucket) debitE(sh *stripe, k *bucketKey, key int, need float64) {
	k.e -= need
	if deficit := -k.e; deficit > k.excess {
		sh.excess += deficit - k.excess
		k.excess = deficit
		if deficit > sh.worstExcess {
			sh.worstKey, sh.worstExcess = int64(key), deficit
		}
	}
}

// ObserveUnknown records a decision whose outcome the caller never learnt — typically a
// client-side timeout, after which the script may well have run and debited the bucket. N does
// not debit it; D debits it if it has the tokens (the script allows only then), and that debit
// may explain a provisional false deny like an allowed request's; E debits it whatever it has
// when it may have passed (see Checker).
func (c *Bucket) ObserveUnknown(key int, nowMs int64, cost int64, passed bool) {
	c.unknown(key, nowMs, cost, bothSides, passed)
}

// unknown books an unknown outcome, on D only if s has it, on E only if it may have passed, and
// reports whether D debited it.
func (c *Bucket) unknown(key int, nowMs, cost int64, s sides, passed bool) bool {
	if uint(key) >= uint(len(c.keys)) || cost < 0 {
		c.badObserve(key, cost)
	}
	sh := &c.stripes[uint(key)%stripeCount]
	sh.mu.Lock()
	k := &c.keys[key]
	c.refill(k, key, nowMs)
	sh.unknown++
	need := float64(cost)
	if passed {
		c.debitE(sh, k, key, need)
		k.ePassed = k.ePassed || need > 0
	}
	debited := s&sideD != 0 && k.d >= need
	if debited {
		k.d -= need
		c.explainD(sh, k)
	}
	sh.mu.Unlock()
	return debited
}

// refill brings key's buckets to nowMs with BucketPolicy.Refill's arithmetic (the product and the
// sum rounded apart, as the script does; a nowMs not after the key's clock refills nothing), drops the fail-policy debt once N is full (it can no
// longer make a difference) and expires provisional false denies. The caller holds key's stripe
// lock.
func (c *Bucket) refill(k *bucketKey, key int, nowMs int64) {
	switch {
	case k.lastMs == 0:
		b := float64(c.policyOf(k, key).Burst)
		k.n, k.d, k.e, k.lastMs = b, b, b, nowMs
		return
	case nowMs > k.lastMs: // only then is the policy needed
		p := c.policyOf(k, key)
		b := float64(p.Burst)
		if nowMs-k.lastMs > c.window {
			// Every pending denial is older than the window; dropping them here also keeps
			// pendingDenies.age exact.
			k.pendN, k.pendD = pendingDenies{}, pendingDenies{}
		}
		// The builtin min is math.Min here (no NaN, no signed zero: b >= 1), without a call.
		add := float64(float64(nowMs-k.lastMs) * p.PerMs())
		k.n = min(b, k.n+add)
		k.d = min(b, k.d+add)
		k.e = min(b, k.e+add)
		k.lastMs = nowMs
		if k.n >= b {
			k.debt = 0
		}
		if k.e >= b {
			k.ePassed = false
		}
	}
	k.pendN.expire(k.lastMs, c.window)
	k.pendD.expire(k.lastMs, c.window)
}

// badObserve reports a misuse of Observe; kept out of line so Observe stays small.
//
//go:noinline
func (c *Bucket) badObserve(key int, cost int64) {
	if cost < 0 {
		panic(fmt.Sprintf("check: Bucket.Observe cost %d on key %d: must be >= 0 tokens", cost, key))
	}
	panic(fmt.Sprintf("check: Bucket.Observe key %d: out of range [0, %d); size the checker with NewBucket(keys > %d)",
		key, len(c.keys), key))
}

// policyOf returns key's policy, resolving and caching its class at the first observation.
// The caller holds key's stripe lock.
func (c *Bucket) policyOf(k *bucketKey, key int) limiter.BucketPolicy {
	switch id := k.class; id {
	case 0:
		p := c.policy(key)
		k.class = c.classOf(p)
		return p
	case overspendUncached:
		return c.policy(key)
	default:
		i := int(id - 1)
		return c.chunks[i/overspendChunk][i%overspendChunk]
	}
}

// classOf returns p's class id, adding p to the table if it is new and there is room.
func (c *Bucket) classOf(p limiter.BucketPolicy) uint16 {
	c.polMu.Lock()
	defer c.polMu.Unlock()
	if i, ok := c.polIdx[p]; ok {
		return i + 1
	}
	if c.nPol == overspendMaxClasses {
		return overspendUncached
	}
	i := c.nPol
	if c.chunks[i/overspendChunk] == nil {
		c.chunks[i/overspendChunk] = new([overspendChunk]limiter.BucketPolicy)
	}
	c.chunks[i/overspendChunk][i%overspendChunk] = p
	c.polIdx[p] = uint16(i)
	c.nPol++
	return uint16(i) + 1
}

// Totals sums the counters of all keys. It may run concurrently with Observe; each stripe is read
// under its lock, so the totals are consistent per stripe (not a global snapshot).
func (c *Bucket) Totals() Totals {
	t := c.rawTotals()
	t.order()
	return t
}

// rawTotals is Totals before the possible figures are ordered (TwoTier adds its quota's first).
func (c *Bucket) rawTotals() Totals {
	t := newTotals()
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
