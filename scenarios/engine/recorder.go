package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios/check"
)

// ringSeconds is how many seconds of stats a shard keeps before the collector must have
// harvested them. It bounds how late a second may be written out (see maxFinalizeLag).
const ringSeconds = 8

// secStats is what one worker saw of the requests intended in one second.
type secStats struct {
	sec                                   int // which second the slot holds; -1 when empty
	allowed, denied, failOpen, failClosed int64
	errs                                  [limiter.NumErrorKinds]int64
	overspend, falseDenies                int64
	overspendTokens                       int64
	hist                                  *results.Histogram
}

func (s *secStats) reset(sec int) {
	h := s.hist
	*s = secStats{sec: sec, hist: h}
	h.Reset()
}

// workerRec is a shard of the run's record, shared by a few workers (worker i uses shard
// i % len(shards)) and read by the collector, each under mu. Sharding keeps lock contention low
// while the number of HDR histograms (ringSeconds per shard, ~100 KB each) stays small even with
// thousands of workers.
type workerRec struct {
	mu      sync.Mutex
	ring    [ringSeconds]secStats
	late    secStats // requests finished after their second was already written out
	byCause map[limiter.Source]int64
}

func newWorkerRec() *workerRec {
	w := &workerRec{byCause: map[limiter.Source]int64{}}
	for i := range w.ring {
		w.ring[i] = secStats{sec: -1, hist: results.NewHistogram()}
	}

	w.late = secStats{sec: -1, hist: results.NewHistogram()}
	return w
}

// outcome is one finished decision as the worker classifies it.
type outcome struct {
	sec     int
	latency time.Duration
	dec     limiter.Decision
	err     error
	errKind limiter.ErrorKind
	verdict check.Verdict
	cost    int64
}

// slot returns the stats for sec, or the late bucket when the collector has moved past it.
// Caller holds w.mu.
func (w *workerRec) slot(sec int, finalized int) *secStats {
	if sec <= finalized {
		return &w.late
	}
	s := &w.ring[sec%ringSeconds]
	if s.sec != sec {
		s.reset(sec)
	}
	return s
}

func (w *workerRec) record(o *outcome, finalized *atomic.Int64) {
	w.mu.Lock()
	s := w.slot(o.sec, int(finalized.Load()))
	s.hist.Record(o.latency)
	switch {
	case o.err != nil:
		s.errs[o.errKind]++
	case o.dec.Source == limiter.FailOpen:
		s.failOpen++
	case o.dec.Source == limiter.FailClosed:
		s.failClosed++
	case o.dec.Allowed:
		s.allowed++
	default:
		s.denied++
	}
	switch o.verdict {
	case check.Overspend:
		s.overspend++
		s.overspendTokens += o.cost
		w.byCause[o.dec.Source]++
	case check.FalseDeny:
		s.falseDenies++
	}
	w.mu.Unlock()
}

// harvest moves the stats of second sec into dst (and the slot's histogram into h), emptying it.
func (w *workerRec) harvest(sec int, dst *secStats) {
	w.mu.Lock()
	s := &w.ring[sec%ringSeconds]
	if s.sec == sec {
		dst.add(s)
		s.reset(-1)
	}
	w.mu.Unlock()
}

func (w *workerRec) harvestLate(dst *secStats) {
	w.mu.Lock()
	dst.add(&w.late)
	w.late.reset(-1)
	w.mu.Unlock()
}

func (d *secStats) add(s *secStats) {
	d.allowed += s.allowed
	d.denied += s.denied
	d.failOpen += s.failOpen
	d.failClosed += s.failClosed
	for i := range d.errs {
		d.errs[i] += s.errs[i]
	}
	d.overspend += s.overspend
	d.falseDenies += s.falseDenies
	d.overspendTokens += s.overspendTokens
	d.hist.Merge(s.hist)
}

func (d *secStats) errors() int64 {
	var n int64
	for _, e := range d.errs {
		n += e
	}
	return n
}
