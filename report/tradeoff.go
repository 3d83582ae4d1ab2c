package report

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"ratelab/results"
)

// SchemaRegionsSweep and SchemaDurability are the schemas of sweep.json and durability.json.
const (
	SchemaRegionsSweep = "ratelab.regions-sweep/v1"
	SchemaDurability   = "ratelab.durability/v1"
)

// RegionsRow is one design (and period) of a regions sweep. The ratios are judged against the
// global envelope (one exact bucket per tenant over every region's allowed requests), summed
// over the regions.
type RegionsRow struct {
	Design string `json:"design"`
	// PeriodS is the rebalance period T in seconds; 0 for the designs without one.
	PeriodS float64 `json:"period_s,omitempty"`
	// Label names the row in the table and on the plot: the design, and T for rebalance.
	Label string `json:"label"`
	// Dir is the run directory, relative to the sweep's directory.
	Dir string `json:"dir"`
	// Error says why the run failed or did not finish; the figures are then what it left, or
	// zero when it left none.
	Error string `json:"error,omitempty"`
	// Allowed, Denied, Overspend and FalseDenies sum the regions' decisions and verdicts.
	Allowed     int64 `json:"allowed"`
	Denied      int64 `json:"denied"`
	Overspend   int64 `json:"overspend"`
	FalseDenies int64 `json:"false_denies"`
	// OverspendRatio is Overspend / Allowed; FalseDenyRatio is FalseDenies / Denied.
	OverspendRatio float64 `json:"overspend_ratio"`
	FalseDenyRatio float64 `json:"false_deny_ratio"`
	// ErrorsPerAllowed is (Overspend + FalseDenies) / Allowed: the plot's y, both ways the
	// design misjudges the limit per request it lets through.
	ErrorsPerAllowed float64 `json:"errors_per_allowed"`
	// WorstRegion and WorstP99Ms are the region with the highest p99 and that p99 (the plot's
	// x); MeanP99Ms is the mean of the regions' p99s. +Inf (JSON null) when not measurable.
	WorstRegion string     `json:"worst_region"`
	WorstP99Ms  results.Ms `json:"worst_p99_ms"`
	MeanP99Ms   results.Ms `json:"mean_p99_ms"`
	// Availability is the regions' availability weighted by their offered requests.
	Availability float64 `json:"availability"`
	// CrossRegionCallsPerS is every region's calls to another region per second.
	CrossRegionCallsPerS float64 `json:"cross_region_calls_per_s"`
	// Pareto is true when no other measured row has both a lower worst p99 and fewer errors
	// per allowed request: the rows a design review chooses between.
	Pareto bool `json:"pareto"`
}

// RegionsRows builds one row per run, in the runs' order, and marks the Pareto front. dir is
// the sweep's directory: rows name their run directory relative to it.
func RegionsRows(dir string, runs []results.StudyRun) []RegionsRow {
	rows := make([]RegionsRow, 0, len(runs))
	for _, r := range runs {
		row := RegionsRow{Design: r.Design, PeriodS: r.PeriodS, Label: regionsLabel(r.Design, r.PeriodS), Dir: relDir(dir, r.Dir), Error: r.Err}
		if r.Summary == nil {
			row.WorstP99Ms, row.MeanP99Ms = results.Unmeasurable, results.Unmeasurable
			row.Error = cmp.Or(row.Error, "no summary")
		} else {
			row.Error = cmp.Or(row.Error, faultFailure(r.Summary))
			fillRegions(&row, r.Summary)
		}
		rows = append(rows, row)
	}
	markPareto(rows)
	return rows
}

// regionsLabel is a row's label: the design, with T for a design that has a period.
func regionsLabel(design string, periodS float64) string {
	if periodS <= 0 {
		return design
	}
	return fmt.Sprintf("%s T=%s", design, time.Duration(periodS*float64(time.Second)))
}

// fillRegions fills a row's figures from a summary's regions, or from its whole-run figures
// when it has none (a one-region run: its only region is the whole run).
func fillRegions(row *RegionsRow, s *results.Summary) {
	rg := s.Regions
	if rg == nil || len(rg.List) == 0 {
		row.Allowed, row.Denied = s.Outcomes.Allowed, s.Outcomes.Denied
		row.Overspend, row.FalseDenies = s.Overspend.Requests, s.Overspend.FalseDenies
		row.WorstRegion, row.WorstP99Ms, row.MeanP99Ms = "(whole run)", s.LatencyMs.P99, s.LatencyMs.P99
		row.Availability = results.Ratio(s.Outcomes.Allowed+s.Outcomes.Denied, s.Load.Offered)
	} else {
		var offered int64
		var avail, sumP99 float64
		row.WorstP99Ms = results.Ms(math.Inf(-1))
		for _, g := range rg.List {
			row.Allowed += g.Allowed
			row.Denied += g.Denied
			row.Overspend += g.Overspend
			row.FalseDenies += g.FalseDenies
			offered += g.Offered
			avail += g.Availability * float64(g.Offered)
			sumP99 += float64(g.P99Ms)
			if g.P99Ms > row.WorstP99Ms {
				row.WorstRegion, row.WorstP99Ms = g.Name, g.P99Ms
			}
		}
		row.MeanP99Ms = results.Ms(sumP99 / float64(len(rg.List)))
		if offered > 0 {
			row.Availability = avail / float64(offered)
		}
		row.CrossRegionCallsPerS = rg.CrossRegionCallsPerS
	}
	row.OverspendRatio = results.Ratio(row.Overspend, row.Allowed)
	row.FalseDenyRatio = results.Ratio(row.FalseDenies, row.Denied)
	row.ErrorsPerAllowed = results.Ratio(row.Overspend+row.FalseDenies, row.Allowed)
}

// markPareto marks the measured rows (no error, a measurable worst p99) that no other such row
// beats on both axes (lower or equal on both, lower on one).
func markPareto(rows []RegionsRow) {
	ok := func(r RegionsRow) bool { return r.Error == "" && r.WorstP99Ms.Measurable() }
	for i := range rows {
		if !ok(rows[i]) {
			continue
		}
		rows[i].Pareto = !slices.ContainsFunc(rows, func(o RegionsRow) bool {
			return ok(o) && o.WorstP99Ms <= rows[i].WorstP99Ms && o.ErrorsPerAllowed <= rows[i].ErrorsPerAllowed &&
				(o.WorstP99Ms < rows[i].WorstP99Ms || o.ErrorsPerAllowed < rows[i].ErrorsPerAllowed)
		})
	}
}

// relDir is path relative to dir when it can be, path otherwise.
func relDir(dir, path string) string {
	if path == "" {
		return ""
	}
	if rel, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}
