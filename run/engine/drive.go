package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
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

// driver is one in-process run's open-loop machinery: a dispatcher that follows the pacer, a
// pool of workers that make decisions and hand each one's Record to the consumers, and a
// collector that writes one row per second as the run goes.
type driver struct {
	s     *Session
	spec  *scenarios.Spec
	judge judge
	extra []Consumer // Options.Consumers
	rec   *recorder
	// onProgress hears a live snapshot every ProgressEvery (see progress.go); nil is silent.
	onProgress func(results.Progress)

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
	// Per second of the schedule. The dispatcher writes offered/sent/dropped/behind; workers
	// decrement pending.
	offered, sent, dropped, behind, pending []atomic.Int64
	dispatchSec                             atomic.Int64 // every second before it is fully dispatched
	lag                                     *results.Histogram
	interrupted                             atomic.Bool
	elapsed                                 atomic.Int64 // schedule time covered (ns); set before dispatchSec reaches seconds
	// windowEndNs is when the run's window ends (UnixNano): base + duration, or the interrupt.
	// A decision answered after it is late: counted in decisions, not in the achieved rate.
	windowEndNs atomic.Int64
	late        []atomic.Int64 // late decisions, by second of their intended start
	lateAnswers []atomic.Int64 // the late decisions that were answers (not errors)
}

func newDriver(s *Session) *driver {
	spec := s.Spec
	secs := s.secs
	d := &driver{
		s: s, spec: spec, seconds: secs,
		rec:         newRecorder(min(spec.Load.Concurrency, 4*runtime.GOMAXPROCS(0)), secs),
		jobs:        make(chan []job, spec.Load.MaxInflight),
		free:        make(chan []job, min(spec.Load.MaxInflight, 4096)),
		offered:     make([]atomic.Int64, secs),
		sent:        make([]atomic.Int64, secs),
		dropped:     make([]atomic.Int64, secs),
		behind:      make([]atomic.Int64, secs),
		pending:     make([]atomic.Int64, secs),
		late:        make([]atomic.Int64, secs),
		lateAnswers: make([]atomic.Int64, secs),
		lag:         results.NewHistogram(),
	}
	d.judge = judge{checker: s.checker, faults: s.faults, central: s.store != nil,
		redisClock: spec.Limiter.Clock == scenarios.ClockRedis, micro: s.JudgeTick() == time.Microsecond}
	d.extra = s.opts.Consumers
	if spec.Limiter.Clock == scenarios.ClockSchedule || spec.Trace != nil {
		d.schedClock = spec.Limiter.Clock == scenarios.ClockSchedule
		d.lanes = make([]chan []job, spec.Load.Concurrency)
		for i := range d.lanes {
			d.lanes[i] = make(chan []job, laneDepth)
		}
		d.laneBuf = make([][]job, len(d.lanes))
	}
	return d
}

// laneDepth is how many chunks one lane queues; a full lane blocks the dispatcher, which then
// falls behind its schedule (and counts what is too late as dropped).
const laneDepth = 256

// run drives the whole schedule. ctx cancels the schedule (the run is then marked interrupted);
// decisions already sent finish, bounded by the limiter's timeout. emit receives every second.
// base is the schedule's t=0 (now, or the start barrier's instant).
func (d *driver) run(ctx context.Context, base time.Time, pacer workload.Pacer, stream keySource, emit func(sec int, s *Account)) {
	d.base = base
	d.clockBase = d.base.Truncate(time.Millisecond)
	d.windowEndNs.Store(d.base.Add(time.Duration(d.spec.Duration)).UnixNano())
	d.s.Start(d.base)
	var workers sync.WaitGroup
	gws := d.s.gateways
	for i := 0; i < d.spec.Load.Concurrency; i++ {
		jobs := d.jobs
		if d.lanes != nil {
			jobs = d.lanes[i]
		}
		w := &worker{d: d, id: i, gateway: i % len(gws), lim: gws[i%len(gws)]}
		workers.Add(1)
		go func() {
			defer workers.Done()
			w.work(jobs)
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
	// Requests an AsyncLimiter parked are still in flight, each bounded by the limiter's
	// timeout; every decision is in before the run ends.
	for d.inflight.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	<-collected
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

// consume hands r to the run's consumers: the built-in ones called directly, since they run for
// every decision (the judge first: the others read its verdict; the tally; the per-second
// recorder; with Redis, a slot-map reload after a failed call), then the caller's
// Options.Consumers.
func (d *driver) consume(r *Record) {
	d.judge.Consume(r)
	if d.s.regions != nil {
		d.s.regions.consume(r)
	}
	d.s.tally.Consume(r)
	if d.s.back != nil {
		d.s.back.Consume(r)
	}
	d.rec.Consume(r)
	if k, ok := r.StoreFailure(); ok && d.s.store != nil {
		d.s.store.trouble(k)
	}
	for _, c := range d.extra {
		c.Consume(r)
	}
}
