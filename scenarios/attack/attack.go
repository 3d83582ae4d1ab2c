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
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"ratelab/limiter"
	"ratelab/results"
	"ratelab/scenarios/check"
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

// Run attacks o.URL with the schedule o describes and writes the run directory:
// timeseries.csv as it goes, then results.bin (vegeta's), latency.hdr.json and summary.json.
// Cancelling ctx stops the schedule; requests in flight finish (bounded by o.Timeout) and what
// was measured is written with interrupted: true.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	p, err := newPlan(o)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	dir := o.Out
	name := "attack"
	if o.Trace != nil {
		name = "replay"
	}
	if o.hooks != nil {
		name = o.hooks.name
	}
	if dir == "" {
		dir = filepath.Join("out", name+"-"+started.Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	tsFile, err := os.Create(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		return nil, err
	}
	defer tsFile.Close()
	tsw, err := results.NewTimeseriesWriter(tsFile)
	if err != nil {
		return nil, err
	}
	binFile, err := os.Create(filepath.Join(dir, ResultsFile))
	if err != nil {
		return nil, err
	}
	defer binFile.Close()
	bin := bufio.NewWriterSize(binFile, 256<<10)
	enc := vegeta.NewEncoder(bin)

	policy := o.Policy
	var checkers [2]*check.Bucket
	for i := range checkers {
		checkers[i] = check.NewBucket(p.tenants*len(p.hdr.Endpoints), func(int) limiter.BucketPolicy { return policy })
		// A denial stays contestable for as long as a request can be in flight.
		checkers[i].SetReorderWindow(max(o.Timeout, check.DefaultReorderWindowMs*time.Millisecond).Milliseconds(), nil)
	}

	tr := &transport{
		base: &http.Transport{
			Proxy:               nil, // loopback targets: never through an environment proxy
			DialContext:         (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: int(min(o.MaxWorkers, 1<<16)),
			IdleConnTimeout:     90 * time.Second,
		},
		p: p, seqPlan: make([]int32, len(p.recs)),
	}
	if p.nextSame != nil {
		tr.order = newSequencer(p)
	}
	atk := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Timeout: o.Timeout, Transport: tr}),
		vegeta.Workers(o.Workers), vegeta.MaxWorkers(o.MaxWorkers),
	)
	col := newCollector(p, o, checkers, tsw)
	o.Logf("attacking %s: %d requests over %v (%.0f/s), %d tenants x %d endpoints, workers %d..%d",
		o.URL, len(p.recs), p.duration().Round(time.Millisecond), p.rate, p.tenants, len(p.hdr.Endpoints), o.Workers, o.MaxWorkers)

	// base is read before vegeta's own start, so intended times are never later than vegeta's
	// schedule and the latency from them never less than vegeta's.
	col.base = time.Now()
	if o.hooks != nil {
		o.hooks.onStart(col.base)
	}
	out := atk.Attack(p.targeter(o), pacer{p}, p.duration()+max(minScheduleGrace, o.Timeout), name)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	done := ctx.Done()
	interrupted := false
	var encErr error
	unjudged := 0
	var lastProgress time.Time
	for running := true; running; {
		select {
		case r, ok := <-out:
			if !ok {
				running = false
				break
			}
			if err := enc.Encode(r); err != nil && encErr == nil {
				encErr = err
			}
			col.add(r, tr.seqPlan)
			// Judge in batches: pending is sorted at every feed.
			if unjudged++; unjudged >= 4096 {
				unjudged = 0
				col.feed()
				col.flushRows()
			}
		case now := <-tick.C:
			col.feed()
			col.flushRows()
			if o.OnProgress != nil && now.Sub(lastProgress) >= progressEvery {
				lastProgress = now
				// Not the tick's time: the tick may have waited behind answers the loop has
				// already counted, and a snapshot must not hear more than it says was planned.
				o.OnProgress(col.progress(time.Now()))
			}
		case <-done:
			interrupted = true
			done = nil
			atk.Stop()
		}
	}
	ran := time.Since(col.base)
	// Connections vegeta's transport dialed but never used look "new" to a server, which
	// then waits seconds for them at shutdown; none is needed any more.
	tr.base.(*http.Transport).CloseIdleConnections()
	col.finish(interrupted, ran)
	if err := bin.Flush(); err != nil && encErr == nil {
		encErr = err
	}

	sum := results.NewSummary(name, int64(o.Seed), started)
	sum.Interrupted = interrupted
	fill(sum, o, p, col, ran)
	if o.hooks != nil {
		o.hooks.finish(sum)
	}
	switch {
	case col.rowErr != nil:
		return &Result{dir, sum}, fmt.Errorf("writing %s: %w", results.TimeseriesFile, col.rowErr)
	case encErr != nil:
		return &Result{dir, sum}, fmt.Errorf("writing %s: %w", ResultsFile, encErr)
	}
	if err := results.WriteRunFiles(dir, sum, col.total.hist); err != nil {
		return &Result{dir, sum}, err
	}
	return &Result{Dir: dir, Summary: sum}, nil
}

