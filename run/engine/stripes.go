package engine

import (
	"sync"
	"sync/atomic"

	"ratelab/results"
)

// ringSeconds is how many seconds of stats a stripe keeps before the collector must have
// harvested them. It bounds how late a second may be written out (see maxFinalizeLag).
const ringSeconds = 8

func (s *Account) reset(sec int) {
	h := s.hist
	*s = Account{sec: sec, hist: h}
	h.Reset()
}

// recorder is the consumer that books each record into its second's stats, for the collector
// to harvest. Its stats are striped: worker i books into stripe i % len(stripes), each under its
// own lock, which keeps lock contention low while the number of HDR histograms (ringSeconds per
// stripe) stays small even with thousands of workers.
type recorder struct {
	stripes []*stripe
	lost    []atomic.Bool // by second: see stripe.lost
	// finalized is the last second the collector has written out; later records of it go to
	// the late bucket.
	finalized atomic.Int64
}

func newRecorder(n, seconds int) *recorder {
	r := &recorder{stripes: make([]*stripe, n), lost: make([]atomic.Bool, seconds)}
	for i := range r.stripes {
		r.stripes[i] = newStripe()
		r.stripes[i].lost = r.lost
	}
	r.finalized.Store(-1)
	return r
}

func (rc *recorder) Consume(r *Record) {
	rc.stripes[r.Worker%len(rc.stripes)].record(r, int(rc.finalized.Load()))
}

// harvest moves the stats of second sec from every stripe into dst.
func (rc *recorder) harvest(sec int, dst *Account) {
	for _, w := range rc.stripes {
		w.harvest(sec, dst)
	}
}

// lostSeconds is how many seconds had stats go to the late bucket because the collector fell
// behind the ring.
func (rc *recorder) lostSeconds() int64 {
	var n int64
	for i := range rc.lost {
		if rc.lost[i].Load() {
			n++
		}
	}
	return n
}

// late returns what finished after its second had been written.
func (rc *recorder) late() *Account {
	acc := &Account{hist: results.NewHistogram()}
	for _, w := range rc.stripes {
		w.harvestLate(acc)
	}
	return acc
}

// stripe is one lock's share of the recorder: a ring of per-second stats and a late bucket.
type stripe struct {
	mu   sync.Mutex
	ring [ringSeconds]Account
	late Account       // requests finished after their second was already written out
	lost []atomic.Bool // shared by the stripes: by second, the ring came round on it unharvested
}

func newStripe() *stripe {
	w := &stripe{}
	for i := range w.ring {
		w.ring[i] = Account{sec: -1, hist: results.NewHistogram()}
	}
	w.late = Account{sec: -1, hist: results.NewHistogram()}
	return w
}

// slot returns the stats for sec, or the late bucket when the collector has moved past it.
// Caller holds w.mu.
func (w *stripe) slot(sec int, finalized int) *Account {
	if sec <= finalized {
		return &w.late
	}
	s := &w.ring[sec%ringSeconds]
	if s.sec != sec {
		if s.sec > finalized {
			// The collector has not written that second yet and the ring has come round: keep
			// its counts in the totals (the late bucket) and count the second as lost, never
			// overwrite it silently.
			w.late.Add(s)
			if s.sec < len(w.lost) {
				w.lost[s.sec].Store(true)
			}
		}
		s.reset(sec)
	}
	return s
}

func (w *stripe) record(r *Record, finalized int) {
	w.mu.Lock()
	w.slot(r.Sec, finalized).Book(r)
	w.mu.Unlock()
}

// harvest moves the stats of second sec into dst (and the slot's histogram into h), emptying it.
func (w *stripe) harvest(sec int, dst *Account) {
	w.mu.Lock()
	s := &w.ring[sec%ringSeconds]
	if s.sec == sec {
		dst.Add(s)
		s.reset(-1)
	}
	w.mu.Unlock()
}

func (w *stripe) harvestLate(dst *Account) {
	w.mu.Lock()
	dst.Add(&w.late)
	w.late.reset(-1)
	w.mu.Unlock()
}
