package report

import (
	"gonum.org/v1/plot/plotter"

	"ratelab/results"
)

// stackLayer is one series of a stacked per-second chart: its name and its count per row.
type stackLayer struct {
	name string
	get  func(results.Interval) int64
}

// stackRings returns, for each layer in order (the first at the bottom), the outline of its band
// in a stack of per-second steps, in data coordinates, ready for plotter.NewPolygon. Row i covers
// the second [TS, TS+1); in it layer k fills y from the sum of layers 0..k-1 to the sum of layers
// 0..k, so the top of the last band is the row's total. A gap between rows is a stretch of zeros.
// Each ring runs along its band's top from left to right, then back along its bottom; points on
// a flat stretch are merged, so a layer that is mostly 0 costs few points. peak is the largest
// row total, the y extent the chart needs.
func stackRings(rows []results.Interval, layers []stackLayer) (rings []plotter.XYs, peak int64) {
	// seg is one stretch of the x axis with a constant count per layer.
	type seg struct {
		x0, x1 float64
		row    int // index into rows; -1 for a gap (all layers 0)
	}
	segs := make([]seg, 0, len(rows))
	for i, r := range rows {
		if i > 0 && r.TS > rows[i-1].TS+1 {
			segs = append(segs, seg{rows[i-1].TS + 1, r.TS, -1})
		}
		segs = append(segs, seg{r.TS, r.TS + 1, i})
	}
	base := make([]int64, len(segs)) // running bottom of the next layer, per segment
	rings = make([]plotter.XYs, len(layers))
	for k, l := range layers {
		var top, bottom plotter.XYs
		for j, s := range segs {
			lo, hi := base[j], base[j]
			if s.row >= 0 {
				hi += l.get(rows[s.row])
			}
			base[j] = hi
			peak = max(peak, hi)
			top = appendStep(top, s.x0, s.x1, float64(hi))
			bottom = appendStep(bottom, s.x0, s.x1, float64(lo))
		}
		ring := top
		for i := len(bottom) - 1; i >= 0; i-- {
			ring = append(ring, bottom[i])
		}
		rings[k] = ring
	}
	return rings, peak
}

// appendStep extends a step path with the horizontal stretch [x0, x1] at height y. When the path
// is already flat at y and ends at x0, the stretch extends its last point instead of adding two.
func appendStep(path plotter.XYs, x0, x1, y float64) plotter.XYs {
	if n := len(path); n > 0 && path[n-1].Y == y && path[n-1].X == x0 {
		path[n-1].X = x1
		return path
	}
	return append(path, plotter.XY{X: x0, Y: y}, plotter.XY{X: x1, Y: y})
}