// fill writes what the attack measured into sum.
func fill(sum *results.Summary, o Options, p *plan, c *collector, ran time.Duration) {
	t := c.total
	offered := c.offered(ran)
	decisions := t.allowed + t.denied + t.failOpen + t.failClosed + t.errors()
	secs := min(p.duration(), ran).Seconds()
	sum.DurationS = ran.Seconds()
	sum.Environment = results.Environment{
		Provider: "http", Mode: "black-box http", Cores: runtime.NumCPU(), Go: runtime.Version(), Ratelab: o.Version,
	}
	sum.Load = results.Load{
		Decisions: decisions, Sent: c.sent, Dropped: offered - c.sent,
		MaxInflight: int(min(o.MaxWorkers, 1<<31-1)), Concurrency: int(min(o.MaxWorkers, 1<<31-1)),
	}
	if secs > 0 {
		sum.Load.OfferedRPS = float64(offered) / secs
	}
	if ran > 0 {
		sum.Load.AchievedRPS = float64(decisions) / ran.Seconds()
	}
	var notes []string
	if float64(decisions) < 0.99*float64(offered) {
		sum.Load.GeneratorLimited = true
		notes = append(notes, fmt.Sprintf("%d of %d scheduled requests completed: the rest were not sent within %v of the schedule's end (vegeta's %d workers were busy) or the run was interrupted",
			decisions, offered, max(minScheduleGrace, o.Timeout), o.MaxWorkers))
	}
	notes = append(notes,
		fmt.Sprintf("HTTP via vegeta, %d..%d workers; latency from each request's intended start (schedule lag p99 %.3f ms, counted in latency); vegeta's own dequeue-based latency p99 %.3f ms (results.bin)",
			o.Workers, o.MaxWorkers, c.lag.QuantileMs(99), c.ownLat.QuantileMs(99)))
	if o.TimeHeader != "" {
		notes = append(notes, "overspend judged at each request's trace time ("+o.TimeHeader+")")
	} else {
		notes = append(notes, "black-box overspend: a request counts as overspend (or a false deny) only when the envelope says so both at its send time and at its response's arrival, the two ends of the interval in which the target decided")
	}
	if c.unknownKs > 0 {
		notes = append(notes, fmt.Sprintf("%d responses could not be tied to their tenant (request failed before sending)", c.unknownKs))
	}
	sum.Load.Note = strings.Join(notes, "; ")
	sum.Outcomes = results.Outcomes{Allowed: t.allowed, Denied: t.denied, FailedOpen: t.failOpen, FailedClosed: t.failClosed, Errors: t.errors()}
	sum.Errors = results.Errors{Timeout: t.errs[limiter.KindTimeout], Conn: t.errs[limiter.KindConn], Other: t.errs[limiter.KindOther]}
	if h := t.hist; h.Count() > 0 {
		sum.LatencyMs = results.Latency{P50: h.QuantileMs(50), P90: h.QuantileMs(90), P99: h.QuantileMs(99), P999: h.QuantileMs(99.9), Max: h.MaxMs()}
	}
	// A false deny the envelopes later took back as reordering (see OverspendChecker.Observe)
	// is in neither total: the fewer of the two is what both still call false.
	falseDenies := min(t.falseDenies, c.checkers[0].Totals().FalseDenies, c.checkers[1].Totals().FalseDenies)
	sum.Overspend = results.Overspend{
		Requests: t.overspend, Tokens: t.overTokens,
		Ratio:       results.Ratio(t.overspend, t.allowed+t.failOpen),
		FalseDenies: falseDenies, FalseDenyRatio: results.Ratio(falseDenies, t.denied+t.failClosed),
		ByCause: c.causeNames(), UnknownOutcomes: c.unknownOutcomes,
	}
	sum.HotKeys = hotKeys(p, c.keyCounts)
	sum.SLO = results.SLO{Pass: true}
}

// hotKeyCount is how many of the busiest keys the summary lists.
const hotKeyCount = 10

func hotKeys(p *plan, counts []int64) []results.HotKey {
	var all int64
	idx := make([]int, 0, len(counts))
	for k, n := range counts {
		all += n
		if n > 0 {
			idx = append(idx, k)
		}
	}
	sort.Slice(idx, func(i, j int) bool { return counts[idx[i]] > counts[idx[j]] })
	out := []results.HotKey{}
	nEp := len(p.hdr.Endpoints)
	for _, k := range idx[:min(len(idx), hotKeyCount)] {
		key := limiter.KeyFor(p.hdr.TenantName(uint32(k/nEp)), p.hdr.Endpoints[k%nEp])
		out = append(out, results.HotKey{Key: key, Share: results.Ratio(counts[k], all)})
	}
	return out
}
