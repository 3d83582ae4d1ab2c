//go:build faults

package attack_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"ratelab/limiter"
	"ratelab/report/live"
	"ratelab/results"
	"ratelab/run/attack"
	"ratelab/scenarios"
)

// errorKinds are results.Errors' fields by limiter.ErrorKind, and whether the node hooks count
// the kind too (MOVED, ASK and NOSCRIPT are redirects and retries a decision may have survived:
// the summary and the rows count what the hooks saw, at least the decisions' own).
var errorKinds = []struct {
	kind   limiter.ErrorKind
	label  string
	field  func(*results.Errors) int64
	row    func(*results.Interval) int64
	hooked bool
}{
	{limiter.KindTimeout, "timeout", func(e *results.Errors) int64 { return e.Timeout }, func(r *results.Interval) int64 { return r.Timeout }, false},
	{limiter.KindMoved, "moved", func(e *results.Errors) int64 { return e.Moved }, func(r *results.Interval) int64 { return r.Moved }, true},
	{limiter.KindAsk, "ask", func(e *results.Errors) int64 { return e.Ask }, func(r *results.Interval) int64 { return r.Ask }, true},
	{limiter.KindTryAgain, "tryagain", func(e *results.Errors) int64 { return e.TryAgain }, func(r *results.Interval) int64 { return r.TryAgain }, false},
	{limiter.KindClusterDown, "clusterdown", func(e *results.Errors) int64 { return e.ClusterDown }, func(r *results.Interval) int64 { return r.ClusterDown }, false},
	{limiter.KindNoScript, "noscript", func(e *results.Errors) int64 { return e.NoScript }, func(r *results.Interval) int64 { return r.NoScript }, true},
	{limiter.KindConn, "conn", func(e *results.Errors) int64 { return e.Conn }, func(r *results.Interval) int64 { return r.Conn }, false},
	{limiter.KindUnreplicated, "unreplicated", func(e *results.Errors) int64 { return e.Unreplicated }, func(r *results.Interval) int64 { return r.Unreplicated }, false},
	{limiter.KindOther, "other", func(e *results.Errors) int64 { return e.Other }, func(r *results.Interval) int64 { return r.Other }, false},
}

// rowSums are the sums of a run's per-second rows.
type rowSums struct {
	offered, sent, dropped, late                        int64
	allowed, denied, failedOpen, failedClosed, errs     int64
	served, achieved                                    int64
	unknown, waitShort, overspend, falseDenies, central int64
	kinds                                               [limiter.NumErrorKinds]int64
}

func sumRows(rows []results.Interval) rowSums {
	var s rowSums
	for i := range rows {
		r := &rows[i]
		s.offered += r.Offered
		s.sent += r.Sent
		s.dropped += r.Dropped
		s.late += r.Late
		s.allowed += r.Allowed
		s.denied += r.Denied
		s.failedOpen += r.FailedOpen
		s.failedClosed += r.FailedClosed
		s.errs += r.Errors
		s.served += r.Served()
		s.achieved += r.Achieved()
		s.unknown += r.Unknown
		s.waitShort += r.WaitShort
		s.overspend += r.Overspend
		s.falseDenies += r.FalseDenies
		s.central += r.CentralOps
		for _, e := range errorKinds {
			s.kinds[e.kind] += e.row(r)
		}
	}
	return s
}

