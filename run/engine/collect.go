package engine

import (
	"time"

	"ratelab/results"
)

// collect writes each second once it is fully dispatched and its decisions are done (or it has
// waited maxFinalizeLag), in order, until every second is written.
func (d *driver) collect(emit func(sec int, s *Account)) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	acc := &Account{hist: results.NewHistogram()}
	var lastProgress time.Time
	for {
		if d.onProgress != nil && time.Since(lastProgress) >= ProgressEvery {
			lastProgress = time.Now()
			d.onProgress(d.progress())
		}
		next := d.emitReady(acc, emit)
		if next >= d.lastSecond() && d.dispatchSec.Load() >= int64(d.seconds) {
			if d.onProgress != nil {
				d.onProgress(d.progress()) // the end: every count in, elapsed the run's
			}
			return
		}
		<-tick.C
	}
}

// lastSecond is one past the last second to write: every second of the schedule, or of the
// part an interrupted schedule covered.
func (d *driver) lastSecond() int {
	if d.dispatchSec.Load() >= int64(d.seconds) {
		return int((time.Duration(d.elapsed.Load()) + time.Second - 1) / time.Second)
	}
	return d.seconds
}

// emitReady emits, in order, every second that is ready, and returns the next one to write.
func (d *driver) emitReady(acc *Account, emit func(sec int, s *Account)) int {
	limit := d.lastSecond()
	next := int(d.rec.finalized.Load()) + 1
	for next < limit {
		if d.dispatchSec.Load() <= int64(next) {
			break
		}
		overdue := time.Since(d.base) > time.Duration(next+1)*time.Second+maxFinalizeLag
		if d.pending[next].Load() > 0 && !overdue {
			break
		}
		// Publish first: a worker that takes its stripe's lock after this sees the second as
		// written and books into the late bucket instead of a slot no one will read.
		d.rec.finalized.Store(int64(next))
		acc.reset(next)
		d.rec.harvest(next, acc)
		emit(next, acc)
		next++
	}
	return next
}
