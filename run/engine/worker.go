package engine

import (
	"context"
	"time"

	"ratelab/limiter"
)

// worker makes decisions for the chunks it receives, with its gateway's limiter.
type worker struct {
	d       *driver
	id      int
	gateway int
	lim     limiter.Limiter
}

// decision is one request from its hand-over to the limiter to its record: a worker's own while
// the limiter answers at once, or, parked by a limiter.AsyncLimiter, the callback's, with the
// worker gone on to its next request.
type decision struct {
	w   *worker
	off time.Duration // intended start, from the run's base time
	rec Record
}

// Decided finishes a parked decision when the limiter answers it; its latency runs from the
// intended start to now, as a decision answered at once.
func (p *decision) Decided(d limiter.Decision, err error) {
	p.rec.Decision, p.rec.Err = d, err
	p.w.finish(&p.rec, p.off, time.Now())
}

// work makes decisions until the job channel closes. Decisions use their own context: an
// interrupt stops the schedule, not the requests already sent (they are bounded by the limiter's
// timeout), so what was measured is kept.
//
// A limiter that can park a decision (limiter.AsyncLimiter: the lease limiter, whose request may
// wait for a fetch) is asked through AllowAsync, so a request waiting for Redis does not hold the
// worker and the requests queued behind it; it stays in flight (max_inflight counts it) until
// its callback records it. With lanes a tenant's requests must be decided in schedule order, one
// at a time: there the worker waits, through Allow.
func (w *worker) work(jobs <-chan []job) {
	d := w.d
	tag := &reqTag{}
	ctx := context.WithValue(context.Background(), tagKey{}, tag)
	nEp := len(d.s.Endpoints)
	async, _ := w.lim.(limiter.AsyncLimiter)
	if d.lanes != nil {
		async = nil
	}
	p := &decision{w: w, rec: Record{Worker: w.id}}
	for c := range jobs {
		// One clock read per decision: the end of one decision is the start of the next in the
		// chunk (reading the clock was a fifth of the generator's CPU time with a no-op limiter).
		now := time.Now()
		for _, j := range c {
			r := &p.rec
			p.off = j.off
			r.Gateway = w.gateway
			r.Sec, r.Key, r.Cost = int(j.off/time.Second), int(j.tenant)*nEp+int(j.ep), int64(j.cost)
			tag.sec.Store(int64(r.Sec))
			lim, gw := w.route(j, r)
			reqNow := now
			if d.schedClock {
				reqNow = d.clockBase.Add(j.off)
			}
			r.AtMs = reqNow.UnixMilli() // the checker's (true) time
			if d.s.skew != nil {
				// The gateway's clock, skewed on purpose; the checker keeps the true time.
				reqNow = reqNow.Add(time.Duration(d.s.skew[gw].Load()))
			}
			req := limiter.Request{Tenant: d.s.Tenants[j.tenant], Endpoint: d.s.Endpoints[j.ep], Cost: r.Cost, Now: reqNow}
			var (
				dec limiter.Decision
				err error
			)
			if a := w.asyncFor(lim, async); a != nil {
				var parked bool
				if dec, parked, err = a.AllowAsync(ctx, req, p); parked {
					// p belongs to the callback now, which may already be running.
					p = &decision{w: w, rec: Record{Worker: w.id}}
					now = time.Now()
					continue
				}
			} else {
				dec, err = lim.Allow(ctx, req)
			}
			r.Decision, r.Err = dec, err
			end := time.Now()
			w.finish(r, j.off, end)
			now = end
		}
		select {
		case d.free <- c[:0]:
		default:
		}
	}
}

// route returns the limiter and gateway index that decide j: the worker's own, or with regions
// those of a gateway of the request's region (set in r), which picks the gateway, not the worker.
func (w *worker) route(j job, r *Record) (limiter.Limiter, int) {
	rr := w.d.s.regions
	if rr == nil {
		return w.lim, w.gateway
	}
	r.Region = rr.pick(j.off, j.tenant)
	gw := rr.gateway(r.Region, w.id)
	r.Gateway = gw
	rr.arrive(r.Region, j.tenant)
	return w.d.s.gateways[gw], gw
}

// asyncFor is the AsyncLimiter to ask for a decision by lim: the worker's own (async), or with
// regions lim's, since the request's region chose lim; nil where decisions must wait (lanes).
func (w *worker) asyncFor(lim limiter.Limiter, async limiter.AsyncLimiter) limiter.AsyncLimiter {
	if w.d.s.regions == nil || w.d.lanes != nil {
		return async
	}
	a, _ := lim.(limiter.AsyncLimiter)
	return a
}

// finish records decision r of a request intended at off, answered at end: its latency, its
// outcome's classification, whether it came after the run's window; then hands it to the
// consumers and takes it out of flight. Parked decisions finish from the limiter's goroutines,
// concurrently with the workers.
func (w *worker) finish(r *Record, off time.Duration, end time.Time) {
	d := w.d
	r.Latency = end.Sub(d.base) - off
	Classify(r)
	if end.UnixNano() > d.windowEndNs.Load() {
		d.late[r.Sec].Add(1) // any outcome: the run's window is over
		if r.Outcome.Decided() {
			d.lateAnswers[r.Sec].Add(1)
		}
	}
	d.consume(r)
	d.pending[r.Sec].Add(-1)
	d.inflight.Add(-1)
}
