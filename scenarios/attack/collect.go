package attack

import (
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/scenarios/check"
)

// secStats is what the results intended in one second came to.
type secStats struct {
	allowed, denied, failOpen, failClosed int64
	errs                                  [limiter.NumErrorKinds]int64
	overspend, overTokens, falseDenies    int64
	hist                                  *results.Histogram
}

func newSecStats() *secStats { return &secStats{hist: results.NewHistogram()} }

func (d *secStats) add(s *secStats) {
	d.allowed += s.allowed
	d.denied += s.denied
	d.failOpen += s.failOpen
	d.failClosed += s.failClosed
	for i := range d.errs {
		d.errs[i] += s.errs[i]
	}
	d.overspend += s.overspend
	d.overTokens += s.overTokens
	d.falseDenies += s.falseDenies
	d.hist.Merge(s.hist)
}

func (d *secStats) errors() int64 {
	var n int64
	for _, e := range d.errs {
		n += e
	}
	return n
}

// obsKind is what the envelope is told about one response.
type obsKind uint8

const (
	obsAllowed obsKind = iota
	obsDenied
	obsUnknown // timed out: the target may have decided and debited
)

// obs is one response waiting to be judged by the overspend envelopes.
type obs struct {
	ms    [2]int64 // each envelope's clock: send and arrival times, or twice the trace time
	order uint64   // tie-break: schedule order
	key   int32
	cost  int32
	sec   int32
	kind  obsKind
	fed   [2]bool
	v     [2]check.Verdict
	cause check.Cause
}

// collector turns vegeta's Results into rows, histograms and overspend. It runs on one
// goroutine.
//
// Black-box, the target decided each request at some unknown moment between its send and its
// response. Two envelopes judge every response, one at the send time and one at the arrival;
// a request counts as overspend (or a false deny) only when both say so. Either one alone
// errs when the unknown moment is far from its end of the interval: judged at arrival, a
// request decided long before on a full bucket looks like overspend; judged at the send, one
// decided after a refill does. A limiter that lets through what no moment in the interval
// allows is caught by both. Each envelope needs a key's responses in time order, while Results
// arrive in completion order from concurrent workers, so responses wait in pending until no
// Result still missing can carry an earlier time (the watermark), then go to the envelopes
// sorted.
type collector struct {
	p         *plan
	o         Options
	base      time.Time
	checkers  [2]check.Checker // judging at send [0] and at arrival [1]
	causeOf   map[string]check.Cause
	traceTime bool

	planned, recvd, unfed []int64
	stats                 []*secStats // nil once written
	late, total           *secStats
	nextRow               int
	keyCounts             []int64
	lag                   *results.Histogram
	ownLat                *results.Histogram // vegeta's own latency (from dequeue), for comparison

	// Watermark state. Arrival mode: Results are numbered by Seq in send order, so every
	// missing Result arrives at or after the send time of the last Seq of the received prefix.
	// Trace-time mode: every missing request has a trace time >= that of the first missing index.
	got     []bool // by Seq (arrival mode) or request index (trace-time mode)
	low     int    // first index not received
	sendMs  []int64
	pending []obs

	unknownOutcomes int64
	byCause         map[check.Cause]int64

	sent        int64
	lateAnswers int64 // answers (200 or 429) after the schedule's window ended
	lateDone    int64 // requests completed after it, whatever their outcome
	rows        int   // seconds to write: all, or those the schedule reached before an interrupt
	rowsOut     []results.Interval
	hon         *honesty
	seqPlan     []int32 // the transport's: per vegeta Seq, the request index + 1
	encErr      error   // the first error writing results.bin
	closed      bool
	rowErr      error
	series      *results.SeriesWriter
	// firsts judges each written second against the SLO when the load has stages (nil without).
	firsts    *scenarios.FirstFailures
	unknownKs int64 // Results whose request index the RoundTripper never saw
}

