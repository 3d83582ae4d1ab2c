package report

import (
	"math"
	"strconv"
	"strings"

	"ratelab/results"
)

// report.md is read where the run directory is not: pasted into a CI job summary (GitHub's
// $GITHUB_STEP_SUMMARY, GitLab's Markdown), where relative image links break and data: URIs are
// stripped, but Mermaid code blocks render. So report.md draws its per-second charts as Mermaid
// xychart-beta blocks from timeseries.csv, in this grammar (one statement per line):
//
//	xychart-beta
//	    title "..."
//	    x-axis "time since start (s)" <first x> --> <last x>
//	    y-axis "..." 0 --> <top>
//	    line [v1, v2, ...]
//
// The x axis is numeric: xychart spreads a line's n values evenly from the first to the last x,
// so value k sits at first + k*width, the start of its seconds. A categorical axis would draw
// every label side by side, unreadable beyond a few dozen points. Charts use lines only (a bar
// on a numeric axis is as wide as a tick interval) and at most two, drawn so that one is never
// below the other; GitHub draws no legend, so the note under each chart names them. Numbers are
// plain decimals (the grammar has no exponent), never NaN or Inf; quoted text keeps only
// characters that mean nothing to Mermaid or Markdown (mermaidText).

// maxMermaidPoints bounds the points of a line: a longer run is aggregated into points of a
// whole number of seconds each, so a chart stays a few KB whatever the run's length.
const maxMermaidPoints = 120

// mermaidChart is one chart of report.md: the code block and the Markdown note under it.
type mermaidChart struct {
	// Block is the chart's Mermaid source, without the fence.
	Block string
	// Note names the lines, says how points were aggregated and where the faults are; it is
	// Markdown, its user text (fault kinds) escaped.
	Note string
}

// buckets groups the rows into points of width seconds: point k holds the rows with
// t0 + k*width <= TS < t0 + (k+1)*width. A point whose seconds have no row (a row lost by the
// run) is drawn as 0.
type buckets struct {
	t0, width float64
	rows      [][]results.Interval
}

// bucketRows groups rows, at least one, into at most maxPoints points.
func bucketRows(rows []results.Interval, maxPoints int) buckets {
	lo, hi := rows[0].TS, rows[0].TS
	for _, r := range rows {
		lo, hi = math.Min(lo, r.TS), math.Max(hi, r.TS)
	}
	width := math.Max(1, math.Ceil((math.Floor(hi-lo)+1)/float64(maxPoints)))
	n := int(math.Floor((hi-lo)/width)) + 1 // <= maxPoints: width*maxPoints > hi-lo
	b := buckets{t0: lo, width: width, rows: make([][]results.Interval, n)}
	for _, r := range rows {
		k := min(int((r.TS-lo)/width), n-1)
		b.rows[k] = append(b.rows[k], r)
	}
	return b
}

// mean is, per point, the mean of get over the point's rows: a rate per second.
func (b buckets) mean(get func(*results.Interval) float64) []float64 {
	out := make([]float64, len(b.rows))
	for k, rows := range b.rows {
		sum := 0.0
		for i := range rows {
			sum += get(&rows[i])
		}
		if len(rows) > 0 {
			out[k] = sum / float64(len(rows))
		}
	}
	return out
}

// max is, per point, the largest get over the point's rows.
func (b buckets) max(get func(*results.Interval) float64) []float64 {
	out := make([]float64, len(b.rows))
	for k, rows := range b.rows {
		for i := range rows {
			out[k] = math.Max(out[k], get(&rows[i]))
		}
	}
	return out
}

// cumulative is, per point, the sum of get over every row up to the end of the point's seconds.
func (b buckets) cumulative(get func(*results.Interval) float64) []float64 {
	out := make([]float64, len(b.rows))
	sum := 0.0
	for k, rows := range b.rows {
		for i := range rows {
			sum += get(&rows[i])
		}
		out[k] = sum
	}
	return out
}

// per names the aggregation of a point for the chart titles: "per second" when each point is
// one second, else e.g. "mean per 30 s".
func (b buckets) per(how string) string {
	if b.width == 1 {
		return "per second"
	}
	return how + " per " + mermaidNum(b.width) + " s"
}

