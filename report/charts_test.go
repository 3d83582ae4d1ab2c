package report

import (
	"image/color"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"ratelab/results"
)

// TestOverspendBound checks the overspend chart draws the bound as a horizontal dashed black
// line across the whole time axis at y = bound, and no such line when there is no bound.
func TestOverspendBound(t *testing.T) {
	t.Parallel()
	rows := make([]results.Interval, 10)
	for i := range rows {
		rows[i] = results.Interval{TS: float64(i), Overspend: 1}
	}
	tests := []struct {
		name  string
		bound float64
		want  int // dashed black horizontal lines at the bound
	}{
		{"bound", 40, 1},
		{"no bound", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := overspendChart(rows, tt.bound, []results.Fault{{AtS: 2, Kind: "failover", RecoveredS: 4}})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder.Canvas{}
			dc := draw.NewCanvas(rec, chartWidth, chartHeight)
			c.plot.Draw(dc)
			data := c.plot.DataCanvas(dc)
			trX, trY := c.plot.Transforms(&data)
			var col color.Color
			var dashes []vg.Length
			found := 0
			for _, a := range rec.Actions {
				switch a := a.(type) {
				case *recorder.SetColor:
					col = a.Color
				case *recorder.SetLineDash:
					dashes = a.Dashes
				case *recorder.Stroke:
					if col != palette[seriesBound] || len(a.Path) != 2 || !slices.Equal(dashes, lineStyle(seriesBound).Dashes) {
						continue
					}
					p0, p1 := a.Path[0].Pos, a.Path[1].Pos
					if near(p0.Y, trY(tt.bound)) && near(p1.Y, trY(tt.bound)) && near(p0.X, trX(0)) && near(p1.X, trX(10)) {
						found++
					}
				}
			}
			if found != tt.want {
				t.Errorf("%d dashed bound lines at y=%v across the axis, want %d", found, tt.bound, tt.want)
			}
		})
	}
}

func near(a, b vg.Length) bool { return math.Abs(float64(a-b)) < 1e-6 }
