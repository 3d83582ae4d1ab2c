package check

import "fmt"

// Checker judges a run's decisions against the envelope of the policy the limiter enforces:
// Bucket (an exact token bucket per key), Window (at most limit in any window) or TwoTier (a
// token bucket and a per-tenant quota). The engine and the HTTP driver call it from many
// goroutines at once; every implementation is safe for concurrent use.
//
// A decision whose outcome the caller never learnt (ObserveUnknown: a timeout, after which the
// limiter may or may not have run it) makes every figure a range. Each envelope keeps two
// resolutions side by side, as Jepsen's checkers treat indeterminate operations: N, in which no
// unknown outcome was debited, and D, in which every one was (when the envelope had room for
// it, as the limiter only debits what it allows). Overspend judged on N is confirmed (N has the
// most room, so the least overspend), on D possible; false denies judged on D are confirmed, on
// N possible. ObserveAs returns the confirmed verdict; Totals gives both figures.
type Checker interface {
	// ObserveAs judges one decision on key at nowMs (Unix ms) for cost tokens, labelling any
	// overspend with cause. The verdict is the confirmed one: Overspend only if the request
	// overspends with no unknown outcome debited, FalseDeny only if the denial is false with
	// every unknown outcome debited.
	ObserveAs(key int, nowMs, cost int64, allowed bool, cause Cause) Verdict
	// ObserveUnknown books a decision whose outcome the caller never learnt (a timeout): the
	// D resolution debits it, the N resolution does not. passed says whether the request may
	// have been let through (a black-box target's timeout, whose response may have been an
	// allowance): only then does the burst excess, which measures the allowed stream, count it.
	// A request the caller saw refused or failed never passed, whatever the store debited.
	ObserveUnknown(key int, nowMs, cost int64, passed bool)
	// Totals sums the counters of every key: confirmed and possible figures, the count of
	// unknown outcomes and the burst excess (see Totals).
	Totals() Totals
	// CauseFor returns the cause registered under name (a fault kind such as "failover").
	CauseFor(name string) Cause
	// SetReorderWindow sets how long a contested denial stays provisional; onCancel hears of
	// the (confirmed) provisional false denies withdrawn. Call before the first observation.
	SetReorderWindow(ms int64, onCancel func(atMs, n int64))
}

var (
	_ Checker = (*Bucket)(nil)
	_ Checker = (*Window)(nil)
	_ Checker = (*TwoTier)(nil)
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
//
// Confirmed figures hold however the unknown outcomes went; possible ones hold under some
// resolution of them (see Checker). A possible figure is never below its confirmed one: with
// fractional refill and mixed costs the two resolutions' buckets can cross, and the possible
// figure is then raised to the confirmed one, which is possible a fortiori.
type Totals struct {
	Allowed, Denied int64
	// OverspendRequests counts allowed requests the envelope could not pay for with no unknown
	// outcome debited (confirmed).
	OverspendRequests int64
	// OverspendTokens is the summed cost of those requests. Their whole cost is beyond the
	// envelope: it is not debited for them, so Allowed tokens = conforming tokens (never more
	// than the policy permits) + OverspendTokens.
	OverspendTokens int64
	// PossibleOverspendRequests and PossibleOverspendTokens are the same with every unknown
	// outcome debited: the most overspend any resolution of the unknowns shows.
	PossibleOverspendRequests, PossibleOverspendTokens int64
	// FalseDenies counts denied requests the envelope could have paid for with every unknown
	// outcome debited (confirmed), provisional ones withdrawn as reordering excluded.
	FalseDenies int64
	// PossibleFalseDenies is the same with no unknown outcome debited.
	PossibleFalseDenies int64
	// Withdrawn counts confirmed provisional false denies taken back as reordering (see
	// Bucket.Observe).
	Withdrawn int64
	// Unknown counts decisions whose outcome the caller never learnt (a client-side timeout:
	// the script may or may not have run). See ObserveUnknown.
	Unknown int64
	// BurstExcess sums over keys, in tokens, each key's burst excess: the smallest b' such that
	// the key's allowed stream conforms to a bucket of the policy's rate and burst b', minus the
	// burst — with overspent requests and every unknown outcome that may have passed debited, so
	// an upper bound for every resolution. Unlike the overspend counts it does not grow with every idle episode of
	// a lease: it measures how far beyond the burst the stream went at its worst. Window
	// envelopes have no burst and report 0.
	BurstExcess float64
	// WorstKey is a key with the largest burst excess, WorstExcess that excess; WorstKey is -1
	// when no key exceeded its burst.
	WorstKey    int
	WorstExcess float64
	// ByCause counts confirmed overspending requests by the name of their cause (central,
	// lease, local, fail-open, failover, ...). Never nil; causes with no overspend are absent.
	ByCause map[string]int64
}

// order raises each possible figure to at least its confirmed one (see Totals).
func (t *Totals) order() {
	t.PossibleOverspendRequests = max(t.PossibleOverspendRequests, t.OverspendRequests)
	t.PossibleOverspendTokens = max(t.PossibleOverspendTokens, t.OverspendTokens)
	t.PossibleFalseDenies = max(t.PossibleFalseDenies, t.FalseDenies)
}
