package engine

import (
	"sync/atomic"
	"time"

	"ratelab/limiter"
	"ratelab/results"
)

// marks are the per-second counts that do not come from a decision's record: fault injections
// and provisional false denies the checker withdrew as reordering. Both drivers add them to
// their rows.
type marks struct {
	baseNs    atomic.Int64 // the run's time zero, UnixNano; 0 before Start
	faults    []atomic.Int64
	withdrawn []atomic.Int64
}

func newMarks(secs int) *marks {
	return &marks{faults: make([]atomic.Int64, secs), withdrawn: make([]atomic.Int64, secs)}
}

func (m *marks) start(base time.Time) { m.baseNs.Store(base.UnixNano()) }

// second returns the second of the run t (UnixNano) falls in, or -1 outside the run.
func (m *marks) second(tNs int64) int {
	base := m.baseNs.Load()
	if base == 0 || tNs < base {
		return -1
	}
	if sec := int((tNs - base) / int64(time.Second)); sec < len(m.faults) {
		return sec
	}
	return -1
}

// fault books a fault injected atS seconds into the run.
func (m *marks) fault(atS float64) {
	if sec := int(atS); atS >= 0 && sec < len(m.faults) {
		m.faults[sec].Add(1)
	}
}

// withdraw books provisional false denies the checker took back, in the second their request
// started in (atMs, Unix ms).
func (m *marks) withdraw(atMs, n int64) {
	if sec := m.second(atMs * int64(time.Millisecond)); sec >= 0 {
		m.withdrawn[sec].Add(n)
	}
}

// fillRow adds second sec's marks to its row: faults and the false denies withdrawn so far
// (later withdrawals are only in the summary).
func (m *marks) fillRow(sec int, iv *results.Interval) {
	if sec < 0 || sec >= len(m.faults) {
		return
	}
	iv.Faults += m.faults[sec].Load()
	iv.FalseDenies = max(0, iv.FalseDenies-m.withdrawn[sec].Load())
}

// addError adds n errors of kind k to e.
func addError(e *results.Errors, k limiter.ErrorKind, n int64) {
	switch k {
	case limiter.KindTimeout:
		e.Timeout += n
	case limiter.KindMoved:
		e.Moved += n
	case limiter.KindAsk:
		e.Ask += n
	case limiter.KindTryAgain:
		e.TryAgain += n
	case limiter.KindClusterDown:
		e.ClusterDown += n
	case limiter.KindNoScript:
		e.NoScript += n
	case limiter.KindConn:
		e.Conn += n
	case limiter.KindUnreplicated:
		e.Unreplicated += n
	default:
		e.Other += n
	}
}
