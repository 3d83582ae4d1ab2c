package check

import (
	"fmt"
	"math"
	"sync"

	"ratelab/limiter"
)

// Verdict is what the overspend envelope says about one observed decision.
type Verdict uint8

const (
	// Conforming: allowed, and the exact bucket had the tokens (they are debited).
	Conforming Verdict = iota
	// Overspend: allowed although the exact bucket lacked the tokens (not debited).
	Overspend
	// FalseDeny: denied although the exact bucket had the tokens — availability lost (not debited).
	FalseDeny
	// Denied: denied, and rightly so: the exact bucket lacked the tokens.
	Denied
)

var verdictNames = [...]string{"conforming", "overspend", "false-deny", "denied"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Totals are the checker's counters summed over all keys.
type Totals struct {
	Allowed, Denied int64
	// OverspendRequests counts allowed requests the exact bucket could not pay for.
	OverspendRequests int64
	// FalseDenies counts denied requests the exact bucket could have paid for.
	FalseDenies int64
	// Withdrawn counts provisional false denies taken back as reordering (see Observe).
	Withdrawn int64
	// Unknown counts decisions whose outcome the caller never learnt (a client-side timeout:
	// the script may or may not have run). See ObserveUnknown.
	Unknown int64
	// OverspendTokens is the summed cost of the overspending requests. Their whole cost is beyond
	// the envelope: the exact bucket is not debited for them, so Allowed tokens = conforming tokens
	// (never more than the policy permits) + OverspendTokens.
	OverspendTokens int64
	// ByCause counts overspending requests by the Source.String() of their decision (central,
	// lease, local, fail-open, ...). Never nil; sources with no overspend are absent.
	ByCause map[string]int64
}

const (
	// stripeCount locks: key k is guarded by stripe k mod 256. Adjacent keys (one tenant's
	// endpoints) land in different stripes, so a hot tenant does not serialize on one mutex.
	stripeCount = 256
	// overspendCauseSlots counts overspend per Source; sources >= 15 share the last slot.
	overspendCauseSlots = 16
	// overspendMaxClasses is how many distinct policies are cached. Class ids are uint16:
	// 0 = not looked up yet, 1..65534 = cached policy id+1, overspendUncached = call the func.
	overspendMaxClasses = 1<<16 - 2
	overspendUncached   = 1<<16 - 1
	overspendChunk      = 256 // policies per table chunk
)

// stripe is one lock and the counters of the keys it guards: 8 + 7*8 + 16*8 = 192 bytes,
// three cache lines, so neighbouring stripes' counters do not false-share.
type stripe struct {
	mu sync.Mutex
	keyCounts
}

// keyCounts are the counters an envelope stripe keeps for the keys it guards (every envelope:
// token bucket, window, two-tier), read under the stripe's lock.
type keyCounts struct {
	allowed, denied, overRequests, falseDenies, over, unknown, withdrawn int64
	byCause                                                              [overspendCauseSlots]int64
}

// addTo adds the counters to t and the per-cause overspend to byCause.
func (k *keyCounts) addTo(t *Totals, byCause *[overspendCauseSlots]int64) {
	t.Allowed += k.allowed
	t.Denied += k.denied
	t.OverspendRequests += k.overRequests
	t.FalseDenies += k.falseDenies
	t.OverspendTokens += k.over
	t.Unknown += k.unknown
	t.Withdrawn += k.withdrawn
	for j, n := range k.byCause {
		byCause[j] += n
	}
}

// Bucket is the overspend envelope: for each key a virtual exact token bucket, started
// full, that sees the observed requests in the order Observe is called for that key and judges each
// against the key's policy. It refills with limiter.BucketPolicy.Refill — the arithmetic of the Lua
// script and of the in-memory twin, time in Unix ms, a clock that never goes backwards — so a
// correct central limiter whose decisions are observed in its own order scores exactly zero
// overspend and zero false denies. Reordering between the limiter and Observe (requests in
// flight together) is the only source of a residue.
//
// Memory: 47 bytes per key — a 16-byte limiter.BucketState, 8 bytes of unknown-outcome credit
// (see ObserveUnknown), 16 bytes of provisional false denies, 5 bytes of fail-policy debt (an
// allowed fail-open or local decision the store never counted: the store's later overspend on
// that key is attributed to it) and a 2-byte policy class — plus ~80 KB fixed (256 padded lock stripes, the
// policy table and its index). The policy func is called once per
// key, at its first observation; distinct policies are deduplicated into a table of up to 65534
// classes (a key beyond that calls the func on every observation instead). A policy is therefore
// fixed per key for the checker's lifetime.
//
// Safe for concurrent use: Observe takes the key's stripe lock and allocates nothing after a key's
// first observation.
type Bucket struct {
	policy func(key int) limiter.BucketPolicy
	states []limiter.BucketState // per key; LastMs == 0: not observed yet (bucket full)
	credit []float64             // per key; tokens debited for unknown outcomes, refundable
	pend   []pendingDenies       // per key; false denies not yet confirmed (see Observe)
	debt   []float32             // per key; tokens the envelope paid for decisions the store never saw
	debtBy []Cause               // per key; the cause of that debt (fail-open, local)
	class  []uint16              // per key; see overspendMaxClasses

	causes causeTable

	// window is how far (ms, on the requests' clock) a contested denial stays open; see Observe.
	window int64
	// onCancel, if set, hears of provisional false denies withdrawn (at the denied request's ms).
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
		states: make([]limiter.BucketState, keys),
		credit: make([]float64, keys),
		pend:   make([]pendingDenies, keys),
		debt:   make([]float32, keys),
		debtBy: make([]Cause, keys),
		class:  make([]uint16, keys),
		window: DefaultReorderWindowMs,
		polIdx: make(map[limiter.BucketPolicy]uint16),
	}
	c.causes.init()
	return c
}

