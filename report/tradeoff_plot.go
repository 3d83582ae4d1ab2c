package report

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ratelab/results"
)

// Chart stems of the trade-off plots: <stem>.png and <stem>.svg.
const (
	// TradeoffChart is the regions sweep's plot.
	TradeoffChart = "tradeoff"
	// DurabilityChart is the durability matrix's plot.
	DurabilityChart = "durability"
)

// tradeoffPoint is one labelled point of a trade-off plot; Group picks its colour and legend
// entry.
type tradeoffPoint struct {
	X, Y         float64
	Label, Group string
	// Name is the point in the list of those not plotted: Label, with what it does not show.
	Name string
	// Front marks a point of the Pareto front: joined by a dashed line.
	Front bool
}

// logAxis is a set of values placed on a log axis: a log axis cannot show 0 or a negative
// value (gonum/plot panics on them), so those are clamped to Floor and marked; a value that is
// not finite (not measurable, not counted) is not plotted at all.
type logAxis struct {
	Vals    []float64
	Clamped []bool
	Plotted []bool
	Floor   float64
	// Lo and Hi are the axis' range: whole decades around every plotted value.
	Lo, Hi float64
}

// onLogAxis places vals on a log axis. Floor is a tenth of the smallest positive value, or
// fallback when none is positive.
func onLogAxis(vals []float64, fallback float64) logAxis {
	a := logAxis{Vals: make([]float64, len(vals)), Clamped: make([]bool, len(vals)), Plotted: make([]bool, len(vals))}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	a.Floor = fallback
	if lo <= hi {
		a.Floor = lo / 10
	}
	for i, v := range vals {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			continue
		case v <= 0:
			a.Vals[i], a.Clamped[i] = a.Floor, true
		default:
			a.Vals[i] = v
		}
		a.Plotted[i] = true
	}
	a.Lo, a.Hi = decades(a.Floor, max(hi, a.Floor))
	return a
}