// checkAccounting checks the identities a run's figures keep whatever happened in it, for
// either driver:
//   - offered = decided + errors + dropped, and every sent request ended in one outcome (a run
//     that was not interrupted leaves none in flight);
//   - the outcomes, the store failures by kind and the unknown outcomes are what the test saw
//     of every request (run.oracle), and the decisions' errors are among the kinds;
//   - the per-second rows add up to the summary: the dispatcher's counts exactly, every decision
//     figure short of it by at most the decisions booked after their second's row was written
//     (late: the summary's decisions less the rows'); the rows' late answers are load.late;
//   - the live metrics published the rows as they are, and hold the summary's totals once
//     finished, each step at Finish within the late decisions;
//   - the latency files hold the decided requests: latency.hdr.json all of them, latency.hlog
//     each second's row's; the latency over offered requests counts the rest as undecided;
//   - every bound the summary prints holds (or the summary prints none);
//   - nothing of the run is missing from its directory.
func checkAccounting(t *testing.T, run *chaosRun) {
	t.Helper()
	sum, l, o := run.sum, run.sum.Load, run.sum.Outcomes
	decided := o.Allowed + o.Denied + o.FailedOpen + o.FailedClosed
	http := run.spec.Via == scenarios.ViaHTTP
	checkRunFiles(t, run.dir, http)
	if !http {
		checkTally(t, run.dir, sum)
	}

	// The load.
	if sum.Interrupted {
		t.Errorf("the run was interrupted")
	}
	if l.Offered != decided+o.Errors+l.Dropped || l.Offered != l.Sent+l.Dropped {
		t.Errorf("offered %d, decided %d + errors %d + dropped %d, sent %d: every offered request is decided, an error or dropped", l.Offered, decided, o.Errors, l.Dropped, l.Sent)
	}
	if l.Completed != decided+o.Errors || l.Completed != l.Sent {
		t.Errorf("decisions %d, outcomes add up to %d, sent %d", l.Completed, decided+o.Errors, l.Sent)
	}

	// Outcomes, kinds and unknowns against what the test saw.
	want := run.oracle
	if got := [5]int64{o.Allowed, o.Denied, o.FailedOpen, o.FailedClosed, o.Errors}; got != want.outcomes {
		t.Errorf("outcomes (allowed, denied, failed open, failed closed, errors) %v, the test saw %v", got, want.outcomes)
	}
	var extra, total int64
	for _, e := range errorKinds {
		n := e.field(&sum.Errors)
		total += n
		switch d := n - want.kinds[e.kind]; {
		case d < 0:
			t.Errorf("errors.%s %d, the test saw %d", e.label, n, want.kinds[e.kind])
		case !e.hooked:
			extra += d
		}
	}
	if extra != want.unkinded {
		t.Errorf("errors by kind %+v hold %d more than the test saw by kind, want the %d requests whose kind it cannot tell (oracle %+v)", sum.Errors, extra, want.unkinded, want.kinds)
	}
	if o.Errors > total {
		t.Errorf("%d errors, %d by kind: every error has its kind", o.Errors, total)
	}
	if u := sum.Overspend.UnknownOutcomes; u < want.unknownMin || u > want.unknownMax {
		t.Errorf("unknown outcomes %d, the test saw %d..%d", u, want.unknownMin, want.unknownMax)
	}

	// The rows.
	r := sumRows(run.rows)
	for i, row := range run.rows {
		if row.TS != float64(i) {
			t.Errorf("row %d has t_s %v", i, row.TS)
		}
	}
	late := l.Completed - (r.served + r.errs)
	within := func(what string, summary, rows int64) {
		if d := summary - rows; d < 0 || d > late {
			t.Errorf("%s: summary %d, rows %d: the rows may miss only the %d decisions booked after their row", what, summary, rows, late)
		}
	}
	if r.offered != l.Offered || r.sent+r.dropped > l.Offered {
		t.Errorf("rows: offered %d, sent %d, dropped %d; summary offered %d", r.offered, r.sent, r.dropped, l.Offered)
	}
	within("sent", l.Sent, r.sent)
	within("decisions", l.Completed, r.served+r.errs)
	within("allowed", o.Allowed, r.allowed)
	within("denied", o.Denied, r.denied)
	within("failed open", o.FailedOpen, r.failedOpen)
	within("failed closed", o.FailedClosed, r.failedClosed)
	within("errors", o.Errors, r.errs)
	within("wait short", o.WaitShort, r.waitShort)
	within("unknown outcomes", sum.Overspend.UnknownOutcomes, r.unknown)
	within("overspend", sum.Overspend.Requests, r.overspend)
	if sum.Overspend.FalseDenies > r.falseDenies+late {
		t.Errorf("false denies: summary %d, rows %d, %d late: withdrawals only lower the summary's", sum.Overspend.FalseDenies, r.falseDenies, late)
	}
	var unhookedSum, unhookedRows int64
	for _, e := range errorKinds {
		n := e.field(&sum.Errors)
		if e.hooked {
			if r.kinds[e.kind] > n {
				t.Errorf("errors.%s: rows %d, summary %d", e.label, r.kinds[e.kind], n)
			}
			continue
		}
		unhookedSum, unhookedRows = unhookedSum+n, unhookedRows+r.kinds[e.kind]
	}
	within("errors by kind (timeout, tryagain, clusterdown, conn, unreplicated, other)", unhookedSum, unhookedRows)
	within("late answers", l.Late, r.late)
	if r.central > sum.Central.Ops {
		t.Errorf("rows' central ops %d, summary %d", r.central, sum.Central.Ops)
	}
	if got := l.AchievedRPS * sum.DurationS; math.Abs(got-float64(r.achieved)) > float64(late)+0.5 {
		t.Errorf("achieved rate %.1f/s over %.1f s = %.0f answers, rows' achieved %d", l.AchievedRPS, sum.DurationS, got, r.achieved)
	}

	checkLive(t, run, r)
	checkLatencyFiles(t, run, decided)
	checkBounds(t, run)
	t.Logf("offered %d, outcomes %+v, errors %+v, unknown %d, overspend %d (possible %d), late-booked %d, faults %d",
		l.Offered, o, sum.Errors, sum.Overspend.UnknownOutcomes, sum.Overspend.Requests, sum.Overspend.PossibleRequests, late, len(sum.Faults))
}

