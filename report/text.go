package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"ratelab/results"
)

// WriteText prints the short summary `ratelab run` ends with: offered vs achieved and what
// became of the offered requests, outcomes, latency over offered and over served requests,
// overspend (confirmed, and possible with the unknown outcomes), the burst excess against its
// bound, central and other ops, faults (FAILED ones with their error), SLO checks and where the
// report is. A summary read from a v1 file says so, and shows v1's figures by v1's names.
func WriteText(w io.Writer, s *results.Summary, reportPath string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	t := &textRows{tw: tw}
	status := "completed"
	if s.Interrupted {
		status = "INTERRUPTED (partial results)"
	}
	fmt.Fprintf(tw, "%s — %s, %.1f s, mode %s, provider %s\n", s.Scenario, status, s.DurationS, s.Environment.Mode, s.Environment.Provider)
	if n := s.OldDefinitions(); n != "" {
		t.row("NOTE", "%s", n)
	}
	t.load(s)
	t.row("outcomes", "allowed %d, denied %d, failed-open %d, failed-closed %d, errors %d",
		s.Outcomes.Allowed, s.Outcomes.Denied, s.Outcomes.FailedOpen, s.Outcomes.FailedClosed, s.Outcomes.Errors)
	e := s.Errors
	t.row("redis", "timeout %d, moved %d, ask %d, tryagain %d, clusterdown %d, noscript %d, conn %d, unreplicated %d, other %d",
		e.Timeout, e.Moved, e.Ask, e.TryAgain, e.ClusterDown, e.NoScript, e.Conn, e.Unreplicated, e.Other)
	t.latency(s)
	t.overspend(s)
	t.central(s)
	if len(s.HotKeys) > 0 {
		h := s.HotKeys[0]
		t.row("hottest key", "%s (%.1f%% of decisions) on %s", h.Key, 100*h.Share, orDash(h.Node))
	}
	if s.CPU != nil {
		t.row("cpu", "%s", s.CPU.Line())
	}
	t.regions(s.Regions)
	switch {
	case s.Load.GeneratorLimited:
		t.row("WARNING", "offered rate not reached (the generator fell behind): %s", s.Load.Note)
	case s.Load.Limit == results.LimitLimiter:
		t.row("WARNING", "offered rate not reached (the limiter was slower): %s", s.Load.Note)
	case s.Load.Note != "":
		t.row("note", "%s", s.Load.Note)
	}
	for _, f := range s.Faults {
		t.fault(f)
	}
	if tb := tokensBackLine(s); tb != "" {
		t.row("tokens back", "%s", tb)
	}
	t.slo(s.SLO)
	t.stages(s.Stages)
	if reportPath != "" {
		t.row("report", "%s", reportPath)
	}
	return tw.Flush()
}

// textRows writes the indented "key  value" rows of WriteText.
type textRows struct{ tw *tabwriter.Writer }

func (t *textRows) row(k, format string, args ...any) {
	fmt.Fprintf(t.tw, "  %s\t"+format+"\n", append([]any{k}, args...)...)
}

// load writes the rate and what became of the offered requests.
func (t *textRows) load(s *results.Summary) {
	ratio := 0.0
	if s.Load.OfferedRPS > 0 {
		ratio = 100 * s.Load.AchievedRPS / s.Load.OfferedRPS
	}
	t.row("rate", "%.0f achieved / %.0f offered requests/s (%.1f%%)", s.Load.AchievedRPS, s.Load.OfferedRPS, ratio)
	l := &s.Load
	n, share := offered(l)
	if s.V1() {
		t.row("decisions", "%d (dropped by generator: %d, %.2f%% of offered)", l.Completed, l.Dropped, 100*share)
		return
	}
	t.row("requests", "%d offered, %d decisions (%d late); dropped by generator %d (%.2f%% of offered: %d at max in flight, %d behind schedule)",
		n, l.Completed, l.Late, l.Dropped, 100*share, l.DroppedInflight, l.DroppedBehind)
	if l.LostSeconds > 0 {
		t.row("WARNING", "%d per-second rows could not be written in order (their counts are in the totals)", l.LostSeconds)
	}
}

// latency writes the latency over offered requests and, beside it, over served ones.
func (t *textRows) latency(s *results.Summary) {
	v := s.LatencyServedMs
	if s.V1() {
		t.row("latency ms", "p50 %.3f, p90 %.3f, p99 %.3f, p99.9 %.3f, max %.3f (answered requests only, from intended start)",
			v.P50, v.P90, v.P99, v.P999, v.Max)
		return
	}
	l := s.LatencyMs
	why := ""
	if m := measurableNote(&l); m != "" {
		why = "; " + m
	}
	t.row("latency ms", "p50 %s, p90 %s, p99 %s, p99.9 %s, max %s (over offered requests, from intended start%s)",
		l.P50, l.P90, l.P99, l.P999, l.Max, why)
	clamped := ""
	if s.LatencyClamped > 0 {
		clamped = fmt.Sprintf("; %d clamped at %.0f min", s.LatencyClamped, results.MaxLatency.Minutes())
	}
	if l.MeasurablePct <= 0 {
		// ServedLatency is all 0 then: zeros would read as instant answers.
		t.row("served ms", "none: no request was decided")
		return
	}
	t.row("served ms", "p50 %.3f, p90 %.3f, p99 %.3f, p99.9 %.3f, max %.3f (decided requests only: allowed or denied, a fail policy's answer included%s)",
		v.P50, v.P90, v.P99, v.P999, v.Max, clamped)
}

