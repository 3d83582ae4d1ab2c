package demo

import (
	"fmt"
	"time"

	"ratelab/report"
	"ratelab/results"
)

// regionsStep is step 5: one global bucket against a quota split between regions.
func regionsStep() stepPlan {
	return stepPlan{
		title: "5. Three regions: one global bucket or a split quota",
		narration: []string{
			"Three regions (us, eu, ap) 60 ms apart, the same trace through both designs. Global: one cluster in us holds every tenant's whole limit, exact, but every decision made in eu or ap crosses the round trip. Split: each region's own cluster holds a fixed share of every tenant's quota (50/30/20), so decisions stay local, but a tenant whose traffic comes mostly from its home region is denied there while its share elsewhere sits idle.",
			"Look at the worst region's p99 (global pays the round trip, split does not) beside the false denies (split's price, judged against one exact bucket per tenant over every region). `make regions-sweep` draws the whole trade-off, with the rebalance design at several periods between them.",
		},
		runs: []runPlan{
			{"global", "regions-global", "5-regions-global", shorten(3 * time.Second)},
			{"split", "regions-split", "5-regions-split", shorten(3 * time.Second)},
		},
		plots: []string{report.LatencyChart, report.ThroughputChart},
		facts: func(r []StepRun) []Fact {
			g, s := r[0].Summary, r[1].Summary
			return []Fact{
				{"worst region p99: global / split", fmt.Sprintf("%s / %s", worstRegionP99(g), worstRegionP99(s))},
				{"false denies per denied request: global / split", fmt.Sprintf("%s / %s", regionsRatio(g, falseDenies), regionsRatio(s, falseDenies))},
				{"overspend per allowed request: global / split", fmt.Sprintf("%s / %s", regionsRatio(g, overspent), regionsRatio(s, overspent))},
				{"cross-region calls/s: global / split", fmt.Sprintf("%s / %s", crossRegion(g), crossRegion(s))},
			}
		},
	}
}

// worstRegionP99 names the region with the highest p99 and that p99.
func worstRegionP99(s *results.Summary) string {
	if s.Regions == nil || len(s.Regions.List) == 0 {
		return "no regions recorded"
	}
	w := s.Regions.List[0]
	for _, g := range s.Regions.List[1:] {
		if g.P99Ms > w.P99Ms {
			w = g
		}
	}
	return fmt.Sprintf("%s ms (%s)", w.P99Ms, w.Name)
}

// falseDenies and overspent read one region's verdicts against the global envelope, as a
// count and the count it is a share of.
func falseDenies(g results.Region) (int64, int64) { return g.FalseDenies, g.Denied }
func overspent(g results.Region) (int64, int64)   { return g.Overspend, g.Allowed }

// regionsRatio sums a verdict over the regions and formats it as a share of its whole.
func regionsRatio(s *results.Summary, of func(results.Region) (int64, int64)) string {
	if s.Regions == nil {
		return "no regions recorded"
	}
	var n, whole int64
	for _, g := range s.Regions.List {
		a, b := of(g)
		n, whole = n+a, whole+b
	}
	return fmt.Sprintf("%.2f%% (%d)", 100*results.Ratio(n, whole), n)
}

// crossRegion is the run's calls from one region to another per second.
func crossRegion(s *results.Summary) string {
	if s.Regions == nil {
		return "no regions recorded"
	}
	return fmt.Sprintf("%.0f", s.Regions.CrossRegionCallsPerS)
}
