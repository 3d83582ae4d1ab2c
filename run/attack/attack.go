package attack

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"ratelab/results"
	"ratelab/run/check"
	"ratelab/run/engine"
)

// ResultsFile is vegeta's own results file in a run directory (vegeta's gob encoding): feed it
// to `vegeta report` or `vegeta plot`.
const ResultsFile = "results.bin"

// minScheduleGrace is how long past the schedule's end vegeta may at least still send late
// requests (the request timeout, if longer); requests not sent by then are counted as dropped.
const minScheduleGrace = time.Second

// Result is what an attack leaves: its directory and its summary.
type Result struct {
	Dir     string
	Summary *results.Summary
}

// Attack attacks o.URL with the schedule o describes and writes the run directory:
// timeseries.csv and latency.hlog as it goes, then results.bin (vegeta's), latency.hdr.json,
// latency.hgrm and summary.json.
// Cancelling ctx stops the schedule; requests in flight finish (bounded by o.Timeout) and what
// was measured is written with interrupted: true.
func Attack(ctx context.Context, o Options) (*Result, error) {
	m, err := measure(ctx, o)
	if m == nil {
		return nil, err
	}
	res := &Result{Dir: m.dir, Summary: m.sum}
	if werr := results.WriteRunFiles(m.dir, m.sum, m.hist); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// measurement is what an attack measured, before the run files are written.
type measurement struct {
	dir  string
	sum  *results.Summary
	rows []results.Interval
	hist *results.Histogram
	ran  time.Duration
}

// measure runs the attack: it writes timeseries.csv and results.bin as it goes and returns the
// summary, rows and latency histogram. A write error is returned beside a complete measurement.
func measure(ctx context.Context, o Options) (*measurement, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	p, err := newPlan(o)
	if err != nil {
		return nil, err
	}
	tr, err := newTransport(p, o)
	if err != nil {
		return nil, err
	}
	if err := o.checkTLS(tr.base.(*http.Transport).TLSClientConfig); err != nil {
		return nil, err
	}
	started := time.Now()
	name := o.name()
	dir := o.Out
	if dir == "" {
		dir = engine.DefaultDir(name, started)
	}
	out, err := openOutputs(dir)
	if err != nil {
		return nil, err
	}
	defer out.close()
	col := newCollector(p, o, o.checkers(p), out.series)
	col.seqPlan = tr.seqPlan
	if len(o.Stages) > 0 {
		col.firsts = o.SLO.NewFirstFailures()
	}
	atk := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Timeout: o.Timeout, Transport: tr}),
		vegeta.Workers(o.Workers), vegeta.MaxWorkers(o.MaxWorkers),
	)
	o.Logf("attacking %s: %d requests over %v (%.0f/s), %d tenants x %d endpoints, workers %d..%d",
		strings.Join(o.urls(), " "), len(p.recs), p.duration().Round(time.Millisecond), p.rate, p.tenants, len(p.hdr.Endpoints), o.Workers, o.MaxWorkers)
	// base is read before vegeta's own start, so intended times are never later than vegeta's
	// schedule and the latency from them never less than vegeta's.
	col.base = time.Now()
	col.hon.base = col.base
	if err := out.series.Start(col.base); err != nil {
		return nil, err
	}
	if o.hooks != nil {
		o.hooks.start(col.base)
	}
	answers := atk.Attack(p.targeter(o), pacer{p}, p.duration()+max(minScheduleGrace, o.Timeout), name)
	interrupted := col.consume(ctx, answers, atk, out.enc)
	ran := time.Since(col.base)
	if !interrupted {
		ran = max(ran, p.window) // the schedule's window, though its last request may end sooner
	}
	// Connections vegeta's transport dialed but never used look "new" to a server, which
	// then waits seconds for them at shutdown; none is needed any more.
	tr.base.(*http.Transport).CloseIdleConnections()
	col.finish(interrupted, ran)
	sum := newSummary(name, o, p, col, ran, started)
	sum.Interrupted = interrupted
	if col.firsts != nil {
		sum.Stages = col.firsts.Result()
	}
	if err := out.series.End(results.RunCounts(sum, col.total.Hist())); err != nil && col.rowErr == nil {
		col.rowErr = err
	}
	m := &measurement{dir: dir, sum: sum, rows: col.rowsOut, hist: col.total.Hist(), ran: min(p.window, ran)}
	switch ferr := out.flush(); {
	case col.rowErr != nil:
		return m, fmt.Errorf("writing timeseries: %w", col.rowErr)
	case col.encErr != nil:
		return m, fmt.Errorf("writing %s: %w", ResultsFile, col.encErr)
	case ferr != nil:
		return m, fmt.Errorf("writing %s: %w", ResultsFile, ferr)
	}
	return m, nil
}

