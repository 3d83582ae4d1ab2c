package engine

import (
	"time"

	"ratelab/results"
)

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
	p.Fault = d.s.faults.ActiveKind(p.Elapsed)
	return p
}
