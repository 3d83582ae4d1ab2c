package report

import (
	"fmt"
	htmltemplate "html/template"
	"strings"

	"ratelab/results"
)

// The regions of a multi-region run (summary.regions): one table row per region in report.md and
// report.html, and one line per region in the text summary. Overspend and false denies are the
// global envelope's verdicts on the region's requests; availability is the share of its offered
// requests the limiter decided within the budget.

// regionsHead describes the design in one sentence.
func regionsHead(r *results.Regions) string {
	s := fmt.Sprintf("design %s, home %s, rtt %s ms (each direction %s ± %s ms), budget %s ms, %s cross-region calls/s",
		r.Design, r.Home, fmtFixed(r.RTTMs, 1), fmtFixed(r.RTTMs/2, 1), fmtFixed(r.JitterMs, 1), fmtFixed(r.BudgetMs, 1), fmtRate(r.CrossRegionCallsPerS))
	if r.PeriodS > 0 {
		s += fmt.Sprintf(", rebalance period %s s", fmtFixed(r.PeriodS, 3))
	}
	return s
}

// regionCells are one region's cells, in the tables' column order.
func regionCells(g results.Region) []string {
	return []string{g.Name, fmtInt(g.Offered), fmtInt(g.Allowed), fmtInt(g.Denied), fmtInt(g.Errors),
		fmtMs(float64(g.P50Ms)), fmtMs(float64(g.P99Ms)), fmtPct(g.Availability),
		fmtInt(g.Overspend), fmtInt(g.FalseDenies), fmtInt(g.CrossRegionCalls)}
}

var regionColumns = []string{"region", "offered", "allowed", "denied", "errors", "p50 ms", "p99 ms",
	"availability", "overspend", "false denies", "cross-region calls"}

// regionsMarkdown is report.md's regions section, or "" without regions.
func regionsMarkdown(r *results.Regions) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\n## Regions\n\n%s.\n\n", mdEscape(regionsHead(r)))
	b.WriteString("| " + strings.Join(regionColumns, " | ") + " |\n|")
	b.WriteString(strings.Repeat("---|", len(regionColumns)))
	for _, g := range r.List {
		cells := regionCells(g)
		cells[0] = mdEscape(cells[0])
		b.WriteString("\n| " + strings.Join(cells, " | ") + " |")
	}
	return b.String()
}

// regionsHTML is report.html's regions section, or "" without regions.
func regionsHTML(r *results.Regions) htmltemplate.HTML {
	if r == nil {
		return ""
	}
	esc := htmltemplate.HTMLEscapeString
	var b strings.Builder
	fmt.Fprintf(&b, "<h2>Regions</h2>\n<p class=\"meta\">%s. Overspend and false denies are the global envelope's verdicts (one exact bucket per tenant over every region) on each region's requests; availability is the share of its offered requests the limiter decided within the budget.</p>\n<table>\n<tr>",
		esc(regionsHead(r)))
	for _, c := range regionColumns {
		b.WriteString("<th>" + esc(c) + "</th>")
	}
	b.WriteString("</tr>\n")
	for _, g := range r.List {
		b.WriteString("<tr>")
		for i, c := range regionCells(g) {
			if i == 0 {
				b.WriteString("<td>" + esc(c) + "</td>")
			} else {
				b.WriteString("<td class=\"num\">" + esc(c) + "</td>")
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>")
	return htmltemplate.HTML(b.String())
}

// regions writes the text summary's region lines.
func (t *textRows) regions(r *results.Regions) {
	if r == nil {
		return
	}
	t.row("regions", "%s", regionsHead(r))
	for _, g := range r.List {
		t.row("  "+g.Name, "offered %d: allowed %d, denied %d, errors %d; p50 %s ms, p99 %s ms; available %s; overspend %d, false denies %d; %d cross-region calls",
			g.Offered, g.Allowed, g.Denied, g.Errors, fmtMs(float64(g.P50Ms)), fmtMs(float64(g.P99Ms)), fmtPct(g.Availability), g.Overspend, g.FalseDenies, g.CrossRegionCalls)
	}
}