// DefaultReorderWindowMs is how long a contested denial stays open by default: longer than any
// request can be in flight with the default decision timeout.
const DefaultReorderWindowMs = 200

// pendingDenies are a key's provisional false denies: denied requests the envelope had tokens for
// that an allowed request in flight at the same time may still explain. 16 bytes.
type pendingDenies struct {
	atMs  int64 // the requests' time of the first one
	count int32
	cost  int32
}

// SetReorderWindow sets how long (ms, on the requests' clock) a denial the envelope disagrees with
// stays provisional; set it to at least the longest time a decision can be in flight (the
// limiter's timeout). onCancel, if not nil, is told of provisional false denies withdrawn, with
// the time of the denied request. Call before the first Observe.
func (c *Bucket) SetReorderWindow(ms int64, onCancel func(atMs int64, n int64)) {
	c.window = max(ms, 0)
	c.onCancel = onCancel
}

// Keys is the number of keys the checker was sized for.
func (c *Bucket) Keys() int { return len(c.states) }

// Observe judges one decision on key at nowMs (Unix milliseconds, > 0) for cost tokens (>= 0) and
// returns the verdict. The key's exact bucket first refills to nowMs — a nowMs older than the
// key's latest observation refills nothing and does not move its clock back — then:
//
//	allowed, tokens >= cost  -> Conforming, tokens -= cost
//	allowed, tokens <  cost  -> Overspend  (counted with its cost and src; not debited)
//	denied,  tokens >= cost  -> FalseDeny  (not debited; provisional, see below)
//	denied,  tokens <  cost  -> Denied
//
// Concurrent requests on one key may reach the limiter in another order than they reach Observe:
// the limiter gives the last token to B and denies A, Observe sees A first and calls its denial
// false. So a false deny stays provisional for the reorder window (SetReorderWindow): tokens it
// could have had are reserved for it, and if an allowed request debits the envelope below what
// the provisional denials reserve, that request is the one that took their tokens in the limiter,
// and as many of them as it explains are withdrawn. A limiter that denies wrongly leaves the
// envelope's tokens unspent, so its false denies are not withdrawn. Withdrawn ones are not in
// Totals; onCancel hears of them.
//
// Observe panics on a key outside [0, Keys()) or a negative cost. It allocates nothing except at a
// key's first observation when its policy is new to the table.
func (c *Bucket) Observe(key int, nowMs int64, cost int64, allowed bool, src limiter.Source) Verdict {
	return c.ObserveAs(key, nowMs, cost, allowed, Cause(src))
}

// Cause labels overspend: the limiter.Source values (central, lease, local, fail-open, ...) and
// names registered with CauseFor (failover, pause, ...).
type Cause uint8

// CauseFor returns the Cause for name, registering it if new (see causeTable).
func (c *Bucket) CauseFor(name string) Cause { return c.causes.causeFor(name) }

// causeTable names the byCause slots of a checker: the limiter.Source names first, then the names
// registered with causeFor (failover, pause, ...): at most 16 in all, further names share the last.
// Register before the run, not per decision.
type causeTable struct {
	mu    sync.Mutex
	names [overspendCauseSlots]string
	n     int
}

func (t *causeTable) init() {
	for src := limiter.Central; src <= limiter.FailClosed; src++ {
		t.names[src] = src.String()
	}
	t.n = int(limiter.FailClosed) + 1
}

func (t *causeTable) causeFor(name string) Cause {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 0; i < t.n; i++ {
		if t.names[i] == name {
			return Cause(i)
		}
	}
	if t.n < overspendCauseSlots {
		t.names[t.n] = name
		t.n++
		return Cause(t.n - 1)
	}
	return overspendCauseSlots - 1
}

// add adds per-slot counts to m under the slots' names.
func (t *causeTable) add(m map[string]int64, counts *[overspendCauseSlots]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for j, n := range counts {
		if n > 0 {
			name := t.names[j]
			if name == "" {
				name = "unknown"
			}
			m[name] += n
		}
	}
}