// overspend writes the overspend and false denies, confirmed and possible, and the burst excess
// against its bound.
func (t *textRows) overspend(s *results.Summary) {
	o := &s.Overspend
	if s.V1() {
		t.row("overspend", "%d requests (ratio %.2g), %d tokens; false denies %d (ratio %.2g)", o.Requests, o.Ratio, o.Tokens, o.FalseDenies, o.FalseDenyRatio)
		if o.Bound.Tokens > 0 {
			t.row("bound", "v1 overspend bound %.1f tokens (whole run)", o.Bound.Tokens)
		}
		return
	}
	t.row("overspend", "confirmed %d (possible %d) requests, ratio %.2g (possible %.2g), %d (possible %d) tokens; %d unknown outcomes",
		o.Requests, o.PossibleRequests, o.Ratio, o.PossibleRatio, o.Tokens, o.PossibleTokens, o.UnknownOutcomes)
	t.row("false denies", "confirmed %d (possible %d), ratio %.2g (possible %.2g)",
		o.FalseDenies, o.PossibleFalseDenies, o.FalseDenyRatio, o.PossibleFalseDenyRatio)
	verdict := "; no bound applies"
	if sources := boundAndUnmeasured(o.Bound); sources != "" {
		verdict = fmt.Sprintf(" vs bound %s tokens (%s): within %s", fmtTokens(o.Bound.Tokens), sources, boundWithin(o.Bound))
	}
	worst := ""
	if o.BurstExcess.WorstKey != "" {
		worst = " on " + o.BurstExcess.WorstKey
	}
	t.row("burst excess", "worst key %s tokens%s (all keys %s)%s",
		fmtTokens(o.BurstExcess.WorstTokens), worst, fmtTokens(o.BurstExcess.Tokens), verdict)
}

// central writes the commands the Redis nodes received.
func (t *textRows) central(s *results.Summary) {
	switch {
	case s.V1() && s.Central.Ops > 0:
		t.row("central", "%d Redis ops, %.0f ops/s (v1: every command)", s.Central.Ops, s.Central.OpsPerS)
	case !s.V1() && s.Central.Ops+s.Central.OtherOps > 0:
		t.row("central", "%d decision ops, %.0f ops/s; %d other ops", s.Central.Ops, s.Central.OpsPerS, s.Central.OtherOps)
	}
}

// fault writes one fault: FAILED with its error, or what the generator saw of it.
func (t *textRows) fault(f results.Fault) {
	if f.Failed {
		t.row("fault", "FAILED %s at %.1f s on %s: %s (not carried out: the run did not test it)", f.Kind, f.AtS, f.Target, orDash(f.Error))
		return
	}
	if !f.Seen() {
		// Nothing the generator saw went wrong: there was nothing to recover from.
		t.row("fault", "%s at %.1f s on %s: no errors seen", f.Kind, f.AtS, f.Target)
		return
	}
	rec := "not recovered"
	if after, ok := f.RecoveredAfterS(); ok {
		rec = fmt.Sprintf("recovered %.1f s after", after)
		if f.ForS > 0 {
			rec = fmt.Sprintf("recovered %.1f s after it ended (lasted %.0f s)", after, f.ForS)
		}
	}
	t.row("fault", "%s at %.1f s on %s: detected at %.0f s, %s", f.Kind, f.AtS, f.Target, f.DetectedS, rec)
}

// slo writes the SLO verdict and its checks; a value that is not measurable says so.
func (t *textRows) slo(slo results.SLO) {
	if len(slo.Checks) == 0 {
		return
	}
	verdict := "PASS"
	if !slo.Pass {
		verdict = "FAIL"
	}
	var parts []string
	for _, c := range slo.Checks {
		mark := "ok"
		if !c.Pass {
			mark = "FAILED"
		}
		value := fmt.Sprintf("%.4g", c.Value)
		if math.IsInf(c.Value, 1) {
			value = notMeasurable
		}
		parts = append(parts, fmt.Sprintf("%s %g: %s %s", c.Name, c.Limit, value, mark))
	}
	t.row("SLO", "%s (%s)", verdict, strings.Join(parts, "; "))
}

// stages writes, for a run with load stages, the offered rate at which each per-second SLO
// check first failed, and the checks that passed every second.
func (t *textRows) stages(st *results.Stages) {
	if st == nil {
		return
	}
	failed := map[string]bool{}
	var parts []string
	for _, f := range st.FirstFailure {
		failed[f.Check] = true
		value := notMeasurable
		if f.Value != nil {
			value = fmt.Sprintf("%.4g", *f.Value)
		}
		parts = append(parts, fmt.Sprintf("%s first failed at %.0f s, %.0f offered/s (%s, limit %g; %d s failed)",
			f.Check, f.AtS, f.OfferedRPS, value, f.Limit, f.FailedSeconds))
	}
	for _, c := range st.Checked {
		if !failed[c] {
			parts = append(parts, c+" passed every second")
		}
	}
	parts = append(parts, fmt.Sprintf("peak %.0f offered/s", st.PeakOfferedRPS))
	t.row("stages", "%s", strings.Join(parts, "; "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
