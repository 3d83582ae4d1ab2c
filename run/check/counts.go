package check

import (
	"math"
	"sync"

	"ratelab/limiter"
)

const (
	// stripeCount locks: key k is guarded by stripe k mod 256. Adjacent keys (one tenant's
	// endpoints) land in different stripes, so a hot tenant does not serialize on one mutex.
	stripeCount = 256
	// overspendCauseSlots counts overspend per Cause; causes >= 15 share the last slot.
	overspendCauseSlots = 16
	// maxReorderMs bounds the reorder window, so a provisional denial's age fits the 32 bits
	// pendingDenies keeps of its time (see pendingDenies.age).
	maxReorderMs = 1 << 30
)

// DefaultReorderWindowMs is how long a contested denial stays open by default: longer than any
// request can be in flight with the default decision timeout.
const DefaultReorderWindowMs = 200

// stripe is one lock and the counters of the keys it guards: 8 + 232 + 16 of padding = 256
// bytes, four cache lines, so neighbouring stripes' counters do not false-share.
type stripe struct {
	mu sync.Mutex
	keyCounts
	_ [16]byte
}

// keyCounts are the counters an envelope stripe keeps for the keys it guards (every envelope:
// token bucket, window, two-tier), read under the stripe's lock. Confirmed and possible figures
// are as in Totals; withdrawn counts confirmed provisional false denies taken back, and a
// possible one taken back is simply subtracted from possFalseDenies.
type keyCounts struct {
	allowed, denied, unknown     int64
	overRequests, over           int64 // confirmed overspend: requests, tokens
	possOverRequests, possOver   int64 // possible overspend: requests, tokens
	falseDenies, possFalseDenies int64
	withdrawn                    int64
	excess                       float64 // the sum of the stripe's keys' burst excess
	worstKey                     int64   // a key with the largest excess, or -1 (see worst)
	worstExcess                  float64
	byCause                      [overspendCauseSlots]int64
}

// addTo adds the counters to t and the per-cause overspend to byCause.
func (k *keyCounts) addTo(t *Totals, byCause *[overspendCauseSlots]int64) {
	t.Allowed += k.allowed
	t.Denied += k.denied
	t.Unknown += k.unknown
	t.OverspendRequests += k.overRequests
	t.OverspendTokens += k.over
	t.PossibleOverspendRequests += k.possOverRequests
	t.PossibleOverspendTokens += k.possOver
	t.FalseDenies += k.falseDenies
	t.PossibleFalseDenies += k.possFalseDenies
	t.Withdrawn += k.withdrawn
	t.BurstExcess += k.excess
	if k.worstExcess > t.WorstExcess {
		t.WorstKey, t.WorstExcess = int(k.worstKey), k.worstExcess
	}
	for j, n := range k.byCause {
		byCause[j] += n
	}
}

// overspent counts one confirmed overspending request of cost tokens under cause.
func (k *keyCounts) overspent(cost int64, cause Cause) {
	k.overRequests++
	k.over += cost
	k.byCause[min(int(cause), overspendCauseSlots-1)]++
}

// newTotals returns empty Totals ready for addTo.
func newTotals() Totals { return Totals{ByCause: make(map[string]int64), WorstKey: -1} }

// pendingDenies are one resolution's provisional false denies on one key: denied requests the
// envelope had room for that an allowed request in flight at the same time may still explain.
// 12 bytes: the time is kept as the low 32 bits of the first denial's Unix ms, enough because a
// provisional denial never outlives twice the reorder window (see age).
type pendingDenies struct {
	atLow uint32 // the low 32 bits of the first one's time (ms)
	count int32
	cost  int32
}

// age is how long ago, at nowMs, the first pending denial was made. Exact while the true age is
// below 2^32 ms: the caller drops pending denials once they are older than the reorder window
// (at most 2^30 ms) and whenever its clock jumps by more than the window.
func (p *pendingDenies) age(nowMs int64) int64 { return int64(uint32(nowMs) - p.atLow) }

// at is the first pending denial's Unix ms, given the clock nowMs it is aged against.
func (p *pendingDenies) at(nowMs int64) int64 { return nowMs - p.age(nowMs) }

// add books one more provisional false deny of cost tokens made at atMs.
func (p *pendingDenies) add(atMs, cost int64) {
	if p.count == 0 {
		p.atLow = uint32(atMs)
	}
	p.count++
	p.cost += int32(min(cost, 1<<30))
}

// expire drops the pending denies older than windowMs at nowMs: they stay counted.
func (p *pendingDenies) expire(nowMs, windowMs int64) {
	if p.count > 0 && p.age(nowMs) > windowMs {
		*p = pendingDenies{}
	}
}

// take withdraws provisional false denies worth at least short tokens (an allowed request took
// those tokens first in the limiter) and returns how many.
func (p *pendingDenies) take(short float64) int64 {
	avg := float64(p.cost) / float64(p.count)
	n := min(int32(math.Ceil(short/avg)), p.count)
	p.count -= n
	p.cost -= int32(math.Round(float64(n) * avg))
	if p.count == 0 || p.cost <= 0 {
		*p = pendingDenies{}
	}
	return int64(n)
}

// Cause labels overspend: the limiter.Source values (central, lease, local, fail-open, ...) and
// names registered with CauseFor (failover, pause, ...).
type Cause uint8

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