// tradeoffPlot draws pts on log-log axes, one colour per group in the order groups first
// appear, each point labelled; a clamped value's label ends in "(0)", what it stands for; the
// points not plotted are named under the title.
func tradeoffPlot(title, xLabel, yLabel string, pts []tradeoffPoint, xFloor, yFloor float64) (*plot.Plot, error) {
	p := newPlot(title, xLabel, yLabel)
	xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
	for i, pt := range pts {
		xs[i], ys[i] = pt.X, pt.Y
	}
	ax, ay := onLogAxis(xs, xFloor), onLogAxis(ys, yFloor)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = decadeTicks{}, decadeTicks{}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = ax.Lo, ax.Hi, ay.Lo, ay.Hi
	var groups, skipped []string
	byGroup := map[string]plotter.XYLabels{}
	var front plotter.XYs
	for i, pt := range pts {
		if !ax.Plotted[i] || !ay.Plotted[i] {
			skipped = append(skipped, cmp.Or(pt.Name, pt.Label))
			continue
		}
		label := pt.Label
		if ax.Clamped[i] || ay.Clamped[i] {
			label += " (0)"
		}
		if _, ok := byGroup[pt.Group]; !ok {
			groups = append(groups, pt.Group)
		}
		g := byGroup[pt.Group]
		g.XYs = append(g.XYs, plotter.XY{X: ax.Vals[i], Y: ay.Vals[i]})
		g.Labels = append(g.Labels, label)
		byGroup[pt.Group] = g
		if pt.Front {
			front = append(front, plotter.XY{X: ax.Vals[i], Y: ay.Vals[i]})
		}
	}
	if len(skipped) > 0 {
		p.Title.Text += "\nnot plotted: " + strings.Join(skipped, ", ")
	}
	if err := addFront(p, front); err != nil {
		return nil, err
	}
	for i, name := range groups {
		if err := addGroup(p, name, byGroup[name], i); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = true
	return p, nil
}

// addGroup draws one group's points in its colour, with their labels beside them.
func addGroup(p *plot.Plot, name string, g plotter.XYLabels, i int) error {
	s, err := plotter.NewScatter(g)
	if err != nil {
		return fmt.Errorf("points of %s: %w", name, err)
	}
	s.GlyphStyle.Color = plotutil.Color(i)
	s.GlyphStyle.Radius = vg.Points(4)
	s.GlyphStyle.Shape = plotutil.Shape(i)
	labels, err := plotter.NewLabels(g)
	if err != nil {
		return fmt.Errorf("labels of %s: %w", name, err)
	}
	for j := range labels.TextStyle {
		labels.TextStyle[j].Color = plotutil.Color(i)
	}
	labels.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	p.Add(s, labels)
	p.Legend.Add(name, s)
	return nil
}

// addFront joins the Pareto front's points by a dashed line, in x order.
func addFront(p *plot.Plot, front plotter.XYs) error {
	if len(front) < 2 {
		return nil
	}
	slices.SortFunc(front, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	l, err := plotter.NewLine(front)
	if err != nil {
		return fmt.Errorf("Pareto front: %w", err)
	}
	l.LineStyle = draw.LineStyle{Color: plotutil.Color(7), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	p.Add(l)
	p.Legend.Add("Pareto front", l)
	return nil
}

// savePlot writes p as <dir>/<stem>.png and .svg.
func savePlot(p *plot.Plot, dir, stem string) error {
	for _, format := range chartFormats {
		w, err := p.WriterTo(chartWidth, chartHeight*5/4, format)
		if err != nil {
			return fmt.Errorf("chart %s.%s: %w", stem, format, err)
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			return fmt.Errorf("chart %s.%s: %w", stem, format, err)
		}
		if err := results.WriteFileAtomic(filepath.Join(dir, stem+"."+format), b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// lowAvailability is the availability below which a regions point names its own: its y counts
// only the decisions it made.
const lowAvailability = 0.99

// regionsPlot is the regions sweep's plot: worst-region p99 against (overspend + false
// denies) per allowed request, one point per row that ran.
func regionsPlot(rows []RegionsRow) (*plot.Plot, error) {
	var pts []tradeoffPoint
	for _, r := range rows {
		pt := tradeoffPoint{X: float64(r.WorstP99Ms), Y: r.ErrorsPerAllowed, Label: r.Label, Group: r.Design, Front: r.Pareto}
		// The y axis judges decisions made: a design that made few says so beside its point.
		if r.Error == "" && r.Availability < lowAvailability {
			pt.Label += fmt.Sprintf(" (availability %.1f%%)", 100*r.Availability)
		}
		if r.Error != "" {
			pt.X = math.NaN() // a failed run's figures are not a design's
			pt.Label += " (failed)"
		}
		pts = append(pts, pt)
	}
	return tradeoffPlot("Regions: tail latency against limit errors (log-log; lower left is better)",
		"worst region p99 (ms)", "(overspend + false denies) / allowed", pts, 0.1, 1e-6)
}

// durabilityPlot is the durability matrix's plot: steady-state p99 against the most tokens a
// fault returned, one point per row that ran and counted them.
func durabilityPlot(rows []DurabilityRow) (*plot.Plot, error) {
	var pts []tradeoffPoint
	for _, r := range rows {
		pt := tradeoffPoint{X: float64(r.SteadyP99Ms), Y: tokensBackMax(r), Label: r.Setting, Group: r.Fault, Name: r.Label}
		switch {
		case r.Error != "":
			pt.X = math.NaN()
			pt.Name += " (failed)"
		case r.TokensBack == nil:
			pt.Name += " (tokens back not counted)"
		case !r.SteadyP99Ms.Measurable():
			pt.Name += " (steady p99 not measurable)"
		}
		pts = append(pts, pt)
	}
	return tradeoffPlot("Durability: steady p99 against tokens a fault returned (log-log; lower left is better)",
		"steady-state p99 before the fault (ms)", "tokens back (most)", pts, 0.1, 0.1)
}
