package engine

import (
	"context"
	"runtime"
	"time"

	"ratelab/workload"
)

// maxChunk caps how many scheduled requests travel to a worker together.
const maxChunk = 64

// dispatcher is the dispatch loop's state: the second it is in, the batch of requests due
// together, and that second's counts not yet published.
type dispatcher struct {
	d                        *driver
	cur                      int
	batch                    []job
	offered, dropped, behind int64
	now                      time.Duration // the clock, since base, as last read
}

// freshEvery is how many requests the dispatcher hands out, while it is behind its schedule,
// between two reads of the clock: the lag it measures is short of the truth by at most the time
// to hand out that many (a few microseconds), where a clock read per request would cost a few
// percent of the dispatcher at millions of requests per second.
const freshEvery = 32

// dispatch follows the pacer on a locked OS thread (see preciseSleep): each request gets its
// intended start time before anything else happens to it.
//
// Requests that are due together (everything up to "now" when the dispatcher wakes) are handed
// out in chunks of len/concurrency, at most maxChunk: with a remote limiter and hundreds of
// workers that is one request per worker, so none waits behind another; with an in-process
// limiter at millions per second it spares a channel operation and a goroutine wake-up per
// request, which is most of what the generator would otherwise spend.
func (d *driver) dispatch(ctx context.Context, pacer workload.Pacer, stream keySource) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := &dispatcher{d: d, now: time.Since(d.base)}
	done := ctx.Done()
	for n := 0; ; n++ {
		off, ok := pacer.Next()
		if !ok {
			break
		}
		sec := int(off / time.Second)
		if sec >= d.seconds {
			break
		}
		if sec != p.cur {
			p.flush()
			d.dispatchSec.Store(int64(sec))
			p.cur = sec
		}
		// Draw for every scheduled request, sent or not, so the key sequence depends only on the
		// seed; with --part every generator draws the whole schedule and keeps its tenants' part.
		t, ep, cost := stream.next()
		if !d.s.opts.Part.Owns(t) {
			continue
		}
		switch {
		case off > p.now:
			if !p.wait(off, done) {
				return
			}
		case n%freshEvery == 0:
			p.now = time.Since(d.base) // behind: measure the lag against a fresh clock
		}
		p.offer(off, job{off: off, tenant: uint32(t), ep: uint16(ep), cost: cost})
		if n&1023 == 1023 {
			select {
			case <-done:
				p.stop(off)
				return
			default:
			}
		}
	}
	p.flush()
	// The window is the scheduled duration, not whole seconds: a 1.5 s run's rates are per 1.5 s.
	d.elapsed.Store(int64(min(time.Duration(d.spec.Duration), time.Duration(d.seconds)*time.Second)))
	d.dispatchSec.Store(int64(d.seconds))
}

// wait sleeps until off is due, handing out what is batched first. It returns false (after
// stopping the schedule) when ctx is done: cancellation is checked only when idle, since it
// costs a channel poll.
func (p *dispatcher) wait(off time.Duration, done <-chan struct{}) bool {
	p.now = time.Since(p.d.base)
	wait := off - p.now
	if wait <= 0 {
		return true
	}
	p.flush()
	select {
	case <-done:
		p.stop(off)
		return false
	default:
	}
	preciseSleep(wait)
	p.now = time.Since(p.d.base)
	return true
}

// offer sends j unless the generator is too far behind its schedule or the in-flight bound is
// reached; either way the request is offered, and a request not sent is dropped, counted by
// cause. The bound counts requests handed to workers: at the bound the batch is handed out
// first, so a pile of requests the dispatcher has not sent yet is never blamed on the limiter.
func (p *dispatcher) offer(off time.Duration, j job) {
	d := p.d
	p.offered++
	if d.s.regions != nil {
		d.s.regions.offer(j)
	}
	late := p.now - off
	maxIn := int64(d.spec.Load.MaxInflight)
	if late <= maxScheduleLag && len(p.batch) > 0 && d.inflight.Load()+int64(len(p.batch)) >= maxIn {
		p.flush()
	}
	switch {
	case late > maxScheduleLag:
		p.behind++
		p.dropped++
	case d.inflight.Load()+int64(len(p.batch)) >= maxIn:
		p.dropped++
	default:
		d.lag.Record(max(late, 0))
		p.batch = append(p.batch, j)
		if len(p.batch) == cap(p.batch) && len(p.batch) >= maxChunk*d.spec.Load.Concurrency {
			p.flush()
		}
	}
}

// flush hands out the batch and publishes the counts of second cur. Counts are published before
// dispatchSec moves past cur, so the collector never writes a second too early.
func (p *dispatcher) flush() {
	d := p.d
	if n := int64(len(p.batch)); n > 0 {
		d.inflight.Add(n)
		d.pending[p.cur].Add(n)
		d.sent[p.cur].Add(n)
		if d.lanes != nil {
			d.toLanes(p.batch)
		} else {
			k := min(maxChunk, max(1, len(p.batch)/d.spec.Load.Concurrency))
			for i := 0; i < len(p.batch); i += k {
				c := d.chunk()
				c = append(c, p.batch[i:min(i+k, len(p.batch))]...)
				d.jobs <- c
			}
		}
		p.batch = p.batch[:0]
	}
	d.offered[p.cur].Add(p.offered)
	d.dropped[p.cur].Add(p.dropped)
	d.behind[p.cur].Add(p.behind)
	p.offered, p.dropped, p.behind = 0, 0, 0
}

// stop ends an interrupted schedule at off: the window ends now, and decisions answered from now
// on are late.
func (p *dispatcher) stop(off time.Duration) {
	p.flush()
	p.d.windowEndNs.Store(time.Now().UnixNano())
	p.d.interrupted.Store(true)
	p.d.elapsed.Store(int64(off))
	p.d.dispatchSec.Store(int64(p.d.seconds))
}