// mermaidCharts draws report.md's charts from the per-second rows: offered vs achieved
// requests/s, p99 latency, and the MOVED/ASK redirects and cumulative overspend when the run has
// any; the sentence it returns says which of those the run did not have. With fewer than two
// rows there is no line to draw: it returns no chart and a sentence saying what the one row
// holds ("" for no rows: the report already says there is no data).
func mermaidCharts(rows []results.Interval, faults []results.Fault) ([]mermaidChart, string) {
	switch len(rows) {
	case 0:
		return nil, ""
	case 1:
		r := &rows[0]
		return nil, "One second recorded, too few to chart: offered " + fmtInt(r.Offered) + ", achieved " +
			fmtInt(r.Achieved()) + " requests, p99 " + fmtMs(finite(r.P99Ms)) + " ms, MOVED " + fmtInt(r.Moved) +
			", ASK " + fmtInt(r.Ask) + ", overspend " + fmtInt(r.Overspend) + " requests."
	}
	b := bucketRows(rows, maxMermaidPoints)
	if len(b.rows) < 2 {
		return nil, "The " + fmtInt(int64(len(rows))) + " rows all fall within one second, too few to chart."
	}
	faultNote := mermaidFaults(faults, rows)
	charts := []mermaidChart{
		throughputMermaid(b),
		{Block: b.block("p99 latency of answered requests, ms ("+b.per("max")+")", "p99 (ms)", 0.01,
			b.max(func(r *results.Interval) float64 { return r.P99Ms })),
			Note: "Each second's p99 over its answered requests, 0 where a second answered none" +
				aggregated(b, "the largest of its seconds' p99") + ". The whole run's percentiles are in the table above."},
	}
	var absent []string
	if c, ok := redirectsMermaid(b, rows); ok {
		charts = append(charts, c)
	} else {
		absent = append(absent, "no MOVED or ASK redirect")
	}
	var overspend int64
	for _, r := range rows {
		overspend += r.Overspend
	}
	if overspend == 0 {
		absent = append(absent, "no overspend")
	} else {
		charts = append(charts, mermaidChart{
			Block: b.block("Cumulative overspend, requests (at the end of each point)", "overspend (requests)", 1,
				b.cumulative(func(r *results.Interval) float64 { return float64(r.Overspend) })),
			Note: "Confirmed overspend requests from the start of the load to the end of each point's seconds: " +
				fmtInt(overspend) + " in the per-second rows.",
		})
	}
	for i := range charts {
		charts[i].Note += faultNote
	}
	note := ""
	if len(absent) > 0 {
		note = "The per-second rows have " + strings.Join(absent, " and ") + ": nothing to chart there."
	}
	return charts, note
}

// throughputMermaid draws offered and achieved requests/s. Achieved never exceeds offered (a
// request is answered only once offered), so the upper line is the offered one.
func throughputMermaid(b buckets) mermaidChart {
	return mermaidChart{
		Block: b.block("Offered vs achieved requests/s ("+b.per("mean")+")", "requests/s", 1,
			b.mean(func(r *results.Interval) float64 { return float64(r.Offered) }),
			b.mean(func(r *results.Interval) float64 { return float64(r.Achieved()) })),
		Note: "Upper line: offered requests/s; lower line: achieved, the requests answered within the run " +
			"(allowed, denied, failed open or closed; errors and late answers left out), hidden under " +
			"the offered line where every offered request was answered" +
			aggregated(b, "the mean of its seconds") + ".",
	}
}

// redirectsMermaid draws the MOVED and ASK redirects per second, upper line MOVED + ASK and
// lower line ASK (left out when there was none); ok is false when the run had neither.
func redirectsMermaid(b buckets, rows []results.Interval) (mermaidChart, bool) {
	var moved, ask int64
	for _, r := range rows {
		moved, ask = moved+r.Moved, ask+r.Ask
	}
	if moved+ask == 0 {
		return mermaidChart{}, false
	}
	both := b.mean(func(r *results.Interval) float64 { return float64(r.Moved + r.Ask) })
	totals := " In the per-second rows: MOVED " + fmtInt(moved) + ", ASK " + fmtInt(ask) + "."
	if ask == 0 {
		return mermaidChart{
			Block: b.block("MOVED redirects/s ("+b.per("mean")+")", "redirects/s", 1, both),
			Note:  "MOVED redirects per second" + aggregated(b, "the mean of its seconds") + "; no ASK." + totals,
		}, true
	}
	return mermaidChart{
		Block: b.block("MOVED + ASK redirects/s ("+b.per("mean")+")", "redirects/s", 1, both,
			b.mean(func(r *results.Interval) float64 { return float64(r.Ask) })),
		Note: "Upper line: MOVED + ASK redirects per second; lower line: ASK alone" +
			aggregated(b, "the mean of its seconds") + "." + totals,
	}, true
}

