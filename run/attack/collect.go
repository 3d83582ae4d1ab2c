package attack

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
	"ratelab/results"
	"ratelab/run/check"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// obsKind is what header honesty is told about one response.
type obsKind uint8

const (
	obsAllowed obsKind = iota
	obsDenied
	obsUnknown // no decision, or one the store may have debited unseen
)

// obs is one response's record waiting to be judged by the overspend envelopes; it is booked
// in its second's account once both have.
type obs struct {
	rec   engine.Record
	ms    [2]int64 // each envelope's clock: send and arrival times, or twice the trace time
	order uint64   // tie-break: schedule order
	fed   [2]bool
	v     [2]check.Verdict
	cause check.Cause
	// lateAnswer: an answer after the schedule's window ended (load.late).
	lateAnswer bool
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
	lateRow               []int64           // by second: late answers booked in its row (its late column)
	stats                 []*engine.Account // nil once written
	late, total           *engine.Account
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

	byCause map[check.Cause]int64

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
		planned: make([]int64, secs), recvd: make([]int64, secs), unfed: make([]int64, secs), lateRow: make([]int64, secs),
		stats: make([]*engine.Account, secs), late: engine.NewAccount(), total: engine.NewAccount(),
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

// statsFor returns the account of second sec, or the late bucket once its row is written.
func (c *collector) statsFor(sec int) *engine.Account {
	if sec < c.nextRow {
		return c.late
	}
	if c.stats[sec] == nil {
		c.stats[sec] = engine.NewAccount()
	}
	return c.stats[sec]
}

// book adds a judged record to its second's account, or to the late bucket once the second's
// row is written; a late answer booked in its second counts in that row's late column, as the
// engine's rows count theirs. Then the scenario's consumers hear it (engine.Options.Consumers).
func (c *collector) book(r *engine.Record, lateAnswer bool) {
	if lateAnswer && r.Sec >= c.nextRow {
		c.lateRow[r.Sec]++
	}
	c.statsFor(r.Sec).Book(r)
	if c.o.hooks != nil {
		for _, cs := range c.o.hooks.consumers {
			cs.Consume(r)
		}
	}
}

// add takes one Result: its record, classified as the engine's are, goes to the envelopes when
// it can be tied to its key, and to its second's account once judged.
func (c *collector) add(r *vegeta.Result, seqPlan []int32) {
	s := int(r.Seq)
	if s >= len(c.p.off) {
		return // not one of ours; cannot happen with one attack per Attacker
	}
	c.sent++
	off := c.p.off[s]
	sec := int(off / time.Second)
	c.recvd[sec]++
	intended := c.base.Add(off)
	end := r.Timestamp.Add(r.Latency)
	o := obs{order: uint64(s)}
	rec := &o.rec
	// From the intended start: never less than vegeta's own latency, since Seq s was not
	// handed out before its slot was due.
	rec.Sec, rec.Latency, rec.Cost = sec, end.Sub(intended), 1
	rec.Decision, rec.Err = answerOf(r)
	rec.Opaque = c.o.hooks == nil // not ratelab's gateway: a timed-out request may have passed
	engine.Classify(rec)
	if end.After(c.base.Add(c.p.window)) {
		c.lateDone++ // completed after the schedule's window, whatever the outcome
		if rec.Outcome.Decided() {
			c.lateAnswers++ // an answer, but not within the window: not in the achieved rate
			o.lateAnswer = true
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
	if k < 0 {
		c.book(rec, o.lateAnswer) // not tied to a key: nothing to judge
	} else {
		key := c.p.key(k)
		c.keyCounts[key]++
		rec.Key, rec.Cost = key, int64(c.p.recs[k].Cost)
		plain := (rec.Outcome == engine.OutcomeAllowed || rec.Outcome == engine.OutcomeDenied) && !rec.MayHaveDebited
		c.hon.record(key, r.Timestamp, end, honestyKind(rec), plain && rec.Cost == 1, r.Headers)
		o.cause = c.cause(r.Headers.Get(gateway.HeaderSource))
		if c.traceTime {
			ms := c.p.traceMs(k)
			o.ms, o.order = [2]int64{ms, ms}, uint64(k)
		} else {
			o.ms = [2]int64{r.Timestamp.UnixMilli(), end.UnixMilli()}
		}
		c.pending = append(c.pending, o)
		c.unfed[sec]++
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

// honestyKind is what header honesty is told of a record.
func honestyKind(r *engine.Record) obsKind {
	switch {
	case r.MayHaveDebited || !r.Outcome.Decided():
		return obsUnknown
	case r.Decision.Allowed:
		return obsAllowed
	}
	return obsDenied
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
			o.v[e] = engine.Observe(ch, &o.rec, o.ms[e], o.cause)
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
		// A verdict both envelopes give; the lesser one otherwise (see collector).
		switch {
		case o.v[0] == check.Overspend && o.v[1] == check.Overspend:
			o.rec.Verdict = check.Overspend
			c.byCause[o.cause]++
		case o.v[0] == check.FalseDeny && o.v[1] == check.FalseDeny:
			o.rec.Verdict = check.FalseDeny
		case o.rec.Decision.Allowed:
			o.rec.Verdict = check.Conforming
		default:
			o.rec.Verdict = check.Denied
		}
		c.book(&o.rec, o.lateAnswer)
		c.unfed[o.rec.Sec]--
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
			st = engine.NewAccount()
		}
		iv := c.interval(sec, st)
		iv.Time = results.SecondTime(c.base, iv.TS)
		if c.o.hooks != nil {
			c.o.hooks.fillRow(sec, &iv)
		}
		if c.firsts != nil {
			c.firsts.Add(scenarios.NewSecond(&iv, st.Hist()))
		}
		c.rowsOut = append(c.rowsOut, iv)
		c.total.Add(st)
		c.stats[sec] = nil
		c.nextRow++
		if err := c.series.Write(iv, st.Hist()); err != nil && c.rowErr == nil {
			c.rowErr = err
		}
		if c.o.OnInterval != nil {
			c.o.OnInterval(iv)
		}
		if c.o.OnHistogram != nil {
			c.o.OnHistogram(sec, st.Hist())
		}
	}
}

// interval is second sec's row: the account's, with the plan's counts.
func (c *collector) interval(sec int, s *engine.Account) results.Interval {
	var dropped int64
	if c.closed {
		dropped = c.planned[sec] - c.recvd[sec]
	}
	iv := s.Interval(sec, c.planned[sec], c.recvd[sec], dropped)
	iv.Late = c.lateRow[sec]
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
	c.total.Add(c.late)
	for _, st := range c.stats[c.rows:] { // cannot hold results: nothing past ran was sent
		if st != nil {
			c.total.Add(st)
		}
	}
}

// offered is the requests scheduled before ran (all of them unless interrupted).
func (c *collector) offered(ran time.Duration) int64 {
	return int64(sort.Search(len(c.p.off), func(i int) bool { return c.p.off[i] >= ran }))
}

// answerOf is the decision (or the error) a result carries, as the limiter behind it answered:
// 2xx allowed and 429 denied, with the source, the store failure a fail policy answered and a
// short WAIT from ratelab's gateway headers (limiter/gateway); a 503 with the gateway's failure
// headers, or any other status, an error of that kind; a failed request (no status) an error
// classified from vegeta's text, the only form in which vegeta keeps it.
func answerOf(r *vegeta.Result) (limiter.Decision, error) {
	h := r.Headers
	switch {
	case r.Code >= 200 && r.Code < 300, r.Code == http.StatusTooManyRequests:
		d := limiter.Decision{Allowed: r.Code != http.StatusTooManyRequests, Source: sourceOf(h.Get(gateway.HeaderSource))}
		if kind := h.Get(gateway.HeaderFailure); kind != "" {
			d.Failure = limiter.Failure{Failed: true, Kind: kindOf(kind), MayHaveDebited: h.Get(gateway.HeaderUnknown) == "1"}
		}
		d.Unreplicated = h.Get(gateway.HeaderWaitShort) == "1"
		return d, nil
	case r.Code == 0:
		kind := classify(r.Error)
		// A timeout or a connection lost once the request was written: the target may have
		// counted it. A refused connection sent nothing.
		unknown := kind == limiter.KindTimeout || kind == limiter.KindConn && !strings.Contains(r.Error, "connection refused")
		return limiter.Decision{}, &limiter.RemoteError{Kind: kind, MayHaveDebited: unknown, Msg: r.Error}
	case h.Get(gateway.HeaderFailure) != "":
		return limiter.Decision{}, &limiter.RemoteError{Kind: kindOf(h.Get(gateway.HeaderFailure)),
			MayHaveDebited: h.Get(gateway.HeaderUnknown) == "1", Msg: fmt.Sprintf("status %d", r.Code)}
	}
	// Another status from a target that is not ratelab's gateway: a 5xx may come after the
	// target counted the request, a 4xx (but 429) before it decided anything.
	return limiter.Decision{}, &limiter.RemoteError{Kind: limiter.KindOther, MayHaveDebited: r.Code >= 500, Msg: fmt.Sprintf("status %d", r.Code)}
}

// sourceOf maps an X-RateLimit-Source value to its Source: central when absent or unknown.
func sourceOf(v string) limiter.Source {
	for s := limiter.Central; s <= limiter.FailClosed; s++ {
		if s.String() == v {
			return s
		}
	}
	return limiter.Central
}

// kindOf maps an X-RateLimit-Failure value to its ErrorKind: other when unknown.
func kindOf(v string) limiter.ErrorKind {
	for k := range limiter.NumErrorKinds {
		if limiter.ErrorKind(k).String() == v {
			return limiter.ErrorKind(k)
		}
	}
	return limiter.KindOther
}

// classify sorts a failed request (no HTTP status) by vegeta's error text into timeout,
// connection and other.
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
	total := c.p.window
	el := min(now.Sub(c.base), total)
	p := results.Progress{Elapsed: el, Total: total}
	// The plan's offsets are in schedule order.
	p.Offered = int64(sort.Search(len(c.p.off), func(i int) bool { return c.p.off[i] > el }))
	for _, n := range c.recvd {
		p.Sent += n
	}
	return p
}