func newCollector(p *plan, o Options, checkers [2]check.Checker, series *results.SeriesWriter) *collector {
	secs := int(p.duration()/time.Second) + 1
	c := &collector{
		p: p, o: o, checkers: checkers, series: series, traceTime: o.TimeHeader != "",
		causeOf: map[string]check.Cause{}, byCause: map[check.Cause]int64{},
		planned: make([]int64, secs), recvd: make([]int64, secs), unfed: make([]int64, secs),
		stats: make([]*secStats, secs), late: newSecStats(), total: newSecStats(),
		keyCounts: make([]int64, p.tenants*len(p.hdr.Endpoints)),
		lag:       results.NewHistogram(), ownLat: results.NewHistogram(),
		got: make([]bool, len(p.off)),
		// A scenario's keys have their own tariffs, not one declared policy to judge headers by.
		hon: &honesty{o: o, off: o.hooks != nil},
	}
	if !c.traceTime {
		c.sendMs = make([]int64, len(p.off))
	}
	c.rows = secs
	for _, off := range p.off {
		c.planned[int(off/time.Second)]++
	}
	return c
}

// statsFor returns the stats of second sec, or the late bucket once its row is written.
func (c *collector) statsFor(sec int) *secStats {
	if sec < c.nextRow {
		return c.late
	}
	if c.stats[sec] == nil {
		c.stats[sec] = newSecStats()
	}
	return c.stats[sec]
}

// add takes one Result.
func (c *collector) add(r *vegeta.Result, seqPlan []int32) {
	s := int(r.Seq)
	if s >= len(c.p.off) {
		return // not one of ours; cannot happen with one attack per Attacker
	}
	c.sent++
	off := c.p.off[s]
	sec := int(off / time.Second)
	c.recvd[sec]++
	st := c.statsFor(sec)
	intended := c.base.Add(off)
	end := r.Timestamp.Add(r.Latency)
	// From the intended start: never less than vegeta's own latency, since Seq s was not
	// handed out before its slot was due.
	st.hist.Record(end.Sub(intended))
	if end.After(c.base.Add(c.p.duration())) {
		c.lateDone++ // completed after the schedule's window, whatever the outcome
		if r.Code == http.StatusTooManyRequests || (r.Code >= 200 && r.Code < 300) {
			c.lateAnswers++ // an answer, but not within the window: not in the achieved rate
		}
	}
	c.lag.Record(max(r.Timestamp.Sub(intended), 0))
	c.ownLat.Record(r.Latency)

	k := -1
	if v := seqPlan[s]; v > 0 {
		k = int(v - 1)
	} else {
		c.unknownKs++
	}
	o := obs{order: uint64(s), sec: int32(sec)}
	source := r.Headers.Get("X-RateLimit-Source")
	judge := classifyAnswer(r, source, st, &o)
	if k >= 0 {
		key := c.p.key(k)
		c.keyCounts[key]++
		plain := source != limiter.FailOpen.String() && source != limiter.FailClosed.String()
		c.hon.record(key, r.Timestamp, end, o.kind, judge && plain && c.p.recs[k].Cost == 1, r.Headers)
		if judge {
			o.key, o.cost = int32(key), int32(min(c.p.recs[k].Cost, math.MaxInt32))
			o.cause = c.cause(source)
			if c.traceTime {
				ms := c.p.traceMs(k)
				o.ms, o.order = [2]int64{ms, ms}, uint64(k)
			} else {
				o.ms = [2]int64{r.Timestamp.UnixMilli(), end.UnixMilli()}
			}
			c.pending = append(c.pending, o)
			c.unfed[sec]++
		}
	}
	idx := s
	if c.traceTime {
		idx = k
	} else {
		c.sendMs[s] = r.Timestamp.UnixMilli()
	}
	if idx >= 0 {
		c.got[idx] = true
		for c.low < len(c.got) && c.got[c.low] {
			c.low++
		}
	}
}