// aggregated says how a point was computed when it spans several seconds: ", each point the
// mean of its seconds (30 s)"; "" when each point is one second.
func aggregated(b buckets, how string) string {
	if b.width == 1 {
		return ""
	}
	return "; each point is " + how + " (" + mermaidNum(b.width) + " s)"
}

// mermaidFaults lists the faults for the notes under the charts, with their x positions:
// " Faults (x in s): kill-primary at 8, recovered at 10.4; ...". Kinds are user text, escaped.
func mermaidFaults(faults []results.Fault, rows []results.Interval) string {
	if len(faults) == 0 {
		return ""
	}
	first, end := rows[0].TS, rows[len(rows)-1].TS+1
	parts := make([]string, len(faults))
	for i, f := range faults {
		p := mdEscape(f.Kind) + " at " + fmtSec(f.AtS)
		switch {
		case f.Failed:
			p += " (FAILED, not carried out)"
		case f.RecoveredS > f.AtS:
			p += ", recovered at " + fmtSec(f.RecoveredS)
		default:
			p += ", no recovery seen"
		}
		if !onAxis(f, first, end) {
			p += " (outside the chart)"
		}
		parts[i] = p
	}
	return " Faults (x in s): " + strings.Join(parts, "; ") + "."
}

// block renders a chart of lines, all of the buckets' length, on a y axis from 0 to a round
// value at or above every point and at least floor.
func (b buckets) block(title, yLabel string, floor float64, lines ...[]float64) string {
	peak := 0.0
	for _, l := range lines {
		for i, v := range l {
			l[i] = finite(v)
			peak = math.Max(peak, l[i])
		}
	}
	last := b.t0 + float64(len(b.rows)-1)*b.width
	var s strings.Builder
	s.WriteString("xychart-beta\n")
	s.WriteString("    title " + mermaidText(title) + "\n")
	s.WriteString("    x-axis " + mermaidText(timeLabel) + " " + mermaidNum(b.t0) + " --> " + mermaidNum(last) + "\n")
	s.WriteString("    y-axis " + mermaidText(yLabel) + " 0 --> " + mermaidNum(roundUp(math.Max(peak, floor))) + "\n")
	for _, l := range lines {
		s.WriteString("    line [")
		for i, v := range l {
			if i > 0 {
				s.WriteString(", ")
			}
			s.WriteString(mermaidNum(v))
		}
		s.WriteString("]\n")
	}
	return strings.TrimSuffix(s.String(), "\n")
}

// finite is v, or 0 for NaN, an infinity or a negative value (none that the timeseries reader
// accepts): a chart never carries a value Mermaid cannot parse.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 { // <= : no "-0" either
		return 0
	}
	return v
}

// roundUp rounds v > 0 up to its leading digit: 272 -> 300, 0.58 -> 0.6, 1 -> 1. The result
// is at least v once both are printed by mermaidNum (rounding to 0.001 keeps their order).
func roundUp(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	return math.Ceil(v/p) * p
}

// mermaidNum prints v in the grammar's number form, digits with an optional fraction (no
// exponent, no sign), to 0.001: 272.35 -> "272.35", 5 -> "5".
func mermaidNum(v float64) string {
	s := strconv.FormatFloat(finite(v), 'f', 3, 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// mermaidText quotes s for a title or axis label. The grammar's quoted text ends at the next
// double quote and has no escapes; Mermaid also reads entities (#...;), directives (%%) and
// HTML, and a backtick run could close the Markdown fence. So only letters, digits, spaces
// and ()/,.:+-_= are kept; anything else becomes a space.
func mermaidText(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" ()/,.:+-_=", c) >= 0
		if !ok {
			b[i] = ' '
		}
	}
	return `"` + string(b) + `"`
}
