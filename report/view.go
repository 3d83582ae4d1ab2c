package report

import (
	"bytes"
	"cmp"
	"html/template"
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
	// Limited is true when the generator, not the limiter, capped the rate.
	Limited bool
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
	// Scenario is the resolved scenario YAML, "" when absent.
	Scenario string
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
		S:        s,
		Rows:     len(r.rows),
		NoData:   len(r.rows) == 0,
		Limited:  s.Load.GeneratorLimited,
		Warnings: r.warnings,
		ErrorKinds: []count{
			{"timeout", e.Timeout}, {"moved", e.Moved}, {"ask", e.Ask}, {"tryagain", e.TryAgain},
			{"clusterdown", e.ClusterDown}, {"noscript", e.NoScript}, {"conn", e.Conn}, {"other", e.Other},
		},
		ErrorTotal: e.Total(),
		Faults:     faultRows(s.Faults, r.rows),
		Scenario:   r.scenario,
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

// inlineSVG strips what precedes the <svg> element (the XML declaration and a comment), which
// has no place inside an HTML document.
func inlineSVG(svg []byte) string {
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	return string(svg)
}
