package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/check"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/faults"
	"ratelab/workload"
)

// maxScheduleLag is how far behind its schedule the dispatcher may fall before it stops sending
// stale requests and counts them as dropped by the generator instead.
const maxScheduleLag = time.Second

// maxFinalizeLag is how long after its end a second waits for in-flight decisions before its row
// is written anyway; decisions finishing later still count in the totals.
const maxFinalizeLag = (ringSeconds - 3) * time.Second

// job is one scheduled request: 16 bytes through the channel.
type job struct {
	off    time.Duration // intended start, from the run's base time
	tenant uint32
	ep     uint16
	cost   uint16 // tokens (1 unless a replayed trace says otherwise)
}

// driver is one run's open-loop machinery: a dispatcher that follows the pacer, a pool of workers
// that make decisions, and a collector that writes one row per second as the run goes.
type driver struct {
	spec      *scenarios.Spec
	lim       limiter.Limiter
	checker   check.Checker
	tenants   []string
	endpoints []string
	redirects *redirects     // nil without Redis
	central   bool           // decisions go to Redis: count them as central ops
	faults    *faults.Runner // nil without faults
	tariffs   *tariffRun     // nil without tariffs; gives each row its policy version
	// gateways, when set, are per-gateway limiters (lease mode): worker i decides with
	// gateways[i % len], so each simulated gateway instance holds its own leases.
	gateways []limiter.Limiter
	// nGateways is the number of simulated gateways: worker i belongs to gateway i % nGateways.
	nGateways int
	// skew, when not nil, is each gateway's clock offset in ns (a clock-skew fault sets it):
	// the gateway's requests carry now + skew, while the envelope judges them at the true now.
	skew    []atomic.Int64
	onStart func(base time.Time)
	// onProgress hears a live snapshot every ProgressEvery (see progress.go); nil is silent.
	onProgress func(results.Progress)
	// reload asks the cluster client to re-read the slot map; nil without Redis. See storeTrouble.
	reload     func()
	lastReload atomic.Int64 // ns since base

	seconds int
	base    time.Time
	// schedClock (limiter.clock: schedule): a decision's time is clockBase + its intended
	// offset instead of the wall clock. clockBase is base truncated to a millisecond, so the
	// Unix-ms times the limiters see differ from run to run by whole milliseconds only.
	schedClock bool
	clockBase  time.Time
	// lanes, when set (clock: schedule, trace replays), give worker i its own queue and tenant
	// t the worker t % len(lanes): a tenant's requests are then decided one at a time, in
	// schedule order, and never reordered by two workers racing. The cost: a tenant's rate is
	// bounded by one worker's. Without lanes every worker takes chunks from jobs.
	lanes   []chan []job
	laneBuf [][]job // the dispatcher's per-lane batches

	jobs     chan []job // chunks of requests due together
	free     chan []job // emptied chunks, for reuse
	inflight atomic.Int64
	// Per second of the schedule. The dispatcher writes offered/sent/dropped; workers decrement pending.
	offered, sent, dropped, behind, pending []atomic.Int64
	withdrawn                               []atomic.Int64                        // provisional false denies taken back, by second
	faultsAt                                []atomic.Int64                        // faults injected, by second
	storeErrs                               [limiter.NumErrorKinds][]atomic.Int64 // failures a fail policy answered, by kind and second
	dispatchSec                             atomic.Int64                          // every second before it is fully dispatched
	finalized                               atomic.Int64                          // last second written out
	lag                                     *results.Histogram
	shards                                  []*workerRec
	keyCounts                               []atomic.Int64
	interrupted                             atomic.Bool
	elapsed                                 atomic.Int64 // schedule time covered (ns); set before dispatchSec reaches seconds
	// shard is the part of the tenants this generator runs (zero: all); see workload.Shard.
	shard workload.Shard
	// overKeys counts overspend per key, for keys.csv (touched only on an overspend verdict).
	overKeys keyLedger
}