// consume takes vegeta's results until the attack ends (or ctx is done: the attack is then
// stopped and the rest of its results drained), judging them in batches and writing rows as
// their seconds complete. It reports whether the run was interrupted.
func (c *collector) consume(ctx context.Context, out <-chan *vegeta.Result, atk *vegeta.Attacker, enc vegeta.Encoder) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	done := ctx.Done()
	interrupted := false
	unjudged := 0
	var lastProgress time.Time
	for {
		select {
		case r, ok := <-out:
			if !ok {
				return interrupted
			}
			c.add(r, c.seqPlan)
			// results.bin keeps response headers (never the request's): a secret a target
			// echoes back is redacted there.
			redactHeaders(r.Headers, c.o.KeyHeader)
			if err := enc.Encode(r); err != nil && c.encErr == nil {
				c.encErr = err
			}
			// Judge in batches: pending is sorted at every feed.
			if unjudged++; unjudged >= 4096 {
				unjudged = 0
				c.feed()
				c.flushRows()
			}
		case now := <-tick.C:
			c.feed()
			c.flushRows()
			if c.o.OnProgress != nil && now.Sub(lastProgress) >= progressEvery {
				lastProgress = now
				// Not the tick's time: the tick may have waited behind answers the loop has
				// already counted, and a snapshot must not hear more than it says was planned.
				c.o.OnProgress(c.progress(time.Now()))
			}
		case <-done:
			interrupted = true
			done = nil
			atk.Stop()
		}
	}
}

// outputs are the files an attack writes as it goes.
type outputs struct {
	series *results.SeriesWriter
	bin    *os.File
	buf    *bufio.Writer
	enc    vegeta.Encoder
}

func openOutputs(dir string) (*outputs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	o := &outputs{}
	var err error
	if o.series, err = results.CreateSeries(dir); err != nil {
		return nil, err
	}
	if o.bin, err = os.Create(filepath.Join(dir, ResultsFile)); err != nil {
		o.series.Close()
		return nil, err
	}
	o.buf = bufio.NewWriterSize(o.bin, 256<<10)
	o.enc = vegeta.NewEncoder(o.buf)
	return o, nil
}

func (o *outputs) flush() error { return o.buf.Flush() }

func (o *outputs) close() {
	o.series.Close()
	o.bin.Close()
}

// checkers are the two envelopes that judge every response (see collector): the scenario's
// (RunScenario: its limiter's envelope, each key's tariff) or the declared Policy's bucket. A
// denial stays contestable for as long as a request can be in flight.
func (o Options) checkers(p *plan) [2]check.Checker {
	var cs [2]check.Checker
	for i := range cs {
		if o.hooks != nil {
			cs[i] = o.hooks.newChecker(p.tenantNames(), p.hdr.Endpoints)
		} else {
			cs[i] = o.newDeclaredChecker(p.tenants * len(p.hdr.Endpoints))
		}
		cs[i].SetReorderWindow(max(o.Timeout, check.DefaultReorderWindowMs*time.Millisecond).Milliseconds(), nil)
	}
	return cs
}

