package scenarios

import (
	"time"

	"ratelab/results"
)

// ProgressEvery is how often RunOptions.OnProgress hears a snapshot while the schedule runs.
const ProgressEvery = 250 * time.Millisecond

// progress is the live snapshot of the run: loads of counters the dispatcher and the workers
// keep anyway, read by the collector between its rows. The dispatcher publishes a second's
// counts when it hands out a batch or goes idle, so the current second lags by at most a batch.
func (d *driver) progress() results.Progress {
	total := time.Duration(d.spec.Duration)
	p := results.Progress{Total: total, InFlight: d.inflight.Load()}
	if d.dispatchSec.Load() >= int64(d.seconds) {
		p.Elapsed = time.Duration(d.elapsed.Load())
	} else {
		p.Elapsed = min(time.Since(d.base), total)
	}
	last := min(int(d.dispatchSec.Load()), d.seconds-1)
	for s := 0; s <= last; s++ {
		p.Offered += d.offered[s].Load()
		p.Sent += d.sent[s].Load()
		p.Dropped += d.dropped[s].Load()
	}
	// A batch's sent count is published before its second's offered count: never show more
	// sent than offered.
	p.Offered = max(p.Offered, p.Sent+p.Dropped)
	p.Fault = d.faults.activeKind(p.Elapsed)
	return p
}

// activeKind names the fault active at elapsed: the kind of the latest one started by then,
// while any fault still holds its cause on the decisions (see hold); "" when none is active.
func (r *faultRunner) activeKind(elapsed time.Duration) string {
	if _, ok := r.currentCause(); !ok {
		return ""
	}
	kind := ""
	for _, f := range r.specs { // sorted by At
		if time.Duration(f.At) > elapsed {
			break
		}
		kind = f.Kind
	}
	return kind
}