// classifyAnswer books r's outcome in st and sets what the envelopes are told of it; it
// reports whether they judge it (an error other than a timeout says nothing of the limiter).
func classifyAnswer(r *vegeta.Result, source string, st *secStats, o *obs) bool {
	switch {
	case r.Code >= 200 && r.Code < 300:
		o.kind = obsAllowed
		if source == limiter.FailOpen.String() {
			st.failOpen++
		} else {
			st.allowed++
		}
	case r.Code == http.StatusTooManyRequests:
		o.kind = obsDenied
		if source == limiter.FailClosed.String() {
			st.failClosed++
		} else {
			st.denied++
		}
	case r.Code == 0:
		kind := classify(r.Error)
		st.errs[kind]++
		o.kind = obsUnknown
		return kind == limiter.KindTimeout
	default:
		st.errs[limiter.KindOther]++
		return false
	}
	return true
}

// cause maps an X-RateLimit-Source value to the envelope's cause (central when absent).
func (c *collector) cause(source string) check.Cause {
	if source == "" {
		return check.Cause(limiter.Central)
	}
	if v, ok := c.causeOf[source]; ok {
		return v
	}
	// Both envelopes register causes in the same order, so they agree on the value.
	v := c.checkers[0].CauseFor(source)
	c.checkers[1].CauseFor(source)
	c.causeOf[source] = v
	return v
}

// watermark is the envelope time below which no missing Result can fall.
func (c *collector) watermark() int64 {
	if c.closed || c.low == len(c.got) {
		return math.MaxInt64
	}
	if c.traceTime {
		return c.p.traceMs(c.low)
	}
	if c.low == 0 {
		return math.MinInt64
	}
	return c.sendMs[c.low-1]
}

// feed judges, in each envelope's time order, every pending response below the watermark, and
// books the responses both envelopes have judged.
func (c *collector) feed() {
	w := c.watermark()
	if len(c.pending) == 0 {
		return
	}
	for e, ch := range c.checkers {
		sort.Slice(c.pending, func(i, j int) bool {
			a, b := &c.pending[i], &c.pending[j]
			if a.ms[e] != b.ms[e] {
				return a.ms[e] < b.ms[e]
			}
			return a.order < b.order
		})
		for i := range c.pending {
			o := &c.pending[i]
			if o.ms[e] >= w {
				break
			}
			if o.fed[e] {
				continue
			}
			o.fed[e] = true
			if o.kind == obsUnknown {
				ch.ObserveUnknown(int(o.key), o.ms[e], int64(o.cost))
				continue
			}
			o.v[e] = ch.ObserveAs(int(o.key), o.ms[e], int64(o.cost), o.kind == obsAllowed, o.cause)
		}
	}
	n := 0
	for i := range c.pending {
		o := &c.pending[i]
		if !o.fed[0] || !o.fed[1] {
			c.pending[n] = *o
			n++
			continue
		}
		st := c.statsFor(int(o.sec))
		switch {
		case o.kind == obsUnknown:
			c.unknownOutcomes++
		case o.v[0] == check.Overspend && o.v[1] == check.Overspend:
			st.overspend++
			st.overTokens += int64(o.cost)
			c.byCause[o.cause]++
		case o.v[0] == check.FalseDeny && o.v[1] == check.FalseDeny:
			st.falseDenies++
		}
		c.unfed[o.sec]--
	}
	c.pending = c.pending[:n]
}

// rowGrace is how long after its end (beyond the request timeout) a second waits for its
// Results before its row is written anyway; later ones count in the totals only.
const rowGrace = 2 * time.Second

// flushRows writes every second whose Results are all in and judged (all of them once the
// attack is over), in order.
func (c *collector) flushRows() {
	for c.nextRow < c.rows {
		sec := c.nextRow
		complete := c.recvd[sec] == c.planned[sec] && c.unfed[sec] == 0
		overdue := time.Since(c.base) > time.Duration(sec+1)*time.Second+c.o.Timeout+rowGrace
		if !complete && !c.closed && !overdue {
			return
		}
		st := c.stats[sec]
		if st == nil {
			st = newSecStats()
		}
		iv := c.interval(sec, st)
		iv.Time = results.SecondTime(c.base, iv.TS)
		if c.o.hooks != nil {
			c.o.hooks.fillRow(sec, &iv)
		}
		if c.firsts != nil {
			c.firsts.Add(scenarios.NewSecond(&iv, st.hist))
		}
		c.rowsOut = append(c.rowsOut, iv)
		c.total.add(st)
		c.stats[sec] = nil
		c.nextRow++
		if err := c.series.Write(iv, st.hist); err != nil && c.rowErr == nil {
			c.rowErr = err
		}
		if c.o.OnInterval != nil {
			c.o.OnInterval(iv)
		}
		if c.o.OnHistogram != nil {
			c.o.OnHistogram(sec, st.hist)
		}
	}
}