// ObserveAs is Observe with the overspend, if any, attributed to cause.
func (c *Bucket) ObserveAs(key int, nowMs int64, cost int64, allowed bool, cause Cause) Verdict {
	if uint(key) >= uint(len(c.states)) || cost < 0 {
		c.badObserve(key, cost)
	}
	sh := &c.stripes[key%stripeCount]
	sh.mu.Lock()
	st := c.refill(key, nowMs)
	need := float64(cost) // exact: costs are far below 2^53
	pd := &c.pend[key]
	if pd.count > 0 && st.LastMs-pd.atMs > c.window {
		*pd = pendingDenies{} // past the window: they stay counted
	}
	if allowed && st.Tokens < need && c.credit[key] > 0 {
		// The limiter had tokens the envelope lacks: an unknown outcome debited here did not
		// happen in the limiter after all. Give its tokens back before judging.
		r := min(c.credit[key], need-st.Tokens)
		st.Tokens += r
		c.credit[key] -= r
	}
	var v Verdict
	switch {
	case allowed && st.Tokens >= need:
		st.Tokens -= need
		sh.allowed++
		v = Conforming
		if pd.count > 0 && st.Tokens < float64(pd.cost) {
			c.withdraw(sh, pd, float64(pd.cost)-st.Tokens)
		}
		if cause == Cause(limiter.FailOpen) || cause == Cause(limiter.Local) {
			// The envelope paid for a decision the store never counted: the store will let
			// these tokens through again, and that overspend is this cause's doing.
			c.debt[key] += float32(need)
			c.debtBy[key] = cause
		}
	case allowed:
		if d := c.debt[key]; d > 0 && float64(d) >= need-1e-6 {
			c.debt[key] = d - float32(need)
			cause = c.debtBy[key]
		}
		sh.allowed++
		sh.overRequests++
		sh.over += cost
		sh.byCause[min(int(cause), overspendCauseSlots-1)]++
		v = Overspend
	case st.Tokens >= need+float64(pd.cost):
		sh.denied++
		sh.falseDenies++
		if pd.count == 0 {
			pd.atMs = st.LastMs
		}
		pd.count++
		pd.cost += int32(min(cost, 1<<30))
		v = FalseDeny
	default:
		sh.denied++
		v = Denied
	}
	c.states[key] = st
	sh.mu.Unlock()
	return v
}

// withdraw takes back provisional false denies worth at least short tokens (they were denied
// because an allowed request took those tokens first). The caller holds the key's stripe lock.
func (c *Bucket) withdraw(sh *stripe, pd *pendingDenies, short float64) {
	avg := float64(pd.cost) / float64(pd.count)
	n := min(int32(math.Ceil(short/avg)), pd.count)
	sh.falseDenies -= int64(n)
	sh.withdrawn += int64(n)
	if c.onCancel != nil {
		c.onCancel(pd.atMs, int64(n))
	}
	pd.count -= n
	pd.cost -= int32(math.Round(float64(n) * avg))
	if pd.count == 0 || pd.cost <= 0 {
		*pd = pendingDenies{}
	}
}

// ObserveUnknown records a decision whose outcome the caller never learnt — typically a
// client-side timeout, after which the script may well have run and debited the bucket. The
// envelope assumes it did (debiting what tokens it has, up to cost), so the limiter's later
// denials are not miscounted as false denies; and it remembers the debit as refundable credit,
// so if a later allowed request shows the limiter still had those tokens, they are given back
// before anything counts as overspend. The credit lapses once the bucket is full again.
func (c *Bucket) ObserveUnknown(key int, nowMs int64, cost int64) {
	if uint(key) >= uint(len(c.states)) || cost < 0 {
		c.badObserve(key, cost)
	}
	sh := &c.stripes[key%stripeCount]
	sh.mu.Lock()
	st := c.refill(key, nowMs)
	d := min(st.Tokens, float64(cost))
	st.Tokens -= d
	c.credit[key] += d
	c.states[key] = st
	sh.unknown++
	sh.mu.Unlock()
}

// refill brings key's bucket to nowMs and drops its credit once the bucket is full (an unknown
// outcome can no longer make any difference). The caller holds key's stripe lock.
func (c *Bucket) refill(key int, nowMs int64) limiter.BucketState {
	p := c.policyOf(key)
	st := p.Refill(c.states[key], nowMs)
	if st.Tokens >= float64(p.Burst) {
		c.credit[key] = 0
		c.debt[key] = 0
	}
	return st
}

// badObserve reports a misuse of Observe; kept out of line so Observe stays small.
//
//go:noinline
func (c *Bucket) badObserve(key int, cost int64) {
	if cost < 0 {
		panic(fmt.Sprintf("check: Bucket.Observe cost %d on key %d: must be >= 0 tokens", cost, key))
	}
	panic(fmt.Sprintf("check: Bucket.Observe key %d: out of range [0, %d); size the checker with NewBucket(keys > %d)",
		key, len(c.states), key))
}

// policyOf returns key's policy, resolving and caching its class at the first observation.
// The caller holds key's stripe lock.
func (c *Bucket) policyOf(key int) limiter.BucketPolicy {
	switch id := c.class[key]; id {
	case 0:
		p := c.policy(key)
		c.class[key] = c.classOf(p)
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
	t := Totals{ByCause: make(map[string]int64)}
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
