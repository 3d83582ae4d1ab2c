package report

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"path/filepath"
	"strings"
	texttemplate "text/template"

	"ratelab/results"
)

// Report file names, written into the run directory.
const (
	// HTMLFile is the self-contained report: charts as inline SVG, CSS inline, no network.
	HTMLFile = "report.html"
	// MarkdownFile is the short report for CI job summaries: the summary tables and the
	// per-second charts as Mermaid blocks, with no link to the run directory's files.
	MarkdownFile = "report.md"
)

//go:embed templates/report.html.tmpl templates/report.md.tmpl
var templateFS embed.FS

// funcs are the number formats the templates use (format.go).
var funcs = map[string]any{
	"int":     fmtInt,
	"rate":    fmtRate,
	"ms":      fmtMs,
	"lat":     fmtLatency,
	"pct":     fmtPct,
	"share":   fmtShare,
	"float":   fmtFloat,
	"opt":     fmtOptFloat,
	"seconds": fmtSeconds,
	"time":    fmtTime,
	"md":      mdEscape,
	"mdcode":  mdCode,
	// A multi-region run's section (regions.go).
	"regionsMD":   regionsMarkdown,
	"regionsHTML": regionsHTML,
}

var (
	htmlTemplate = htmltemplate.Must(htmltemplate.New("report.html.tmpl").Funcs(funcs).
			ParseFS(templateFS, "templates/report.html.tmpl"))
	mdTemplate = texttemplate.Must(texttemplate.New("report.md.tmpl").Funcs(funcs).
			ParseFS(templateFS, "templates/report.md.tmpl"))
)

// Generate reads the run in dir (summary.json, timeseries.csv, and scenario.yaml and
// latency.hdr.json when present) and writes into dir the charts latency, throughput, redirects and
// overspend (and latency_hdr when the histogram exists), each as .png and .svg, then report.html and
// report.md. The per-second charts mark each fault of summary.json: a labelled vertical line at its
// injection and a shaded span to its recovery. It fails only when summary.json cannot be read or an output cannot be written; a
// truncated or missing timeseries, or an unreadable histogram, becomes a warning in the report.
// Every output is written atomically (temporary file and rename).
func Generate(dir string) error { return generate(dir, chartFormats) }

// chartFormats are the files written per chart.
var chartFormats = []string{"png", "svg"}

// generate is Generate writing the charts in the given formats (tests of degenerate inputs skip
// the slow PNG rasterizer: plot.Draw, where a bad axis panics, is the same for every format).
func generate(dir string, formats []string) error {
	r, err := loadRun(dir)
	if err != nil {
		return fmt.Errorf("report %s: %w", dir, err)
	}
	charts, err := buildCharts(r)
	if err != nil {
		return fmt.Errorf("report %s: %w", dir, err)
	}
	for _, c := range charts {
		if err := c.save(dir, formats); err != nil {
			return fmt.Errorf("report %s: %w", dir, err)
		}
	}
	v := newView(r, charts)
	var html, md bytes.Buffer
	if err := htmlTemplate.Execute(&html, v); err != nil {
		return fmt.Errorf("report %s: %s: %w", dir, HTMLFile, err)
	}
	if err := mdTemplate.Execute(&md, v); err != nil {
		return fmt.Errorf("report %s: %s: %w", dir, MarkdownFile, err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, HTMLFile), html.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, MarkdownFile), md.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// buildCharts builds the report's figures in display order.
func buildCharts(r *run) ([]*chart, error) {
	faults := r.summary.Faults
	// The per-second charts share the time axis and carry the fault markers.
	perSecond := []func() (*chart, error){
		func() (*chart, error) { return latencyChart(r.rows, faults) },
		func() (*chart, error) { return throughputChart(r.rows, faults) },
		func() (*chart, error) { return redirectsChart(r.rows, faults) },
		func() (*chart, error) { return overspendChart(r.rows, wholeRunBound(r.summary), faults) },
	}
	charts := make([]*chart, 0, len(perSecond)+1)
	for _, b := range perSecond {
		c, err := b()
		if err != nil {
			return nil, err
		}
		if len(faults) > 0 {
			c.caption += faultCaption
		}
		charts = append(charts, c)
	}
	nodes, err := nodesChart(r.summary)
	if err != nil {
		return nil, err
	}
	charts = append(charts, nodes)
	if r.hist != nil {
		c, err := hdrChart(r.hist)
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	return charts, nil
}

// wholeRunBound is the bound the cumulative overspend chart draws: a v1 summary's bound, which
// bounded the whole run's overspend. A v2 bound is on each key's burst excess, which the
// cumulative count (it grows with every idle episode of a lease) is not: the chart draws none
// and the summary tables set the burst excess against it.
func wholeRunBound(s *results.Summary) float64 {
	if s.V1() {
		return s.Overspend.Bound.Tokens
	}
	return 0
}

// mdEscape makes text safe inside a Markdown table cell or paragraph: it escapes the characters
// that start markup or end a cell, and folds line breaks into spaces.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "`", "'", "[", `\[`, "]", `\]`, "<", "&lt;", ">", "&gt;",
	"\r\n", " ", "\n", " ", "\r", " ",
)

func mdEscape(s string) string { return mdEscaper.Replace(s) }

// mdCode makes text safe inside a Markdown code span in a table cell: backslash escapes do not
// work in code spans, except GitHub's "\|" for a pipe in a table.
var mdCodeEscaper = strings.NewReplacer("`", "'", "|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")

func mdCode(s string) string { return mdCodeEscaper.Replace(s) }
