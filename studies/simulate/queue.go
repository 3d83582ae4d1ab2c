package simulate

import "container/heap"

type eventKind uint8

const (
	evArrival eventKind = iota
	evDeparture
	evDown
	evUp
	evHostDone
	evHostToggle
)

// event is one scheduled happening. seq breaks ties in scheduling order, so runs are
// reproducible whatever the heap does with equal times.
type event struct {
	t       float64 // seconds
	seq     uint64
	kind    eventKind
	primary int32
	epoch   uint32 // a departure from before a primary died carries an old epoch and is ignored
	key     uint64 // an arrival's tenant rank
}

// eventQueue is a min-heap of events by time (container/heap).
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// scheduler wraps the heap with a sequence counter.
type scheduler struct {
	q   eventQueue
	seq uint64
}

func (s *scheduler) push(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.q, e)
}

func (s *scheduler) pop() (event, bool) {
	if len(s.q) == 0 {
		return event{}, false
	}
	return heap.Pop(&s.q).(event), true
}
