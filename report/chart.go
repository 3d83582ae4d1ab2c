package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ratelab/results"
)

// Chart size. At the PNG canvas' 96 dpi this is ChartWidthPx x ChartHeightPx pixels.
const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 4 * vg.Inch
	// ChartWidthPx is the width of every PNG chart, in pixels.
	ChartWidthPx = 768
	// ChartHeightPx is the height of every PNG chart, in pixels.
	ChartHeightPx = 384
)

// noData is appended to a chart's title when it has nothing to draw.
const noData = " (no data)"

// chart is one figure of the report, written as <name>.png and <name>.svg.
type chart struct {
	name    string // file stem, e.g. "latency"
	caption string // what the figure shows, for the HTML and Markdown
	plot    *plot.Plot
	// lower is an optional second panel drawn under plot, lowerShare of the height, on the same
	// x axis (aligned with plot's, whose tick labels it carries); its legend entries go in
	// plot's legend.
	lower *plot.Plot
	svg   []byte // the rendered SVG, kept to inline it in report.html
}

// newPlot returns a plot with the report's common look: title, axis labels, grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	return p
}

// addSeries draws one named series with its palette style and adds it to the legend. An empty
// series is left out (its legend entry would promise a line that is not there); a single point
// gets a dot, since a one-point line draws nothing.
func addSeries(p *plot.Plot, name string, xys plotter.XYs) error { return addSeriesTo(p, p, name, xys) }

// addSeriesTo is addSeries drawing on p and listing the series in the legend of legend: a lower
// panel's series goes in the legend of the plot above it.
func addSeriesTo(p, legend *plot.Plot, name string, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("series %s: %w", name, err)
	}
	l.LineStyle = lineStyle(name)
	p.Add(l)
	legend.Legend.Add(name, l)
	if len(xys) == 1 {
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("series %s: %w", name, err)
		}
		s.GlyphStyle.Color = palette[name]
		s.GlyphStyle.Radius = vg.Points(3)
		p.Add(s)
	}
	return nil
}

// setTimeAxis fixes the x axis to the run's seconds, so every per-second chart spans the same
// range and a run with one row (or none) still has a non-empty axis.
func setTimeAxis(p *plot.Plot, rows []results.Interval) {
	lo, hi := 0.0, 1.0
	if len(rows) > 0 {
		lo, hi = rows[0].TS, rows[len(rows)-1].TS+1
	}
	p.X.Min, p.X.Max = lo, hi
}

// decades returns the smallest range of whole decades [10^a, 10^b], b > a, that holds [lo, hi].
// Both must be > 0: a log axis cannot show 0 or negative values (gonum/plot panics on them).
func decades(lo, hi float64) (float64, float64) {
	a := math.Floor(math.Log10(lo))
	b := math.Ceil(math.Log10(hi))
	if b <= a {
		b = a + 1
	}
	return math.Pow(10, a), math.Pow(10, b)
}

// setLogY makes the y axis logarithmic over whole decades around the positive values in
// [lo, hi]; with no positive value (lo > hi) it shows 0.1..10 ms as an empty frame.
func setLogY(p *plot.Plot, lo, hi float64) {
	if !(lo > 0 && lo <= hi) {
		lo, hi = 0.1, 10
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = decadeTicks{}
	p.Y.Min, p.Y.Max = decades(lo, hi)
}

// decadeTicks marks a log axis: a labelled tick at every power of ten and unlabelled ones at
// 2..9 times it. (plot.LogTicks truncates log10 toward zero and so loses the label of the lowest
// decade below 1, e.g. 0.1 ms.)
type decadeTicks struct{}

// Ticks implements plot.Ticker for min, max > 0.
func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	const maxDecades = 40 // float64 latencies in ms never span more; also ends the loop on odd input
	var ticks []plot.Tick
	// Round before flooring: math.Log10(0.1) is -0.9999999999999998, not -1.
	first := math.Floor(math.Log10(min) + 1e-9)
	if math.IsNaN(first) || math.IsInf(first, 0) {
		return nil
	}
	for e := first; e < first+maxDecades; e++ {
		base := math.Pow(10, e)
		if base > max*(1+1e-9) {
			return ticks
		}
		ticks = append(ticks, plot.Tick{Value: base, Label: strconv.FormatFloat(base, 'g', -1, 64)})
		for i := 2.0; i < 10 && base*i <= max; i++ {
			ticks = append(ticks, plot.Tick{Value: base * i})
		}
	}
	return ticks
}

