package report

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"ratelab/results"
)

// Chart file stems, written as <stem>.png and <stem>.svg.
const (
	LatencyChart    = "latency"
	ThroughputChart = "throughput"
	OverspendChart  = "overspend"
	RedirectsChart  = "redirects"
	HDRChart        = "latency_hdr"
	NodesChart      = "nodes"
)

const timeLabel = "time since start (s)"

// faultCaption is appended to the caption of every per-second chart of a run with faults.
const faultCaption = " Dash-dot vertical lines mark injected faults (labelled with their kind); " +
	"the shading runs from injection to recovery, when the run saw one."

// latencyChart plots p50, p99 and p99.9 per second on a log y axis and, in a panel below on a
// linear axis, the share of each second's offered requests the generator dropped: a second's
// percentiles are over its answered requests, so a small p99 beside a large dropped share reads
// as the overload it is. Seconds with no samples have latency 0; a log axis cannot show 0, so
// those points are dropped (a gap is honest: the second completed nothing).
func latencyChart(rows []results.Interval, faults []results.Fault) (*chart, error) {
	title := "Latency per second (ms, log scale)"
	lo, hi := math.Inf(1), math.Inf(-1)
	series := []struct {
		name string
		get  func(results.Interval) float64
	}{
		{seriesP50, func(r results.Interval) float64 { return r.P50Ms }},
		{seriesP99, func(r results.Interval) float64 { return r.P99Ms }},
		{seriesP999, func(r results.Interval) float64 { return r.P999Ms }},
	}
	xys := make([]plotter.XYs, len(series))
	for i, s := range series {
		for _, r := range rows {
			if v := s.get(r); v > 0 {
				xys[i] = append(xys[i], plotter.XY{X: r.TS, Y: v})
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi {
		title += noData
	}
	p := newPlot(title, timeLabel, "latency (ms)")
	p.Add(faultBands(faults))
	for i, s := range series {
		if err := addSeries(p, s.name, xys[i]); err != nil {
			return nil, err
		}
	}
	setTimeAxis(p, rows)
	setLogY(p, lo, hi)
	lower, err := droppedPanel(p, rows, faults)
	if err != nil {
		return nil, err
	}
	p.X.Label.Text = "" // the panel below names the shared x axis
	p.X.Tick.Marker = unlabelled{p.X.Tick.Marker}
	addFaultMarkers(p, faults)
	return &chart{name: LatencyChart, caption: "Latency percentiles per second of the answered requests, " +
		"measured from each request's intended start (ms, log scale); below, the share of the second's " +
		"offered requests the generator dropped, which those percentiles leave out (the summary's latency " +
		"over offered requests counts them as slower than any latency).", plot: p, lower: lower}, nil
}

// droppedPanel is the latency chart's lower panel: the dropped share of each second's offered
// requests in percent, on a linear axis from 0 (a share is often 0, which a log axis cannot
// show). Its legend entry goes in the latency plot's legend, as the panels share one column.
func droppedPanel(latency *plot.Plot, rows []results.Interval, faults []results.Fault) (*plot.Plot, error) {
	p := newPlot("", timeLabel, "dropped %")
	p.Add(faultBands(faults))
	xys := make(plotter.XYs, len(rows))
	peak := 0.0
	for i := range rows {
		share := 100 * rows[i].DroppedShare()
		xys[i] = plotter.XY{X: rows[i].TS, Y: share}
		peak = max(peak, share)
	}
	if err := addSeriesTo(p, latency, seriesDroppedShare, xys); err != nil {
		return nil, err
	}
	setTimeAxis(p, rows)
	p.Y.Min, p.Y.Max = 0, min(100, max(1, peak*1.15))
	return p, nil
}

// throughputChart plots what was offered, sent, allowed, denied and dropped in each second.
// Rows are one second long, so a count per row is a rate in requests per second.
func throughputChart(rows []results.Interval, faults []results.Fault) (*chart, error) {
	title := "Throughput (requests/s)"
	if len(rows) == 0 {
		title += noData
	}
	p := newPlot(title, timeLabel, "requests/s")
	p.Add(faultBands(faults))
	series := []struct {
		name string
		get  func(results.Interval) int64
	}{
		{seriesOffered, func(r results.Interval) int64 { return r.Offered }},
		{seriesSent, func(r results.Interval) int64 { return r.Sent }},
		{seriesAllowed, func(r results.Interval) int64 { return r.Allowed }},
		{seriesDenied, func(r results.Interval) int64 { return r.Denied }},
		{seriesDropped, func(r results.Interval) int64 { return r.Dropped }},
		// Outcomes of a failing store: drawn only when the run had any, so that a fail-open
		// run's fall in "allowed" shows where those decisions went.
		{seriesFailedOpen, func(r results.Interval) int64 { return r.FailedOpen }},
		{seriesFailedClosed, func(r results.Interval) int64 { return r.FailedClosed }},
		{seriesErrors, func(r results.Interval) int64 { return r.Errors }},
	}
	for i, s := range series {
		if i >= 5 && !slices.ContainsFunc(rows, func(r results.Interval) bool { return s.get(r) > 0 }) {
			continue
		}
		xys := make(plotter.XYs, len(rows))
		for i, r := range rows {
			xys[i] = plotter.XY{X: r.TS, Y: float64(s.get(r))}
		}
		if err := addSeries(p, s.name, xys); err != nil {
			return nil, err
		}
	}
	setTimeAxis(p, rows)
	p.Y.Min = 0
	if len(rows) == 0 {
		p.Y.Max = 1
	}
	addFaultMarkers(p, faults)
	return &chart{name: ThroughputChart, caption: "Requests per second: offered by the pacer, sent by " +
		"the generator, and the decisions' outcomes (failed open/closed and errors when there were any); " +
		"dropped = not sent (max_inflight requests in flight, or the dispatcher behind its schedule).",
		plot: p}, nil
}

// redirectsChart stacks, per second, the redirects the cluster answered (MOVED, ASK) and the
// store errors by kind, so the top of the stack is the second's total and each kind keeps its own
// band. Kinds that stayed at 0 for the whole run are left out, so the legend lists only what
// happened; the legend reads top of the stack first, like the picture.
func redirectsChart(rows []results.Interval, faults []results.Fault) (*chart, error) {
	kinds := []stackLayer{
		{seriesMoved, func(r results.Interval) int64 { return r.Moved }},
		{seriesAsk, func(r results.Interval) int64 { return r.Ask }},
		{seriesTryAgain, func(r results.Interval) int64 { return r.TryAgain }},
		{seriesClusterDown, func(r results.Interval) int64 { return r.ClusterDown }},
		{seriesNoScript, func(r results.Interval) int64 { return r.NoScript }},
		{seriesTimeout, func(r results.Interval) int64 { return r.Timeout }},
		{seriesConn, func(r results.Interval) int64 { return r.Conn }},
		{seriesOther, func(r results.Interval) int64 { return r.Other }},
	}
	kinds = slices.DeleteFunc(kinds, func(l stackLayer) bool {
		return !slices.ContainsFunc(rows, func(r results.Interval) bool { return l.get(r) != 0 })
	})
	rings, peak := stackRings(rows, kinds)
	p := newPlot("Redirects and errors (stacked, per second)", timeLabel, "count/s")
	p.Add(faultBands(faults))
	bands := make([]*plotter.Polygon, len(kinds))
	for k, l := range kinds {
		poly, err := plotter.NewPolygon(rings[k])
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", l.name, err)
		}
		poly.Color = palette[l.name]
		poly.LineStyle.Width = 0 // fill only: an outline would paint over the band below
		p.Add(poly)
		bands[k] = poly
	}
	for k := len(kinds) - 1; k >= 0; k-- {
		p.Legend.Add(kinds[k].name, bands[k])
	}
	switch {
	case len(rows) == 0:
		p.Title.Text += noData
	case peak == 0:
		p.Title.Text += " (none)"
	}
	setTimeAxis(p, rows)
	p.Y.Min, p.Y.Max = 0, math.Max(1, float64(peak)*1.05)
	addFaultMarkers(p, faults)
	return &chart{name: RedirectsChart, caption: "MOVED and ASK redirects (counted on the per-node " +
		"clients, also when the decision then succeeded) and store errors by kind, stacked per second: " +
		"the top of the stack is the second's total. Kinds that stayed at 0 are left out.", plot: p}, nil
}

// overspendChart plots the cumulative number of overspend requests: the count at x is every
// overspend request up to the end of second x. A horizontal line shows a bound on the whole
// run's overspend (in tokens, which equals requests when every request costs 1 token) when the
// run has one: a v1 summary's (see wholeRunBound).
func overspendChart(rows []results.Interval, boundTokens float64, faults []results.Fault) (*chart, error) {
	title := "Cumulative overspend (requests beyond the envelope)"
	if len(rows) == 0 {
		title += noData
	}
	p := newPlot(title, timeLabel, "overspend (requests)")
	p.Add(faultBands(faults))
	var xys plotter.XYs
	if len(rows) > 0 {
		xys = append(xys, plotter.XY{X: rows[0].TS, Y: 0})
	}
	var sum int64
	for _, r := range rows {
		sum += r.Overspend
		xys = append(xys, plotter.XY{X: r.TS + 1, Y: float64(sum)})
	}
	if err := addSeries(p, seriesOverspend, xys); err != nil {
		return nil, err
	}
	setTimeAxis(p, rows)
	p.Y.Min, p.Y.Max = 0, math.Max(1, float64(sum)*1.1)
	if boundTokens > 0 {
		bound := plotter.XYs{{X: p.X.Min, Y: boundTokens}, {X: p.X.Max, Y: boundTokens}}
		l, err := plotter.NewLine(bound)
		if err != nil {
			return nil, fmt.Errorf("series %s: %w", seriesBound, err)
		}
		l.LineStyle = lineStyle(seriesBound)
		p.Add(l)
		p.Legend.Add(seriesBound, l)
		p.Title.Text += ", bound " + fmtFloat(boundTokens) + " tokens"
		p.Y.Max = math.Max(p.Y.Max, boundTokens*1.1)
	}
	addFaultMarkers(p, faults)
	caption := "Cumulative overspend (confirmed): allowed requests the exact token bucket had no tokens for. " +
		"It grows with every idle episode of a lease and is bounded by nothing; the design's bound is on each " +
		"key's burst excess, set against it in the summary."
	if boundTokens > 0 {
		caption = "Cumulative overspend: allowed requests the exact token bucket had no tokens for. " +
			"The dashed line is the v1 bound on the whole run's overspend."
	}
	return &chart{name: OverspendChart, caption: caption, plot: p}, nil
}

// hdrChart plots latency by percentile the way HdrHistogram's plotter does: x = 1/(1-p) on a log
// axis, labelled with percentiles (90%, 99%, 99.9%...), so each decade of the tail gets equal room.
// The 100th percentile (x infinite) is left out; the maximum is in the summary table.
func hdrChart(h *results.Histogram) (*chart, error) {
	title := "Latency by percentile (ms)"
	var xys plotter.XYs
	maxX, maxMs := 10.0, 0.0
	for _, pt := range h.Percentiles() {
		if pt.Percentile >= 100 {
			continue
		}
		x := 100 / (100 - pt.Percentile)
		xys = append(xys, plotter.XY{X: x, Y: pt.Ms})
		maxX, maxMs = math.Max(maxX, x), math.Max(maxMs, pt.Ms)
	}
	if len(xys) == 0 {
		title += noData
	}
	// A tail two decades above the body gets a log y axis too (zeros dropped: a log axis cannot
	// show them), or the median would sit flat on the floor.
	minMs := math.Inf(1)
	for _, pt := range xys {
		if pt.Y > 0 {
			minMs = math.Min(minMs, pt.Y)
		}
	}
	logY := maxMs >= 100*minMs
	if logY {
		title = "Latency by percentile (ms, log scale)"
		xys = slices.DeleteFunc(xys, func(pt plotter.XY) bool { return pt.Y <= 0 })
	}
	p := newPlot(title, "percentile", "latency (ms)")
	if err := addSeries(p, seriesLatency, xys); err != nil {
		return nil, err
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = decades(1, maxX)
	p.X.Tick.Marker = percentileTicks(p.X.Max)
	p.Y.Min, p.Y.Max = 0, math.Max(maxMs*1.05, 1)
	if logY {
		setLogY(p, minMs, maxMs)
	}
	caption := "Latency by percentile over the whole run (HDR histogram, 3 significant digits)."
	if logY {
		caption += " Log y axis: the tail spans two or more decades above the fastest decisions."
	}
	return &chart{name: HDRChart, caption: caption, plot: p}, nil
}
