package report

import (
	"bytes"
	"strings"
	"testing"

	"ratelab/results"
)

func TestRegionsSections(t *testing.T) {
	t.Parallel()
	r := &results.Regions{Design: "rebalance", Home: "us", PeriodS: 0.5, RTTMs: 60, JitterMs: 5, BudgetMs: 100, CrossRegionCallsPerS: 4,
		List: []results.Region{
			{Name: "us", Offered: 1000, Allowed: 900, Denied: 100, P50Ms: 0.4, P99Ms: 3, Availability: 1, FalseDenies: 7},
			{Name: "e<u>", Offered: 500, Allowed: 400, Denied: 90, Errors: 10, P50Ms: 61, P99Ms: 90, Availability: 0.98, Overspend: 2, CrossRegionCalls: 9},
		}}
	md := regionsMarkdown(r)
	for _, want := range []string{"## Regions", "design rebalance, home us, rtt 60.0 ms (each direction 30.0 ± 5.0 ms)", "rebalance period 0.500 s",
		"| us | 1,000 | 900 | 100 | 0 | 0.400 | 3.000 | 100.0000% | 0 | 7 | 0 |", "| 61.000 | 90.000 | 98.0000% | 2 | 0 | 9 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md regions section lacks %q:\n%s", want, md)
		}
	}
	html := string(regionsHTML(r))
	if !strings.Contains(html, "<td>e&lt;u&gt;</td>") || strings.Contains(html, "e<u>") {
		t.Errorf("report.html regions section does not escape a region's name:\n%s", html)
	}
	if regionsMarkdown(nil) != "" || regionsHTML(nil) != "" {
		t.Error("a run without regions got a regions section")
	}
	s := &results.Summary{Scenario: "x", Regions: r}
	var b bytes.Buffer
	if err := WriteText(&b, s, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "regions") || !strings.Contains(b.String(), "offered 500: allowed 400, denied 90, errors 10; p50 61.000 ms") {
		t.Errorf("text summary lacks the regions lines:\n%s", b.String())
	}
}