func newDriver(spec *scenarios.Spec, lim limiter.Limiter, checker check.Checker, tenants, endpoints []string, r *redirects, central bool) *driver {
	secs := int((time.Duration(spec.Duration) + time.Second - 1) / time.Second)
	nShards := min(spec.Load.Concurrency, 4*runtime.GOMAXPROCS(0))
	d := &driver{
		spec: spec, lim: lim, checker: checker, tenants: tenants, endpoints: endpoints,
		redirects: r, central: central, seconds: secs, nGateways: spec.GatewayCount(),
		jobs:      make(chan []job, spec.Load.MaxInflight),
		free:      make(chan []job, min(spec.Load.MaxInflight, 4096)),
		offered:   make([]atomic.Int64, secs),
		sent:      make([]atomic.Int64, secs),
		dropped:   make([]atomic.Int64, secs),
		behind:    make([]atomic.Int64, secs),
		pending:   make([]atomic.Int64, secs),
		withdrawn: make([]atomic.Int64, secs),
		faultsAt:  make([]atomic.Int64, secs),
		lag:       results.NewHistogram(),
		shards:    make([]*workerRec, nShards),
		keyCounts: make([]atomic.Int64, len(tenants)*len(endpoints)),
	}
	for i := range d.shards {
		d.shards[i] = newWorkerRec()
	}
	for k := range d.storeErrs {
		d.storeErrs[k] = make([]atomic.Int64, secs)
	}
	if spec.HasFault(scenarios.FaultClockSkew) {
		d.skew = make([]atomic.Int64, d.nGateways)
	}
	if spec.Limiter.Clock == scenarios.ClockSchedule || spec.Trace != nil {
		d.schedClock = spec.Limiter.Clock == scenarios.ClockSchedule
		d.lanes = make([]chan []job, spec.Load.Concurrency)
		for i := range d.lanes {
			d.lanes[i] = make(chan []job, laneDepth)
		}
		d.laneBuf = make([][]job, len(d.lanes))
	}
	d.finalized.Store(-1)
	return d
}

// laneDepth is how many chunks one lane queues; a full lane blocks the dispatcher, which then
// falls behind its schedule (and counts what is too late as dropped).
const laneDepth = 256

// run drives the whole schedule. ctx cancels the schedule (the run is then marked interrupted);
// decisions already sent finish, bounded by the limiter's timeout. emit receives every second.
func (d *driver) run(ctx context.Context, pacer workload.Pacer, stream keySource, emit func(sec int, s *secStats)) {
	d.base = time.Now()
	d.clockBase = d.base.Truncate(time.Millisecond)
	if d.onStart != nil {
		d.onStart(d.base)
	}
	var workers sync.WaitGroup
	for i := 0; i < d.spec.Load.Concurrency; i++ {
		g := i % max(d.nGateways, 1)
		lim := d.lim
		if len(d.gateways) > 0 {
			lim = d.gateways[i%len(d.gateways)]
		}
		lim = withInjectedDelay(lim) // the limiter itself, but in a -tags ratelab_inject_delay build
		jobs := d.jobs
		if d.lanes != nil {
			jobs = d.lanes[i]
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			d.work(d.shards[i%len(d.shards)], lim, g, jobs)
		}()
	}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		d.collect(emit)
	}()
	d.dispatch(ctx, pacer, stream)
	close(d.jobs)
	for _, l := range d.lanes {
		close(l)
	}
	workers.Wait()
	<-collected
}

// maxChunk caps how many scheduled requests travel to a worker together.
const maxChunk = 64

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
	maxIn := int64(d.spec.Load.MaxInflight)
	workers := d.spec.Load.Concurrency
	done := ctx.Done()
	cur := 0
	var (
		batch                    []job
		offered, dropped, behind int64 // of second cur, not yet published
	)
	// flush hands out the batch and publishes the counts of second cur. Counts are published
	// before dispatchSec moves past cur, so the collector never writes a second too early.
	flush := func() {
		if n := int64(len(batch)); n > 0 {
			d.inflight.Add(n)
			d.pending[cur].Add(n)
			d.sent[cur].Add(n)
			if d.lanes != nil {
				d.toLanes(batch)
			} else {
				k := min(maxChunk, max(1, len(batch)/workers))
				for i := 0; i < len(batch); i += k {
					c := d.chunk()
					c = append(c, batch[i:min(i+k, len(batch))]...)
					d.jobs <- c
				}
			}
			batch = batch[:0]
		}
		d.offered[cur].Add(offered)
		d.dropped[cur].Add(dropped)
		d.behind[cur].Add(behind)
		offered, dropped, behind = 0, 0, 0
	}
	stop := func(off time.Duration) {
		flush()
		d.interrupted.Store(true)
		d.elapsed.Store(int64(off))
		d.dispatchSec.Store(int64(d.seconds))
	}
	now := time.Since(d.base)
	for n := 0; ; n++ {
		off, ok := pacer.Next()
		if !ok {
			break
		}
		sec := int(off / time.Second)
		if sec >= d.seconds {
			break
		}
		if sec != cur {
			flush()
			d.dispatchSec.Store(int64(sec))
			cur = sec
		}
		// Draw for every scheduled request, sent or not, so the key sequence depends only on the
		// seed; with --shard every generator draws the whole schedule and keeps its tenants' part.
		t, ep, cost := stream.next()
		if !d.shard.Owns(t) {
			continue
		}
		if off > now {
			now = time.Since(d.base)
			if wait := off - now; wait > 0 {
				flush()
				// Check for cancellation only when idle: it costs a channel poll.
				select {
				case <-done:
					stop(off)
					return
				default:
				}
				preciseSleep(wait)
				now = time.Since(d.base)
			}
		}
		offered++
		late := now - off
		switch {
		case late > maxScheduleLag:
			behind++
			dropped++
		case d.inflight.Load()+int64(len(batch)) >= maxIn:
			dropped++
		default:
			d.lag.Record(max(late, 0))
			batch = append(batch, job{off: off, tenant: uint32(t), ep: uint16(ep), cost: cost})
			if len(batch) == cap(batch) && len(batch) >= maxChunk*workers {
				flush()
			}
		}
		if n&1023 == 1023 {
			select {
			case <-done:
				stop(off)
				return
			default:
			}
		}
	}
	flush()
	d.elapsed.Store(int64(time.Duration(d.seconds) * time.Second))
	d.dispatchSec.Store(int64(d.seconds))
}

