package results

import "time"

// Progress is a live snapshot of a run between its per-second rows, for a progress display.
// It carries only what the rows do not yet say: how far the schedule is and what it has sent
// so far; decisions, latency, errors and overspend come with each Interval.
type Progress struct {
	// Elapsed is the schedule time covered so far; Total is the scheduled duration.
	Elapsed, Total time.Duration
	// Offered, Sent and Dropped count requests since the start of the schedule (as the
	// Interval fields of the same names), including the current, unfinished second.
	Offered, Sent, Dropped int64
	// InFlight is the number of decisions started and not yet finished.
	InFlight int64
	// Fault is the kind of the fault that is active now (kill-primary, latency, ...), "" when none.
	Fault string
}
