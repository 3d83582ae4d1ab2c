package report

import (
	"cmp"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ratelab/results"
)

// Every per-second chart marks the run's faults the same way: a shaded span from each fault's
// injection (results.Fault.AtS) to its recovery (RecoveredS, when the run saw one after AtS),
// drawn under the data, and a labelled vertical line at AtS, drawn over it. Both are plotters
// that read the x axis at draw time; neither touches the y axis (they span the data area in
// canvas units), so they are safe on a log-scaled y axis and never widen the data range.

// Fault label layout, in points.
const (
	faultLabelSize = 9 // font size
	faultLabelPad  = 2 // from the text to its backdrop's edge, and from the line to the backdrop
	faultLabelGap  = 4 // least room between two labels in one lane
	// faultLanes is how many rows of labels, from the top of the data area down, are used to keep
	// labels of close faults apart; past that, a label shares the lane it overlaps least.
	faultLanes = 4
)

// faultBands shades, for each fault that recovered after its injection, the span from AtS to
// RecoveredS, clipped to the x axis. Add it before the data so the data is drawn over it.
type faultBands []results.Fault

var _ plot.Plotter = faultBands(nil)

// Plot implements plot.Plotter.
func (fb faultBands) Plot(c draw.Canvas, plt *plot.Plot) {
	for _, f := range fb {
		lo, hi, ok := bandSpan(f, plt.X.Min, plt.X.Max)
		if !ok {
			continue
		}
		x0, x1 := xPos(c, plt, lo), xPos(c, plt, hi)
		c.FillPolygon(faultShade, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x0, Y: c.Max.Y}, {X: x1, Y: c.Max.Y}, {X: x1, Y: c.Min.Y}})
	}
}

// Thumbnail implements plot.Thumbnailer: a shaded box in the legend.
func (faultBands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(faultShade, []vg.Point{c.Min, {X: c.Min.X, Y: c.Max.Y}, c.Max, {X: c.Max.X, Y: c.Min.Y}})
}

// faultMarkers draws a vertical line at each fault's AtS inside the x axis, labelled with its
// kind at the top of the data area. Labels of faults too close to share a row are stacked into
// lanes (assignLanes). Add it after the data so lines and labels stay visible.
type faultMarkers []results.Fault

var _ plot.Plotter = faultMarkers(nil)

// mark is one fault line on the canvas and its label's horizontal extent.
type mark struct {
	x     vg.Length
	label string
	span  labelSpan
}

// Plot implements plot.Plotter.
func (fm faultMarkers) Plot(c draw.Canvas, plt *plot.Plot) {
	sty := faultLabelStyle()
	pad := vg.Points(faultLabelPad)
	marks := make([]mark, 0, len(fm))
	for _, f := range fm {
		if !onAxis(f, plt.X.Min, plt.X.Max) {
			continue
		}
		x := xPos(c, plt, f.AtS)
		c.StrokeLine2(lineStyle(seriesFault), x, c.Min.Y, x, c.Max.Y)
		label := faultLabel(f)
		// The label sits right of its line; near the right edge it flips to the left.
		w := sty.Width(label) + 2*pad
		left := x + pad
		if left+w > c.Max.X {
			left = x - pad - w
		}
		left = max(left, c.Min.X)
		marks = append(marks, mark{x: x, label: label, span: labelSpan{left: left, right: left + w}})
	}
	slices.SortStableFunc(marks, func(a, b mark) int { return cmp.Compare(a.span.left, b.span.left) })
	spans := make([]labelSpan, len(marks))
	for i, m := range marks {
		spans[i] = m.span
	}
	lanes := assignLanes(spans, vg.Points(faultLabelGap), faultLanes)
	// Lane i's backdrop spans [top - h, top] with top = c.Max.Y - pad - i*(h + pad).
	h := sty.Height("Mg") + 2*pad
	for i, m := range marks {
		top := c.Max.Y - pad - vg.Length(lanes[i])*(h+pad)
		l, r := m.span.left, m.span.right
		c.FillPolygon(labelBackdrop, []vg.Point{{X: l, Y: top - h}, {X: l, Y: top}, {X: r, Y: top}, {X: r, Y: top - h}})
		c.FillText(sty, vg.Point{X: l + pad, Y: top - pad}, m.label)
	}
}