// newTransport is vegeta's RoundTripper for p: never through a proxy, TLS as o says.
func newTransport(p *plan, o Options) (*transport, error) {
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := &transport{
		base: &http.Transport{
			Proxy:               nil, // loopback targets: never through an environment proxy
			DialContext:         (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:     tc,
			TLSHandshakeTimeout: o.Timeout,
			MaxIdleConnsPerHost: int(min(o.MaxWorkers, 1<<16)),
			IdleConnTimeout:     90 * time.Second,
		},
		p: p, seqPlan: make([]int32, len(p.recs)),
	}
	if p.nextSame != nil {
		tr.order = newSequencer(p)
	}
	return tr, nil
}

// newSummary writes what the attack measured into a new summary.
func newSummary(name string, o Options, p *plan, c *collector, ran time.Duration, started time.Time) *results.Summary {
	sum := results.NewSummary(name, int64(o.Seed), started)
	t := c.total
	offered := c.offered(ran)
	decisions := t.Decided() + t.Errors()
	secs := min(p.window, ran).Seconds()
	// The run's length is the schedule's window it covered, as in process: the wait for the
	// last answers after it is in no rate.
	sum.DurationS = secs
	sum.Environment = results.Environment{
		Provider: "http", Mode: "black-box http", Cores: runtime.NumCPU(), Go: runtime.Version(), Ratelab: o.Version,
	}
	sum.Load = results.Load{
		Offered: offered, Completed: decisions, Late: c.lateAnswers, Sent: c.sent, Dropped: offered - c.sent,
		DroppedInflight: offered - c.sent,
		MaxInflight:     int(min(o.MaxWorkers, 1<<31-1)), Concurrency: int(min(o.MaxWorkers, 1<<31-1)),
	}
	if secs > 0 {
		sum.Load.OfferedRPS = float64(offered) / secs
		sum.Load.AchievedRPS = float64(max(t.Decided()-c.lateAnswers, 0)) / secs
	}
	sum.Load.JudgeLimit(c.lateDone)
	addLoadNotes(&sum.Load, o, c, decisions, offered)
	t.FillSummary(sum)
	// Over offered requests: one that got no decision (a refused connection, a timeout, a 503)
	// is slower than any latency, like one never sent.
	sum.LatencyMs, sum.LatencyServedMs = results.LatencyOf(t.Hist(), offered-t.Decided())
	// A false deny the envelopes later took back as reordering (see check.Bucket.Observe)
	// is in neither total: the fewer of the two is what both still call false.
	sum.Overspend = blackBoxOverspend(c, p, t, sum.Outcomes)
	sum.HotKeys = engine.HotKeys(c.keyCounts, p.keyName)
	sum.HeaderHonesty = c.hon.judge()
	sum.SLO = o.SLO.Evaluate(sum)
	return sum
}

// addLoadNotes says how the attack was driven and judged, and why it fell short, if it did.
func addLoadNotes(l *results.Load, o Options, c *collector, decisions, offered int64) {
	if float64(decisions) < 0.99*float64(offered) {
		l.AddNote(results.NoteLoad, fmt.Sprintf("%d of %d scheduled requests completed: the rest were not sent within %v of the schedule's end (vegeta's %d workers were busy) or the run was interrupted",
			decisions, offered, max(minScheduleGrace, o.Timeout), o.MaxWorkers))
	}
	l.AddNote(results.NoteDriver, fmt.Sprintf("HTTP via vegeta, %d..%d workers; latency from each request's intended start (schedule lag p99 %.3f ms, counted in latency); vegeta's own dequeue-based latency p99 %.3f ms (results.bin)",
		o.Workers, o.MaxWorkers, c.lag.QuantileMs(99), c.ownLat.QuantileMs(99)))
	l.AddNote(results.NoteDriver, o.requestNote())
	if o.windowed() {
		l.AddNote(results.NotePolicy, "declared policy: sliding window "+o.Window.String())
	}
	if o.TimeHeader != "" {
		l.AddNote(results.NoteJudge, "overspend judged at each request's trace time ("+o.TimeHeader+")")
	} else {
		l.AddNote(results.NoteJudge, "black-box overspend: a request counts as overspend (or a false deny) only when the envelope says so both at its send time and at its response's arrival, the two ends of the interval in which the target decided")
	}
	if c.hon.capped {
		l.AddNote(results.NoteHonesty, fmt.Sprintf("header honesty judged the first %d answers only", honestyMaxAnswers))
	}
	if c.unknownKs > 0 {
		l.AddNote(results.NoteKeys, fmt.Sprintf("%d responses could not be tied to their tenant (request failed before sending)", c.unknownKs))
	}
}

// blackBoxOverspend is the attack's overspend: a request counts only when the envelopes at both
// ends of its send-to-answer interval agree (see collector), so every figure is the lesser of
// the two envelopes' — the confirmed ones from the collector's own count of agreeing verdicts.
func blackBoxOverspend(c *collector, p *plan, t *engine.Account, out results.Outcomes) results.Overspend {
	a, b := c.checkers[0].Totals(), c.checkers[1].Totals()
	overspend, overTokens, agreedFalse := t.Verdicts()
	falseDenies := min(agreedFalse, a.FalseDenies, b.FalseDenies)
	allowed, denied := out.Allowed+out.FailedOpen, out.Denied+out.FailedClosed
	o := results.Overspend{
		Requests: overspend, Tokens: overTokens, Ratio: results.Ratio(overspend, allowed),
		FalseDenies: falseDenies, FalseDenyRatio: results.Ratio(falseDenies, denied),
		ByCause: c.causeNames(), UnknownOutcomes: t.Unknown(),
		PossibleRequests:    max(overspend, min(a.PossibleOverspendRequests, b.PossibleOverspendRequests)),
		PossibleTokens:      max(overTokens, min(a.PossibleOverspendTokens, b.PossibleOverspendTokens)),
		PossibleFalseDenies: max(falseDenies, min(a.PossibleFalseDenies, b.PossibleFalseDenies)),
		Bound:               results.Bound{Sources: map[string]float64{}},
	}
	o.PossibleRatio = results.Ratio(o.PossibleRequests, allowed)
	o.PossibleFalseDenyRatio = results.Ratio(o.PossibleFalseDenies, denied)
	lesser := a
	if b.WorstExcess < a.WorstExcess {
		lesser = b
	}
	o.BurstExcess = results.BurstExcess{Tokens: min(a.BurstExcess, b.BurstExcess), WorstTokens: lesser.WorstExcess}
	if lesser.WorstKey >= 0 {
		o.BurstExcess.WorstKey = p.keyName(lesser.WorstKey)
	}
	return o
}