// checkLive checks the live metrics: before Finish they are the rows' sums, after it the
// summary's totals (the step between is the rows' shortfall, bounded in checkAccounting).
func checkLive(t *testing.T, run *chaosRun, r rowSums) {
	t.Helper()
	sum, o := run.sum, run.sum.Outcomes
	type series struct {
		name      string
		rows, sum int64
	}
	all := []series{
		{live.MetricDecisions + "{outcome=allowed}", r.allowed, o.Allowed},
		{live.MetricDecisions + "{outcome=denied}", r.denied, o.Denied},
		{live.MetricDecisions + "{outcome=failed_open}", r.failedOpen, o.FailedOpen},
		{live.MetricDecisions + "{outcome=failed_closed}", r.failedClosed, o.FailedClosed},
		{live.MetricDecisions + "{outcome=error}", r.errs, o.Errors},
		{live.MetricOverspend, r.overspend, sum.Overspend.Requests},
		{live.MetricFalseDenies, r.falseDenies, sum.Overspend.FalseDenies},
		{live.MetricLate, r.late, sum.Load.Late},
		{live.MetricLatency, r.served, -1}, // the histogram: the rows' decided requests, then no step
	}
	for _, e := range errorKinds {
		all = append(all, series{live.MetricRedisErrors + "{kind=" + e.label + "}", r.kinds[e.kind], e.field(&sum.Errors)})
	}
	for _, s := range all {
		pre, fin := run.liveRows[s.name], run.liveFinal[s.name]
		if pre != float64(s.rows) {
			t.Errorf("live %s before the end %v, the rows' sum %d", s.name, pre, s.rows)
		}
		if s.sum < 0 {
			continue
		}
		if fin != float64(s.sum) {
			t.Errorf("live %s at the end %v, the summary's %d", s.name, fin, s.sum)
		}
	}
	l := sum.Load
	for _, s := range []series{
		{live.MetricOffered, r.offered, l.Offered}, {live.MetricSent, r.sent, l.Sent}, {live.MetricDropped, r.dropped, l.Dropped},
	} {
		// Before the end the live snapshot may be ahead of the rows, never of the summary.
		if pre, fin := run.liveRows[s.name], run.liveFinal[s.name]; pre < float64(s.rows) || pre > float64(s.sum) || fin != float64(s.sum) {
			t.Errorf("live %s: %v before the end, %v at it; rows %d, summary %d", s.name, pre, fin, s.rows, s.sum)
		}
	}
	if f := run.liveFinal; f[live.MetricFinished] != 1 || f[live.MetricInFlight] != 0 || f[live.MetricAchievedRate] != l.AchievedRPS {
		t.Errorf("live at the end: finished %v, in flight %v, achieved %v/s; want 1, 0, the summary's %v/s",
			f[live.MetricFinished], f[live.MetricInFlight], f[live.MetricAchievedRate], l.AchievedRPS)
	}
}