// slotTraffic sums the decisions so far per slot (a tenant's keys share its slot).
func (d *driver) slotTraffic() map[int]int64 {
	out := map[int]int64{}
	nEp := len(d.endpoints)
	for t, name := range d.tenants {
		var n int64
		for e := 0; e < nEp; e++ {
			n += d.keyCounts[t*nEp+e].Load()
		}
		if n > 0 {
			out[cluster.KeySlot(name)] += n
		}
	}
	return out
}

// reloadEvery bounds how often store errors make the client re-read the slot map.
const reloadEvery = 100 * time.Millisecond

// storeTrouble reacts to a failed store call as a gateway should: go-redis re-reads the slot map
// only on MOVED/ASK or every ClusterStateReloadInterval (60 s by default), so after a primary dies
// it would keep calling the dead node; a timeout, connection error or CLUSTERDOWN asks for a
// reload instead (at most every reloadEvery).
func (d *driver) storeTrouble(k limiter.ErrorKind) {
	if d.reload == nil || (k != limiter.KindTimeout && k != limiter.KindConn && k != limiter.KindClusterDown) {
		return
	}
	now := int64(time.Since(d.base))
	last := d.lastReload.Load()
	if now-last < int64(reloadEvery) || !d.lastReload.CompareAndSwap(last, now) {
		return
	}
	d.reload()
}

// storeFailure counts a store failure that a fail policy answered (the decision itself
// succeeded as failed-open/closed/local), in the second the decision was made.
func (d *driver) storeFailure(r limiter.Request, k limiter.ErrorKind) {
	sec := int(r.Now.Sub(d.base) / time.Second)
	if sec >= 0 && sec < d.seconds && int(k) < len(d.storeErrs) {
		d.storeErrs[k][sec].Add(1)
	}
	d.storeTrouble(k)
}

// withdraw books provisional false denies the envelope took back (see OverspendChecker.Observe)
// against the second their request started in.
func (d *driver) withdraw(atMs, n int64) {
	sec := int((atMs - d.base.UnixMilli()) / 1000)
	if sec >= 0 && sec < len(d.withdrawn) {
		d.withdrawn[sec].Add(n)
	}
}

// toLanes hands batch out by tenant, keeping schedule order within each lane.
func (d *driver) toLanes(batch []job) {
	for _, j := range batch {
		l := int(j.tenant) % len(d.lanes)
		if d.laneBuf[l] == nil {
			d.laneBuf[l] = d.chunk()
		}
		d.laneBuf[l] = append(d.laneBuf[l], j)
	}
	for l, c := range d.laneBuf {
		if c != nil {
			d.lanes[l] <- c
			d.laneBuf[l] = nil
		}
	}
}

// chunk returns an empty job slice, reused from workers when one is free.
func (d *driver) chunk() []job {
	select {
	case c := <-d.free:
		return c
	default:
		return make([]job, 0, maxChunk)
	}
}

