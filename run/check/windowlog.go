package check

// wrun is one millisecond of a key's conforming tokens, as running totals: n and d count the
// tokens conforming under N and D (see Checker) in this run and every earlier one, so the tokens
// in any span of runs are a difference of two totals. The totals may wrap around int64; their
// differences stay exact.
type wrun struct{ ms, n, d int64 }

// windowLog is one key's state in the Window envelope: its conforming tokens as runs merged per
// millisecond, oldest first, kept while a request can still be judged against them (see
// Window.advance), and its provisional false denies. 80 bytes, plus 24 bytes per run of capacity.
type windowLog struct {
	buf          []wrun // the live runs are buf[head:]
	head         int
	baseN, baseD int64 // the running totals before buf[head]
	newest       int64 // the latest decision time seen (Unix ms); 0: none yet
	pendN, pendD pendingDenies
}

// firstAfter returns the index of the first run later than ms (len(runs) if none).
func firstAfter(runs []wrun, ms int64) int {
	lo, hi := 0, len(runs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if runs[m].ms > ms {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// before returns the running totals of the runs before live index i.
func (l *windowLog) before(runs []wrun, i int) (n, d int64) {
	if i == 0 {
		return l.baseN, l.baseD
	}
	return runs[i-1].n, runs[i-1].d
}

// prune drops the runs at or before horizon (ms).
func (l *windowLog) prune(horizon int64) {
	for l.head < len(l.buf) && l.buf[l.head].ms <= horizon {
		l.baseN, l.baseD = l.buf[l.head].n, l.buf[l.head].d
		l.head++
	}
	if l.head == len(l.buf) {
		l.buf, l.head = l.buf[:0], 0
	}
}

// peak returns, for N and D, the most tokens in any window (s - w, s] that contains t — any s in
// [t, t + w) — counting the runs later than t too. It costs two binary searches plus a step per
// run later than t (at most the reorder window's worth) and per run it moves past.
func (l *windowLog) peak(t, w int64) (pn, pd int64) {
	runs := l.buf[l.head:]
	j := len(runs)
	if j > 0 && runs[j-1].ms > t {
		j = firstAfter(runs, t)
	}
	i := firstAfter(runs[:j], t-w)
	n0, d0 := l.before(runs, i)
	n1, d1 := l.before(runs, j)
	pn, pd = n1-n0, d1-d0
	// Windows ending later than t: the count can only rise where a run enters, at a run's ms.
	for ; j < len(runs) && runs[j].ms < t+w; j++ {
		s := runs[j].ms
		for runs[i].ms <= s-w { // stops at j at the latest: runs[j].ms > s - w
			i++
		}
		n0, d0 = l.before(runs, i)
		pn, pd = max(pn, runs[j].n-n0), max(pd, runs[j].d-d0)
	}
	return pn, pd
}

// record adds dn conforming tokens under N and dd under D at ms t, merging them into t's run.
func (l *windowLog) record(t, dn, dd int64) {
	if dn == 0 && dd == 0 {
		return
	}
	runs := l.buf[l.head:]
	j := len(runs)
	if j > 0 && runs[j-1].ms >= t {
		j = firstAfter(runs, t-1)
	}
	if j == len(runs) || runs[j].ms != t {
		n0, d0 := l.before(runs, j)
		l.insert(j, wrun{ms: t, n: n0, d: d0})
		runs = l.buf[l.head:]
	}
	for k := j; k < len(runs); k++ { // t's run and the later ones (at most the reorder window's)
		runs[k].n += dn
		runs[k].d += dd
	}
}

// insert puts r at live index j, moving the later runs up. A full buffer is compacted in place
// when its dead front is at least a third of it, and otherwise replaced by one 1.5 times the
// live runs: either leaves a third of the buffer free, so appends cost amortised O(1), allocate
// nothing once the live runs stop growing, and the capacity stays within 1.5 times the most
// runs ever live (or 16).
func (l *windowLog) insert(j int, r wrun) {
	if len(l.buf) == cap(l.buf) {
		live := len(l.buf) - l.head
		if l.head > 0 && 3*l.head >= len(l.buf) {
			copy(l.buf, l.buf[l.head:])
			l.buf = l.buf[:live]
		} else {
			grown := make([]wrun, live, max(16, live+live/2+1))
			copy(grown, l.buf[l.head:])
			l.buf = grown
		}
		l.head = 0
	}
	l.buf = l.buf[:len(l.buf)+1]
	at := l.head + j
	copy(l.buf[at+1:], l.buf[at:])
	l.buf[at] = r
}