// checkLatencyFiles checks that the latency files hold the decided requests: the whole run's
// histogram every one, latency.hlog each second's row's, and the latency over offered requests
// counts the others as undecided.
func checkLatencyFiles(t *testing.T, run *chaosRun, decided int64) {
	t.Helper()
	f, err := os.Open(filepath.Join(run.dir, results.HistogramFile))
	if err != nil {
		t.Fatal(err)
	}
	h, err := results.ReadHistogram(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if h.Count() != decided {
		t.Errorf("%s holds %d latencies, %d requests were decided", results.HistogramFile, h.Count(), decided)
	}
	lf, err := os.Open(filepath.Join(run.dir, results.LatencyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	lg, err := results.ReadLatencyLog(lf)
	lf.Close()
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range run.rows {
		var n int64
		if s := lg.Seconds[i]; s != nil {
			n = s.Count()
		}
		if n != row.Served() {
			t.Errorf("%s second %d holds %d latencies, its row %d decided", results.LatencyLogFile, i, n, row.Served())
		}
	}
	lat, l := run.sum.LatencyMs, run.sum.Load
	if lat.Undecided != l.Offered-decided {
		t.Errorf("latency_ms.undecided %d, offered %d - decided %d", lat.Undecided, l.Offered, decided)
	}
	if want := 100 * float64(decided) / float64(max(l.Offered, 1)); math.Abs(lat.MeasurablePct-want) > 1e-6 {
		t.Errorf("latency_ms.measurable_pct %v, want %v", lat.MeasurablePct, want)
	}
}

// checkBounds checks every bound the summary prints: the burst excess within overspend.bound,
// tokens back not beyond its bound; and that each scheduled fault is recorded.
func checkBounds(t *testing.T, run *chaosRun) {
	t.Helper()
	o := run.sum.Overspend
	switch b := o.Bound; {
	case len(b.Sources) > 0 && b.Within == nil && len(b.Unmeasured) == 0:
		// Undetermined is a verdict only with the reasons a source could not be measured.
		t.Errorf("overspend.bound %+v has sources and no verdict, and names nothing it could not measure", b)
	case b.Within != nil && !*b.Within:
		// The excess debits the unknown outcomes that may have passed, so the message gives
		// their number beside the faults that may add to a bound.
		var kinds []string
		for _, f := range run.sum.Faults {
			kinds = append(kinds, f.Kind)
		}
		t.Errorf("overspend.bound %v tokens (%v) broken and no reason given: worst key %s exceeded its burst by %v tokens (%d unknown outcomes; faults %v)",
			b.Tokens, b.Sources, o.BurstExcess.WorstKey, o.BurstExcess.WorstTokens, o.UnknownOutcomes, kinds)
	}
	if tb := run.sum.TokensBack; tb != nil && tb.Verdict == results.VerdictBeyond {
		t.Errorf("tokens back %+v: beyond its bound", *tb)
	}
	if len(run.sum.Faults) != len(run.spec.Faults) {
		t.Errorf("%d faults recorded, %d scheduled", len(run.sum.Faults), len(run.spec.Faults))
	}
	for _, f := range run.sum.Faults {
		if f.Failed {
			t.Logf("fault not carried out (not an accounting failure): %+v", f)
		}
	}
}

// checkRunFiles checks that the run directory holds every file of the run: the engine's, keys.csv
// in process, vegeta's results over HTTP, and that keys.csv adds up to the summary.
func checkRunFiles(t *testing.T, dir string, http bool) {
	t.Helper()
	files := []string{results.SummaryFile, results.TimeseriesFile, results.LatencyLogFile, results.HistogramFile,
		results.PercentilesFile, results.ScenarioFile}
	if http {
		files = append(files, attack.ResultsFile)
	} else {
		files = append(files, results.TallyFile)
	}
	for _, name := range files {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("run directory lacks %s (or it is empty): %v", name, err)
		}
	}
}

// checkTally checks that keys.csv adds up to the summary's decisions and overspend.
func checkTally(t *testing.T, dir string, sum *results.Summary) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, results.TallyFile))
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	keys, err := results.ReadTally(f)
	if err != nil {
		t.Fatal(err)
	}
	var decisions, overspend int64
	for _, k := range keys {
		decisions += k.Completed
		overspend += k.Overspend
	}
	if decisions != sum.Load.Completed || overspend != sum.Overspend.Requests {
		t.Errorf("keys.csv: %d decisions, %d overspend; summary %d, %d", decisions, overspend, sum.Load.Completed, sum.Overspend.Requests)
	}
}
