package report

import (
	"slices"
	"testing"

	"gonum.org/v1/plot/plotter"

	"ratelab/results"
)

func TestStackRings(t *testing.T) {
	t.Parallel()
	moved := stackLayer{seriesMoved, func(r results.Interval) int64 { return r.Moved }}
	ask := stackLayer{seriesAsk, func(r results.Interval) int64 { return r.Ask }}
	xy := func(pts ...float64) plotter.XYs {
		var out plotter.XYs
		for i := 0; i < len(pts); i += 2 {
			out = append(out, plotter.XY{X: pts[i], Y: pts[i+1]})
		}
		return out
	}
	tests := []struct {
		name     string
		have     []results.Interval
		layers   []stackLayer
		want     []plotter.XYs
		wantPeak int64
	}{
		{name: "no rows", layers: []stackLayer{moved}, want: []plotter.XYs{nil}},
		{
			name:   "two layers, two seconds",
			have:   []results.Interval{{TS: 0, Moved: 2, Ask: 1}, {TS: 1, Moved: 0, Ask: 3}},
			layers: []stackLayer{moved, ask},
			want: []plotter.XYs{
				// MOVED: top 2 then 0, bottom 0 throughout (merged into one stretch).
				xy(0, 2, 1, 2, 1, 0, 2, 0, 2, 0, 0, 0),
				// ASK sits on MOVED: top 3 throughout, bottom 2 then 0.
				xy(0, 3, 2, 3, 2, 0, 1, 0, 1, 2, 0, 2),
			},
			wantPeak: 3,
		},
		{
			name:   "a gap between rows is zeros",
			have:   []results.Interval{{TS: 0, Moved: 4}, {TS: 3, Moved: 4}},
			layers: []stackLayer{moved},
			want: []plotter.XYs{
				xy(0, 4, 1, 4, 1, 0, 3, 0, 3, 4, 4, 4, 4, 0, 0, 0),
			},
			wantPeak: 4,
		},
		{
			name:     "flat stretches merge",
			have:     []results.Interval{{TS: 0, Moved: 1}, {TS: 1, Moved: 1}, {TS: 2, Moved: 1}},
			layers:   []stackLayer{moved},
			want:     []plotter.XYs{xy(0, 1, 3, 1, 3, 0, 0, 0)},
			wantPeak: 1,
		},
	}
	for _, tt := range tests {
		have, peak := stackRings(tt.have, tt.layers)
		if peak != tt.wantPeak {
			t.Errorf("%s: peak %d, want %d", tt.name, peak, tt.wantPeak)
		}
		if !slices.EqualFunc(have, tt.want, func(a, b plotter.XYs) bool { return slices.Equal(a, b) }) {
			t.Errorf("%s:\nhave %v\nwant %v", tt.name, have, tt.want)
		}
	}
}