// percentileTicks labels a log axis of x = 1/(1-p) with percentiles: 1 -> "0%", 10 -> "90%",
// 100 -> "99%", 1000 -> "99.9%" and so on up to max.
func percentileTicks(max float64) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for x := 1.0; x <= max*1.0001; x *= 10 {
		pct := 100 - 100/x
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(pct, 'f', -1, 64) + "%"})
	}
	return ticks
}

// Legend column: the legend is drawn beside the data, not over it (gonum/plot's own legend sits
// inside the data area and hides the lines under it). The column holds the widest series name,
// "CLUSTERDOWN": a 20 pt thumbnail and about 94 pt of 12 pt text (TestLegendFits).
const (
	legendWidth = 1.75 * vg.Inch
	legendLeft  = 8  // points between the data area and the legend
	legendTop   = 24 // points below the top edge, clear of the title
)

// render draws ch in the given format ("png" or "svg") at the report's chart size, with the
// legend in a column on the right and the lower panel, when there is one, under the plot.
func render(ch *chart, format string) ([]byte, error) {
	c, err := draw.NewFormattedCanvas(chartWidth, chartHeight, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	dc.SetColor(color.White) // the whole canvas, legend column included (plot fills only its part)
	dc.Fill(dc.Rectangle.Path())
	p := ch.plot
	legend := p.Legend
	p.Legend = plot.NewLegend()
	area := draw.Crop(dc, 0, -legendWidth, 0, 0)
	if ch.lower == nil {
		p.Draw(area)
	} else {
		h := (area.Max.Y - area.Min.Y) * lowerShare
		top, bottom := alignX(p, draw.Crop(area, 0, 0, h, 0), ch.lower, draw.Crop(area, 0, 0, 0, h-area.Max.Y+area.Min.Y))
		p.Draw(top)
		ch.lower.Draw(bottom)
	}
	p.Legend = legend
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(dc, chartWidth-legendWidth+vg.Points(legendLeft), 0, 0, -vg.Points(legendTop)))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lowerShare is the share of a chart's height its lower panel takes: with its x axis' ticks and
// label, enough for a readable data area.
const lowerShare = 0.4

// unlabelled marks an axis with another ticker's ticks, without their labels: the upper panel
// of a chart keeps its grid and ticks while the lower panel, on the same x axis, names them.
type unlabelled struct{ plot.Ticker }

// Ticks implements plot.Ticker.
func (u unlabelled) Ticks(min, max float64) []plot.Tick {
	ticks := u.Ticker.Ticks(min, max)
	for i := range ticks {
		ticks[i].Label = ""
	}
	return ticks
}

// alignX narrows the canvases of two stacked plots with the same x axis so that their data
// areas span the same x range: their y axes' labels differ in width, and the data areas would
// not line up otherwise. The axes' widths do not depend on the canvas, so one narrowing does it.
func alignX(a *plot.Plot, ca draw.Canvas, b *plot.Plot, cb draw.Canvas) (draw.Canvas, draw.Canvas) {
	da, db := a.DataCanvas(ca), b.DataCanvas(cb)
	left, right := max(da.Min.X, db.Min.X), min(da.Max.X, db.Max.X)
	return draw.Crop(ca, left-da.Min.X, right-da.Max.X, 0, 0), draw.Crop(cb, left-db.Min.X, right-db.Max.X, 0, 0)
}

// save writes c as <dir>/<name>.<format> for each format and keeps the SVG for inlining.
func (c *chart) save(dir string, formats []string) error {
	for _, format := range formats {
		data, err := render(c, format)
		if err != nil {
			return fmt.Errorf("chart %s.%s: %w", c.name, format, err)
		}
		if err := results.WriteFileAtomic(filepath.Join(dir, c.name+"."+format), data); err != nil {
			return err
		}
		if format == "svg" {
			c.svg = data
		}
	}
	return nil
}