// Thumbnail implements plot.Thumbnailer: the fault line's colour and dash-dot pattern, drawn
// across like every other legend entry (a vertical stub at legend size reads as a glyph).
func (faultMarkers) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(lineStyle(seriesFault), c.Min.X, y, c.Max.X, y)
}

// addFaultMarkers draws the fault lines over p's data and adds legend entries for the markers
// that are on p's x axis. Call it after the x axis is set and the data added; add
// faultBands(faults) right after newPlot.
func addFaultMarkers(p *plot.Plot, faults []results.Fault) {
	if len(faults) == 0 {
		return
	}
	p.Add(faultMarkers(faults))
	var lines, bands bool
	for _, f := range faults {
		lines = lines || onAxis(f, p.X.Min, p.X.Max)
		_, _, ok := bandSpan(f, p.X.Min, p.X.Max)
		bands = bands || ok
	}
	if lines {
		p.Legend.Add(seriesFault, faultMarkers(nil))
	}
	if bands {
		p.Legend.Add(seriesRecovery, faultBands(nil))
	}
}

// faultLabel is the text next to a fault's line: its kind ("kill-primary", "pause"...).
func faultLabel(f results.Fault) string {
	if f.Kind == "" {
		return "fault"
	}
	return f.Kind
}

// faultLabelStyle is the style of fault labels: the fault colour, left- and top-aligned at the
// point given, so the point is the label's top-left corner.
func faultLabelStyle() text.Style {
	return text.Style{
		Color:   palette[seriesFault],
		Font:    font.From(plot.DefaultFont, vg.Points(faultLabelSize)),
		Handler: plot.DefaultTextHandler,
		XAlign:  text.XLeft,
		YAlign:  text.YTop,
	}
}

// onAxis reports whether the fault was injected inside the x axis [lo, hi] (ends included:
// a fault at t=0 or at the end of the last second is drawn on the chart's edge).
func onAxis(f results.Fault, lo, hi float64) bool { return f.AtS >= lo && f.AtS <= hi }

// bandSpan returns the part of [f.AtS, f.RecoveredS] inside the x axis [lo, hi]. ok is false
// when the fault did not recover after its injection (RecoveredS 0, or not after AtS) or when
// the span lies outside the axis. NaN times compare false and so are never drawn.
func bandSpan(f results.Fault, lo, hi float64) (from, to float64, ok bool) {
	if !(f.RecoveredS > f.AtS) {
		return 0, 0, false
	}
	from, to = max(f.AtS, lo), min(f.RecoveredS, hi)
	return from, to, from < to
}

// xPos is the canvas x of the data value x. Callers pass only values inside the x axis (onAxis,
// bandSpan), so a mark never leaves the data area, and a log-scaled x axis (which starts above
// 0) never sees a fault at t=0.
func xPos(c draw.Canvas, plt *plot.Plot, x float64) vg.Length { return c.X(plt.X.Norm(x)) }

// labelSpan is a label's horizontal extent on the canvas.
type labelSpan struct{ left, right vg.Length }

// assignLanes gives each label, in order of their left edges, a lane (0 = the top row): the
// first lane whose last label ends at least gap before this one starts. When all n lanes are
// taken, the label goes to the lane whose last label ends first, where the overlap is least.
// So labels of faults far apart all sit in lane 0, and close ones are staggered downwards.
func assignLanes(spans []labelSpan, gap vg.Length, n int) []int {
	n = max(n, 1)
	ends := make([]vg.Length, n) // right edge of the last label in each lane
	used := make([]bool, n)
	lanes := make([]int, len(spans))
	for i, s := range spans {
		lane := -1
		for l := range n {
			if !used[l] || s.left >= ends[l]+gap {
				lane = l
				break
			}
		}
		if lane < 0 {
			lane = 0
			for l := 1; l < n; l++ {
				if ends[l] < ends[lane] {
					lane = l
				}
			}
		}
		lanes[i] = lane
		if used[lane] {
			ends[lane] = max(ends[lane], s.right)
		} else {
			ends[lane], used[lane] = s.right, true
		}
	}
	return lanes
}
