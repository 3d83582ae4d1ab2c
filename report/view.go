package report

import (
	"bytes"
	"cmp"
	"html/template"
	"maps"
	"slices"
	"strings"

	"ratelab/results"
)

// view is what the templates render: the summary plus the derived, already-decided bits
// (banners, sorted lists, chart files), so the templates only lay things out.
type view struct {
	S *results.Summary
	// Rows is the number of per-second rows read from timeseries.csv.
	Rows int
	// NoData is true when the run recorded no intervals: the report says so instead of failing.
	NoData bool
	// Limited is true when the generator, not the limiter, capped the rate; SlowLimiter when
	// the generator kept its schedule and the limiter (or its store) was slower than the
	// offered rate (load.limit).
	Limited, SlowLimiter bool
	// Warnings are problems with the input files (truncated timeseries, missing histogram...).
	Warnings []string
	// ErrorKinds are the error counts in a fixed order, with their total in ErrorTotal.
	ErrorKinds []count
	ErrorTotal int64
	// ErrorDetail lists the non-zero error kinds: "timeout 3, moved 12".
	ErrorDetail string
	// Causes is the overspend split by cause, largest first.
	Causes []count
	// Faults are the injected faults in schedule order, formatted, each with its reading.
	Faults []faultRow
	// Charts are the figures, in report order.
	Charts []chartView
	// Mermaid are report.md's charts, drawn from the per-second rows. MermaidNote, after them,
	// says which charts the run had nothing for, or replaces them when there are too few rows
	// to draw a line.
	Mermaid     []mermaidChart
	MermaidNote string
	// Scenario is the resolved scenario YAML, "" when absent.
	Scenario string

	// V1Note is the old definitions' note of a summary read from an older schema's file
	// (results.Summary.OldDefinitions), "" otherwise.
	V1Note string
	// Offered is the number of requests offered (sent + dropped when a v1 summary lacks it), and
	// DroppedShare the share of them the generator dropped.
	Offered      int64
	DroppedShare float64
	// Measurable says, when requests got no decision, above which percentile the latency over
	// offered requests is not measurable: "not measurable above p98.5: 1.50% of the offered
	// requests got no decision ..."; "" when every percentile is measurable or the summary is v1.
	Measurable string
	// BoundParts lists where the overspend bound comes from: "leases 1,000 + replication gap
	// 500.5"; "" when no bound applies. Within says whether the worst key kept it: "yes", "no"
	// or "none".
	BoundParts string
	Within     string
	// TokensBack is the summary's tokens back in one line; "" without an audit.
	TokensBack string
	// FailedFaults counts the faults that could not be carried out: the run did not test what
	// its scenario asked.
	FailedFaults int
}

// count is one named count.
type count struct {
	Name string
	N    int64
}

// chartView is one figure: its files and its SVG, ready to inline.
type chartView struct {
	Name    string
	Caption string
	PNG     string
	SVG     string
	// Inline is the SVG without its XML prolog. It is our own gonum/plot output (all text in it
	// escaped by the SVG canvas), so it is trusted as HTML.
	Inline template.HTML
}

// newView derives the view of a loaded run and its rendered charts.
func newView(r *run, charts []*chart) *view {
	s := r.summary
	e := s.Errors
	v := &view{
		S:           s,
		Rows:        len(r.rows),
		NoData:      len(r.rows) == 0,
		Limited:     s.Load.GeneratorLimited,
		SlowLimiter: s.Load.Limit == results.LimitLimiter,
		Warnings:    r.warnings,
		ErrorKinds: []count{
			{"timeout", e.Timeout}, {"moved", e.Moved}, {"ask", e.Ask}, {"tryagain", e.TryAgain},
			{"clusterdown", e.ClusterDown}, {"noscript", e.NoScript}, {"conn", e.Conn}, {"unreplicated", e.Unreplicated},
			{"other", e.Other},
		},
		ErrorTotal: e.Total(),
		Faults:     faultRows(s.Faults, r.rows),
		Scenario:   r.scenario,
		BoundParts: boundAndUnmeasured(s.Overspend.Bound),
		Within:     boundWithin(s.Overspend.Bound),
		TokensBack: tokensBackLine(s),
	}
	v.Offered, v.DroppedShare = offered(&s.Load)
	v.Mermaid, v.MermaidNote = mermaidCharts(r.rows, s.Faults)
	if n := s.OldDefinitions(); n != "" {
		v.V1Note = n
	} else {
		v.Measurable = measurableNote(&s.LatencyMs)
	}
	for _, f := range s.Faults {
		if f.Failed {
			v.FailedFaults++
		}
	}
	var detail []string
	for _, k := range v.ErrorKinds {
		if k.N != 0 {
			detail = append(detail, k.Name+" "+fmtInt(k.N))
		}
	}
	v.ErrorDetail = strings.Join(detail, ", ")
	for name, n := range s.Overspend.ByCause {
		v.Causes = append(v.Causes, count{name, n})
	}
	slices.SortFunc(v.Causes, func(a, b count) int {
		if c := cmp.Compare(b.N, a.N); c != 0 {
			return c // largest first
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, c := range charts {
		v.Charts = append(v.Charts, chartView{
			Name: c.name, Caption: c.caption, PNG: c.name + ".png", SVG: c.name + ".svg",
			Inline: template.HTML(inlineSVG(c.svg)),
		})
	}
	return v
}

// offered returns the requests offered and the share of them dropped. A v1 summary has no
// offered count: its sent + dropped is what v1 called offered.
func offered(l *results.Load) (int64, float64) {
	n := l.Offered
	if n == 0 {
		n = l.Sent + l.Dropped
	}
	return n, results.Ratio(l.Dropped, n)
}

// measurableNote says above which percentile the latency over offered requests is not
// measurable, and why; "" when every offered request got a decision.
func measurableNote(l *results.Latency) string {
	switch {
	case l.Undecided == 0:
		return ""
	case l.MeasurablePct <= 0:
		return "not measurable: no offered request got a decision"
	}
	return "not measurable above " + fmtPercentile(l.MeasurablePct) + ": " + fmtShare(1-l.MeasurablePct/100) +
		" of the offered requests got no decision (dropped, or an error)"
}

// boundSources lists a bound's sources by name, "leases 1,000 + replication gap 500.5"; "" when
// there are none.
func boundSources(sources map[string]float64) string {
	names := slices.Sorted(maps.Keys(sources))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ReplaceAll(n, "_", " ") + " " + fmtTokens(sources[n])
	}
	return strings.Join(out, " + ")
}

// boundAndUnmeasured is boundParts followed by the sources not measured, with why: "leases 10;
// replication gap not measured (kill-primary of ...: ...)"; "" when no bound applies.
func boundAndUnmeasured(b results.Bound) string {
	out := boundSources(b.Sources)
	for _, u := range b.Unmeasured {
		if out != "" {
			out += "; "
		}
		out += strings.ReplaceAll(u.Source, "_", " ") + " not measured (" + u.Reason + ")"
	}
	return out
}

// boundWithin is fmtWithin of the bound, "undetermined" when it could not be judged because a
// source was not measured.
func boundWithin(b results.Bound) string {
	if b.Within == nil && len(b.Unmeasured) > 0 {
		return "undetermined"
	}
	return fmtWithin(b.Within)
}

// inlineSVG strips what precedes the <svg> element (the XML declaration and a comment), which
// has no place inside an HTML document.
func inlineSVG(svg []byte) string {
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	return string(svg)
}
