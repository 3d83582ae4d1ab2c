package check

// Checker judges a run's decisions against the envelope of the policy the limiter enforces:
// Bucket (an exact token bucket per key), Window (at most limit in any window) or TwoTier (a
// token bucket and a per-tenant quota). The engine and the HTTP driver call it from many
// goroutines at once; every implementation is safe for concurrent use.
type Checker interface {
	// ObserveAs judges one decision on key at nowMs (Unix ms) for cost tokens, labelling any
	// overspend with cause.
	ObserveAs(key int, nowMs, cost int64, allowed bool, cause Cause) Verdict
	// ObserveUnknown books a decision whose outcome the caller never learnt (a timeout).
	ObserveUnknown(key int, nowMs, cost int64)
	// Totals sums the counters of every key.
	Totals() Totals
	// CauseFor returns the cause registered under name (a fault kind such as "failover").
	CauseFor(name string) Cause
	// SetReorderWindow sets how long a contested denial stays provisional; onCancel hears of
	// the provisional false denies withdrawn. Call before the first observation.
	SetReorderWindow(ms int64, onCancel func(atMs, n int64))
}

var (
	_ Checker = (*Bucket)(nil)
	_ Checker = (*Window)(nil)
	_ Checker = (*TwoTier)(nil)
)
