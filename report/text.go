package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"ratelab/results"
)

// WriteText prints the short summary `ratelab run` ends with: offered vs achieved, outcomes,
// latency, overspend and where the report is.
func WriteText(w io.Writer, s *results.Summary, reportPath string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, args...)...)
	}
	status := "completed"
	if s.Interrupted {
		status = "INTERRUPTED (partial results)"
	}
	fmt.Fprintf(tw, "%s — %s, %.1f s, mode %s, provider %s\n", s.Scenario, status, s.DurationS, s.Environment.Mode, s.Environment.Provider)
	ratio := 0.0
	if s.Load.OfferedRPS > 0 {
		ratio = 100 * s.Load.AchievedRPS / s.Load.OfferedRPS
	}
	row("rate", "%.0f achieved / %.0f offered requests/s (%.1f%%)", s.Load.AchievedRPS, s.Load.OfferedRPS, ratio)
	row("decisions", "%d (dropped by generator: %d)", s.Load.Decisions, s.Load.Dropped)
	row("outcomes", "allowed %d, denied %d, failed-open %d, failed-closed %d, errors %d",
		s.Outcomes.Allowed, s.Outcomes.Denied, s.Outcomes.FailedOpen, s.Outcomes.FailedClosed, s.Outcomes.Errors)
	e := s.Errors
	row("redis", "timeout %d, moved %d, ask %d, tryagain %d, clusterdown %d, noscript %d, conn %d, other %d",
		e.Timeout, e.Moved, e.Ask, e.TryAgain, e.ClusterDown, e.NoScript, e.Conn, e.Other)
	l := s.LatencyMs
	row("latency ms", "p50 %.3f, p90 %.3f, p99 %.3f, p99.9 %.3f, max %.3f (from intended start)", l.P50, l.P90, l.P99, l.P999, l.Max)
	o := s.Overspend
	row("overspend", "%d requests (ratio %.2g), %d tokens; false denies %d (ratio %.2g)", o.Requests, o.Ratio, o.Tokens, o.FalseDenies, o.FalseDenyRatio)
	if s.Central.Ops > 0 {
		row("central", "%d Redis ops, %.0f ops/s", s.Central.Ops, s.Central.OpsPerS)
	}
	if len(s.HotKeys) > 0 {
		h := s.HotKeys[0]
		row("hottest key", "%s (%.1f%% of decisions) on %s", h.Key, 100*h.Share, orDash(h.Node))
	}
	if s.Load.GeneratorLimited {
		row("WARNING", "offered rate not reached: %s", s.Load.Note)
	} else if s.Load.Note != "" {
		row("note", "%s", s.Load.Note)
	}
	for _, f := range s.Faults {
		rec := "not recovered"
		if f.RecoveredS > 0 {
			rec = fmt.Sprintf("recovered %.1f s after", f.RecoveredS-f.AtS)
			if f.ForS > 0 {
				rec = fmt.Sprintf("recovered %.1f s after it ended (lasted %.0f s)", max(f.RecoveredS-f.AtS-f.ForS, 0), f.ForS)
			}
		}
		if f.DetectedS <= 0 && f.RecoveredS <= 0 {
			// Nothing the generator saw went wrong: there was nothing to recover from.
			row("fault", "%s at %.1f s on %s: no errors seen", f.Kind, f.AtS, f.Target)
			continue
		}
		row("fault", "%s at %.1f s on %s: detected at %.0f s, %s", f.Kind, f.AtS, f.Target, f.DetectedS, rec)
	}
	if s.Overspend.Bound.Tokens > 0 {
		row("bound", "overspend bound %.1f tokens (replication gap at faults, unused leases)", s.Overspend.Bound.Tokens)
	}
	if len(s.SLO.Checks) > 0 {
		verdict := "PASS"
		if !s.SLO.Pass {
			verdict = "FAIL"
		}
		var parts []string
		for _, c := range s.SLO.Checks {
			mark := "ok"
			if !c.Pass {
				mark = "FAILED"
			}
			parts = append(parts, fmt.Sprintf("%s %g: %.4g %s", c.Name, c.Limit, c.Value, mark))
		}
		row("SLO", "%s (%s)", verdict, strings.Join(parts, "; "))
	}
	if reportPath != "" {
		row("report", "%s", reportPath)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
