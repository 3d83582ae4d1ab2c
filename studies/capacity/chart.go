package capacity

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ratelab/results"
)

// writeCharts draws capacity.{png,svg} (throughput and p99 against offered rate, one line per
// cluster size, knees circled) and, with a fit, usl.{png,svg}.
func writeCharts(res *SweepResult) error {
	top := plot.New()
	top.Title.Text = "Achieved throughput vs offered rate (knee = max rate meeting the SLO)"
	top.X.Label.Text = "offered (requests/s)"
	top.Y.Label.Text = "achieved (requests/s)"
	top.Add(plotter.NewGrid())
	bottom := plot.New()
	bottom.Title.Text = "p99 latency vs offered rate (ms, log scale)"
	bottom.X.Label.Text = "offered (requests/s)"
	bottom.Y.Label.Text = "p99 (ms)"
	bottom.Add(plotter.NewGrid())
	maxX, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for i, s := range res.Series {
		var thr, p99 plotter.XYs
		for _, st := range sortedSteps(s.Steps) {
			thr = append(thr, plotter.XY{X: st.Offered, Y: st.Achieved})
			maxX = math.Max(maxX, st.Offered)
			// A log axis cannot show 0, nor a p99 that fell among the drops (not measurable).
			if y := float64(st.P99Ms); y > 0 && st.P99Ms.Measurable() {
				p99 = append(p99, plotter.XY{X: st.Offered, Y: y})
				lo, hi = math.Min(lo, y), math.Max(hi, y)
			}
		}
		unit := "primaries"
		if s.Primaries == 1 {
			unit = "primary"
		}
		name := fmt.Sprintf("%d %s, %s", s.Primaries, unit, s.Limiter)
		c := plotutil.Color(i)
		if err := addLine(top, name, thr, c); err != nil {
			return err
		}
		if err := addLine(bottom, name, p99, c); err != nil {
			return err
		}
		if k := s.Knee; k != nil {
			knee := fmt.Sprintf("knee %d %s: %.0f/s", s.Primaries, s.Limiter, k.Achieved)
			if err := addKnee(top, knee, plotter.XY{X: k.Offered, Y: k.Achieved}, c); err != nil {
				return err
			}
			if k.P99Ms > 0 && k.P99Ms.Measurable() {
				if err := addKnee(bottom, "", plotter.XY{X: k.Offered, Y: float64(k.P99Ms)}, c); err != nil {
					return err
				}
			}
		}
	}
	if maxX > 0 {
		ideal, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxX, Y: maxX}})
		ideal.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0x99}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		top.Add(ideal)
		top.Legend.Add("achieved = offered", ideal)
	}
	if lo <= hi {
		bottom.Y.Scale = plot.LogScale{}
		bottom.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		bottom.Y.Min, bottom.Y.Max = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)+1e-9))
	}
	top.Legend.Top, top.Legend.Left = true, true
	bottom.Legend.Top, bottom.Legend.Left = true, true
	if err := save(res.Dir, ChartStem, 8*vg.Inch, 8*vg.Inch, [][]*plot.Plot{{top}, {bottom}}); err != nil {
		return err
	}
	return uslChart(res)
}

// uslChart draws each limiter kind's fitted curve over its measured knees (nothing without a fit).
func uslChart(res *SweepResult) error {
	p := plot.New()
	p.Title.Text = "USL fit of knee throughput against primaries"
	p.X.Label.Text = "primaries (N)"
	p.Y.Label.Text = "throughput at the knee (requests/s)"
	p.Add(plotter.NewGrid())
	fitted := false
	for i, f := range res.Fits {
		u := f.USL
		if u == nil {
			continue
		}
		fitted = true
		var pts plotter.XYs
		maxN := 1.0
		for _, q := range u.Points {
			pts = append(pts, plotter.XY{X: q.N, Y: q.Measured})
			maxN = math.Max(maxN, q.N)
		}
		if u.PeakN != nil {
			maxN = math.Max(maxN, math.Min(*u.PeakN*1.3, 4*maxN))
		}
		var curve plotter.XYs
		for n := 1.0; n <= maxN+1e-9; n += maxN / 100 {
			curve = append(curve, plotter.XY{X: n, Y: u.X(n)})
		}
		line, err := plotter.NewLine(curve)
		if err != nil {
			return err
		}
		c := plotutil.Color(i)
		line.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1.5)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s: sigma %.3f kappa %.4f R² %.3f", f.Limiter, u.Sigma, u.Kappa, u.R2), line)
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		p.Legend.Add(f.Limiter+": measured knees", sc)
	}
	if !fitted {
		return nil
	}
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	return save(res.Dir, USLChartStem, 8*vg.Inch, 4*vg.Inch, [][]*plot.Plot{{p}})
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color) error {
	if len(xys) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("series %s: %w", name, err)
	}
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1.5)}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// addKnee circles the knee and, when label is set, writes it beside the point.
func addKnee(p *plot.Plot, label string, at plotter.XY, c color.Color) error {
	s, err := plotter.NewScatter(plotter.XYs{at})
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(7), Shape: draw.RingGlyph{}}
	p.Add(s)
	if label == "" {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{at}, Labels: []string{label}})
	if err != nil {
		return err
	}
	l.Offset = vg.Point{X: vg.Points(-40), Y: vg.Points(10)}
	p.Add(l)
	return nil
}

// save renders a grid of plots as <stem>.png and <stem>.svg.
func save(dir, stem string, w, h vg.Length, grid [][]*plot.Plot) error {
	for _, format := range []string{"png", "svg"} {
		c, err := draw.NewFormattedCanvas(w, h, format)
		if err != nil {
			return err
		}
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Points(8), PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		canvases := plot.Align(grid, tiles, dc)
		for i := range grid {
			for j, p := range grid[i] {
				p.Draw(canvases[i][j])
			}
		}
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return err
		}
		if err := results.WriteFileAtomic(filepath.Join(dir, stem+"."+format), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// sortedSteps orders steps by offered rate (bisection steps come after the geometric ones).
func sortedSteps(in []Step) []Step {
	out := append([]Step(nil), in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Offered < out[j-1].Offered; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