func (c *collector) interval(sec int, s *secStats) results.Interval {
	iv := results.Interval{
		TS: float64(sec), Offered: c.planned[sec], Sent: c.recvd[sec],
		Allowed: s.allowed, Denied: s.denied, FailedOpen: s.failOpen, FailedClosed: s.failClosed,
		Errors: s.errors(), Timeout: s.errs[limiter.KindTimeout], Conn: s.errs[limiter.KindConn],
		Other:     s.errs[limiter.KindOther],
		Overspend: s.overspend, FalseDenies: s.falseDenies,
	}
	if c.closed {
		iv.Dropped = c.planned[sec] - c.recvd[sec]
	}
	if s.hist.Count() > 0 {
		iv.P50Ms, iv.P90Ms, iv.P99Ms = s.hist.QuantileMs(50), s.hist.QuantileMs(90), s.hist.QuantileMs(99)
		iv.P999Ms, iv.MaxMs = s.hist.QuantileMs(99.9), s.hist.MaxMs()
	}
	return iv
}

// finish judges everything still pending and writes the remaining rows. An interrupted run
// writes the seconds the schedule reached (ran), as the engine does.
func (c *collector) finish(interrupted bool, ran time.Duration) {
	if interrupted {
		c.rows = max(c.nextRow, min(c.rows, int(ran/time.Second)+1))
	}
	c.closed = true
	c.feed()
	c.flushRows()
	c.total.add(c.late)
	for _, st := range c.stats[c.rows:] { // cannot hold results: nothing past ran was sent
		if st != nil {
			c.total.add(st)
		}
	}
}

// offered is the requests scheduled before ran (all of them unless interrupted).
func (c *collector) offered(ran time.Duration) int64 {
	return int64(sort.Search(len(c.p.off), func(i int) bool { return c.p.off[i] >= ran }))
}

// classify sorts a failed request (no HTTP status) by vegeta's error text — the only form in
// which vegeta keeps it — into timeout, connection and other.
func classify(msg string) limiter.ErrorKind {
	switch {
	case strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "deadline exceeded"),
		strings.Contains(msg, "timeout"):
		return limiter.KindTimeout
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "connection reset"),
		strings.Contains(msg, "broken pipe"), strings.HasSuffix(msg, "EOF"):
		return limiter.KindConn
	default:
		return limiter.KindOther
	}
}

// causeNames is the overspend by cause, under the causes' names.
func (c *collector) causeNames() map[string]int64 {
	out := map[string]int64{}
	names := map[check.Cause]string{check.Cause(limiter.Central): limiter.Central.String()}
	for name, v := range c.causeOf {
		names[v] = name
	}
	for v, n := range c.byCause {
		name, ok := names[v]
		if !ok {
			name = limiter.Source(v).String()
		}
		out[name] += n
	}
	return out
}

// progressEvery is how often Options.OnProgress hears a snapshot.
const progressEvery = 250 * time.Millisecond

// progress is the live snapshot at now: the schedule covered, the requests planned up to now
// and the answers heard so far. Total is the attack's --duration, or a trace replay's length.
func (c *collector) progress(now time.Time) results.Progress {
	total := c.p.duration()
	if c.o.Trace == nil {
		total = max(total, c.o.Duration)
	}
	el := min(now.Sub(c.base), total)
	p := results.Progress{Elapsed: el, Total: total}
	// The plan's offsets are in schedule order.
	p.Offered = int64(sort.Search(len(c.p.off), func(i int) bool { return c.p.off[i] > el }))
	for _, n := range c.recvd {
		p.Sent += n
	}
	return p
}
