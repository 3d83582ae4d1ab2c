package faults

import "ratelab/results"

// Summary is what a run's faults add to its summary: the events, each with its detection and
// recovery measured from the run's rows; what they add to the overspend bound per source and
// the sources they could not measure; and the losses tokens back attributes to them.
type Summary struct {
	Events     []results.Fault
	Sources    map[string]float64
	Unmeasured []results.Unmeasured
	Losses     []Loss
}

// Summary is the faults' piece of the summary, from the run's per-second rows; a nil Runner
// (a run without faults) has none. Call it after Stop.
func (r *Runner) Summary(rows []results.Interval) Summary {
	if r == nil {
		return Summary{}
	}
	events := r.Recorded()
	MeasureRecovery(events, rows)
	sources, unmeasured := r.Bound()
	return Summary{Events: events, Sources: sources, Unmeasured: unmeasured, Losses: r.Losses()}
}