// work makes decisions until the job channel closes. Decisions use their own context: an
// interrupt stops the schedule, not the requests already sent (they are bounded by the limiter's
// timeout), so what was measured is kept.
func (d *driver) work(rec *workerRec, lim limiter.Limiter, gateway int, jobs <-chan []job) {
	tag := &reqTag{}
	ctx := context.WithValue(context.Background(), tagKey{}, tag)
	nEp := len(d.endpoints)
	var o outcome
	for c := range jobs {
		// One clock read per decision: the end of one decision is the start of the next in the
		// chunk (reading the clock was a fifth of the generator's CPU time with a no-op limiter).
		now := time.Now()
		for _, j := range c {
			sec := int(j.off / time.Second)
			tag.sec.Store(int64(sec))
			reqNow := now
			if d.schedClock {
				reqNow = d.clockBase.Add(j.off)
			}
			atMs := reqNow.UnixMilli() // the check.Checker's (true) time
			if d.skew != nil {
				// The gateway's clock, skewed on purpose; the envelope keeps the true time.
				reqNow = reqNow.Add(time.Duration(d.skew[gateway].Load()))
			}
			cost := int64(j.cost)
			dec, err := lim.Allow(ctx, limiter.Request{
				Tenant: d.tenants[j.tenant], Endpoint: d.endpoints[j.ep], Cost: cost, Now: reqNow,
			})
			end := time.Now()
			o = outcome{sec: sec, latency: end.Sub(d.base) - j.off, dec: dec, err: err, cost: cost}
			key := int(j.tenant)*nEp + int(j.ep)
			if err != nil {
				o.errKind = limiter.ClassifyError(err)
				if o.errKind == limiter.KindTimeout {
					// The script may have run after the client gave up.
					d.checker.ObserveUnknown(key, atMs, cost)
				}
				d.storeTrouble(o.errKind)
			} else {
				cause := check.Cause(dec.Source)
				// An in-process limiter under test (memory) decides Local; a fault's cause applies
				// to it as to the store's decisions.
				if dec.Source == limiter.Central || dec.Source == limiter.Lease || !d.central {
					if c, ok := d.faults.CurrentCause(); ok {
						cause = c
					}
				}
				o.verdict = d.checker.ObserveAs(key, atMs, cost, dec.Allowed, cause)
				if o.verdict == check.Overspend {
					d.overKeys.add(key, cost)
				}
			}
			d.keyCounts[key].Add(1)
			rec.record(&o, &d.finalized)
			d.pending[sec].Add(-1)
			d.inflight.Add(-1)
			now = end
		}
		select {
		case d.free <- c[:0]:
		default:
		}
	}
}

// collect writes each second once it is fully dispatched and its decisions are done (or it has
// waited maxFinalizeLag), in order, until every second is written.
func (d *driver) collect(emit func(sec int, s *secStats)) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	acc := &secStats{hist: results.NewHistogram()}
	var lastProgress time.Time
	for {
		if d.onProgress != nil && time.Since(lastProgress) >= ProgressEvery {
			lastProgress = time.Now()
			d.onProgress(d.progress())
		}
		limit := d.seconds
		if d.dispatchSec.Load() >= int64(d.seconds) {
			// The schedule is over; an interrupted one covered only part of the run.
			limit = int((time.Duration(d.elapsed.Load()) + time.Second - 1) / time.Second)
		}
		next := int(d.finalized.Load()) + 1
		for next < limit {
			dispatched := d.dispatchSec.Load() > int64(next)
			if !dispatched {
				break
			}
			overdue := time.Since(d.base) > time.Duration(next+1)*time.Second+maxFinalizeLag
			if d.pending[next].Load() > 0 && !overdue {
				break
			}
			// Publish first: a worker that takes its shard lock after this sees the second as
			// written and books into the late bucket instead of a slot no one will read.
			d.finalized.Store(int64(next))
			acc.reset(next)
			for _, w := range d.shards {
				w.harvest(next, acc)
			}
			emit(next, acc)
			next++
		}
		if next >= limit && d.dispatchSec.Load() >= int64(d.seconds) {
			if d.onProgress != nil {
				d.onProgress(d.progress()) // the end: every count in, elapsed the run's
			}
			return
		}
		<-tick.C
	}
}

// late returns what finished after its second had been written.
func (d *driver) late() *secStats {
	acc := &secStats{hist: results.NewHistogram()}
	for _, w := range d.shards {
		w.harvestLate(acc)
	}
	return acc
}
