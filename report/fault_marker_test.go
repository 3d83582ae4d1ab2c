package report

import (
	"image/color"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"ratelab/results"
)

func TestAssignLanes(t *testing.T) {
	t.Parallel()
	span := func(l, r float64) labelSpan { return labelSpan{vg.Length(l), vg.Length(r)} }
	tests := []struct {
		name string
		have []labelSpan
		n    int
		want []int
	}{
		{"none", nil, 4, []int{}},
		{"far apart share the top lane", []labelSpan{span(0, 40), span(50, 90), span(100, 140)}, 4, []int{0, 0, 0}},
		{"within the gap is too close", []labelSpan{span(0, 40), span(42, 80)}, 4, []int{0, 1}},
		{"exactly the gap apart", []labelSpan{span(0, 40), span(44, 80)}, 4, []int{0, 0}},
		{"close ones stagger down", []labelSpan{span(0, 40), span(10, 50), span(20, 60)}, 4, []int{0, 1, 2}},
		{"back to the top when it clears", []labelSpan{span(0, 40), span(10, 50), span(45, 90)}, 4, []int{0, 1, 0}},
		{"full lanes: least overlap", []labelSpan{span(0, 60), span(5, 30), span(10, 50), span(20, 70)}, 3, []int{0, 1, 2, 1}},
		{"one lane", []labelSpan{span(0, 40), span(10, 50)}, 1, []int{0, 0}},
		{"zero lanes means one", []labelSpan{span(0, 40), span(10, 50)}, 0, []int{0, 0}},
	}
	for _, tt := range tests {
		if have := assignLanes(tt.have, 4, tt.n); !slices.Equal(have, tt.want) {
			t.Errorf("%s: have %v, want %v", tt.name, have, tt.want)
		}
	}
}

func TestBandSpan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		have           results.Fault
		wantLo, wantHi float64
		wantOK         bool
	}{
		{"inside", results.Fault{AtS: 5, RecoveredS: 8}, 5, 8, true},
		{"not recovered", results.Fault{AtS: 5}, 0, 0, false},
		{"recovered at injection", results.Fault{AtS: 5, RecoveredS: 5}, 0, 0, false},
		{"recovered before injection", results.Fault{AtS: 5, RecoveredS: 4}, 0, 0, false},
		{"clipped right", results.Fault{AtS: 15, RecoveredS: 90}, 15, 20, true},
		{"clipped left", results.Fault{AtS: -3, RecoveredS: 1}, 0, 1, true},
		{"beyond the axis", results.Fault{AtS: 25, RecoveredS: 30}, 0, 0, false},
		{"starts at the end", results.Fault{AtS: 20, RecoveredS: 30}, 0, 0, false},
		{"NaN", results.Fault{AtS: math.NaN(), RecoveredS: 3}, 0, 0, false},
	}
	for _, tt := range tests {
		lo, hi, ok := bandSpan(tt.have, 0, 20)
		if ok != tt.wantOK || (ok && (lo != tt.wantLo || hi != tt.wantHi)) {
			t.Errorf("%s: have %v, %v, %v; want %v, %v, %v", tt.name, lo, hi, ok, tt.wantLo, tt.wantHi, tt.wantOK)
		}
	}
}

// drawn is what a plot put on a recording canvas, sorted by what it means for fault markers.
type drawn struct {
	labels map[string]vg.Point // FillString text -> position
	bands  [][2]vg.Length      // x extents of the fills in faultShade
	lines  []vg.Length         // x of the vertical strokes in the fault colour
	legend int                 // horizontal strokes in the fault colour (the legend thumbnail)
}

// drawRecorded draws p on a recorder canvas of the chart size and sorts out the fault marks.
// It also returns the data canvas, to turn data x into canvas x.
func drawRecorded(t *testing.T, p *plot.Plot) (drawn, draw.Canvas) {
	t.Helper()
	rec := &recorder.Canvas{}
	c := draw.NewCanvas(rec, chartWidth, chartHeight)
	p.Draw(c)
	d := drawn{labels: map[string]vg.Point{}}
	var cur color.Color
	same := func(a, b color.Color) bool {
		if a == nil || b == nil {
			return false
		}
		r1, g1, b1, a1 := a.RGBA()
		r2, g2, b2, a2 := b.RGBA()
		return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
	}
	for _, a := range rec.Actions {
		switch a := a.(type) {
		case *recorder.SetColor:
			cur = a.Color
		case *recorder.FillString:
			d.labels[a.String] = a.Point
		case *recorder.Fill:
			if same(cur, faultShade) {
				lo, hi := vg.Length(math.Inf(1)), vg.Length(math.Inf(-1))
				for _, pc := range a.Path {
					if pc.Type == vg.MoveComp || pc.Type == vg.LineComp { // a CloseComp has no position
						lo, hi = min(lo, pc.Pos.X), max(hi, pc.Pos.X)
					}
				}
				d.bands = append(d.bands, [2]vg.Length{lo, hi})
			}
		case *recorder.Stroke:
			if same(cur, palette[seriesFault]) && len(a.Path) == 2 {
				p0, p1 := a.Path[0].Pos, a.Path[1].Pos
				switch {
				case p0.X == p1.X:
					d.lines = append(d.lines, p0.X)
				case p0.Y == p1.Y:
					d.legend++
				}
			}
		}
	}
	return d, p.DataCanvas(c)
}

// TestFaultMarkers draws faults at the edges of the axis, close together, beyond it and with
// and without recovery, on a log y axis, and checks what reaches the canvas.
func TestFaultMarkers(t *testing.T) {
	t.Parallel()
	faults := []results.Fault{
		{AtS: 0, Kind: "kill-primary", RecoveredS: 2.5}, // at the left edge, shaded to 2.5
		{AtS: 0.4, Kind: "pause"},                       // too close to share a lane
		{AtS: 12, Kind: "reshard", RecoveredS: 99},      // shading clipped at the right edge
		{AtS: 20, Kind: "latency"},                      // at the right edge: label flips left
		{AtS: 25, Kind: "beyond", RecoveredS: 30},       // after the axis: nothing drawn
		{AtS: -3, Kind: "before", RecoveredS: 1},        // before the axis: only shading 0..1
		{AtS: 6},                                        // no kind: labelled "fault"
	}
	p := newPlot("t", timeLabel, "latency (ms)")
	p.Add(faultBands(faults))
	p.X.Min, p.X.Max = 0, 20
	setLogY(p, 0.1, 100) // a log y axis: the markers must not transform y
	addFaultMarkers(p, faults)
	d, dc := drawRecorded(t, p)
	trX, _ := p.Transforms(&dc)

	for _, want := range []string{"kill-primary", "pause", "reshard", "latency", "fault", seriesFault, seriesRecovery} {
		if _, ok := d.labels[want]; !ok {
			t.Errorf("no text %q drawn", want)
		}
	}
	for _, absent := range []string{"beyond", "before"} {
		if _, ok := d.labels[absent]; ok {
			t.Errorf("text %q drawn for a fault off the axis", absent)
		}
	}
	if kp, pa := d.labels["kill-primary"], d.labels["pause"]; kp.Y == pa.Y {
		t.Errorf("labels of faults 0.4 s apart share a lane at y=%v", kp.Y)
	}
	if kp, rs := d.labels["kill-primary"], d.labels["reshard"]; kp.Y != rs.Y {
		t.Errorf("labels of faults 12 s apart in different lanes: y=%v and %v", kp.Y, rs.Y)
	}
	if lat := d.labels["latency"]; lat.X >= trX(20) {
		t.Errorf("label at the right edge starts at x=%v, right of its line at %v: it would be cut off", lat.X, trX(20))
	}
	if kp := d.labels["kill-primary"]; kp.X <= trX(0) {
		t.Errorf("label at the left edge starts at x=%v, not right of its line at %v", kp.X, trX(0))
	}

	wantLines := []vg.Length{trX(0), trX(0.4), trX(12), trX(20), trX(6)}
	if !slices.Equal(d.lines, wantLines) {
		t.Errorf("vertical lines at %v, want %v", d.lines, wantLines)
	}
	if d.legend != 1 {
		t.Errorf("%d legend thumbnails in the fault colour, want 1", d.legend)
	}
	// The legend's "until recovered" thumbnail is the last shaded fill.
	wantBands := [][2]vg.Length{{trX(0), trX(2.5)}, {trX(12), trX(20)}, {trX(0), trX(1)}}
	if len(d.bands) != len(wantBands)+1 {
		t.Fatalf("%d shaded fills, want %d bands and 1 legend thumbnail: %v", len(d.bands), len(wantBands), d.bands)
	}
	for i, want := range wantBands {
		if have := d.bands[i]; math.Abs(float64(have[0]-want[0])) > 1e-9 || math.Abs(float64(have[1]-want[1])) > 1e-9 {
			t.Errorf("band %d spans x %v, want %v", i, have, want)
		}
	}
}

// TestFaultMarkersLegend checks the legend names only the marks on the axis.
func TestFaultMarkersLegend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		have      []results.Fault
		want, not []string
	}{
		{"none", nil, nil, []string{seriesFault, seriesRecovery}},
		{"line only", []results.Fault{{AtS: 3, Kind: "pause"}}, []string{seriesFault}, []string{seriesRecovery}},
		{"line and band", []results.Fault{{AtS: 3, Kind: "pause", RecoveredS: 4}}, []string{seriesFault, seriesRecovery}, nil},
		{"off the axis", []results.Fault{{AtS: 30, Kind: "pause", RecoveredS: 40}}, nil, []string{seriesFault, seriesRecovery, "pause"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPlot("t", timeLabel, "y")
			p.Add(faultBands(tt.have))
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 10, 0, 1
			addFaultMarkers(p, tt.have)
			d, _ := drawRecorded(t, p)
			for _, w := range tt.want {
				if _, ok := d.labels[w]; !ok {
					t.Errorf("no legend entry %q", w)
				}
			}
			for _, w := range tt.not {
				if _, ok := d.labels[w]; ok {
					t.Errorf("text %q drawn", w)
				}
			}
		})
	}
}

// TestFaultMarkersLogX checks that a log-scaled x axis, which cannot transform 0, survives a
// fault at t=0 and a band starting there: positions are clamped to the axis first.
func TestFaultMarkersLogX(t *testing.T) {
	t.Parallel()
	faults := []results.Fault{{AtS: 0, Kind: "at-zero", RecoveredS: 5}, {AtS: 10, Kind: "ten"}}
	p := newPlot("t", "x", "y")
	p.Add(faultBands(faults))
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, 100, 0, 1
	addFaultMarkers(p, faults)
	d, dc := drawRecorded(t, p)
	trX, _ := p.Transforms(&dc)
	if _, ok := d.labels["at-zero"]; ok {
		t.Errorf("a fault at 0 drawn on an axis starting at 1")
	}
	if _, ok := d.labels["ten"]; !ok {
		t.Errorf("no label for the fault at 10")
	}
	if len(d.bands) != 2 || d.bands[0] != [2]vg.Length{trX(1), trX(5)} {
		t.Errorf("bands %v, want [%v %v] and the legend's", d.bands, trX(1), trX(5))
	}
}

// TestLegendFits checks every legend label fits the legend column (a longer one is cut off at
// the canvas edge, as CLUSTERDOWN was).
func TestLegendFits(t *testing.T) {
	t.Parallel()
	l := plot.NewLegend()
	room := legendWidth - vg.Points(legendLeft)
	for name := range palette {
		if w := l.ThumbnailWidth + l.TextStyle.Width(" "+name); w > room {
			t.Errorf("legend entry %q needs %v pt, the column has %v", name, w.Points(), room.Points())
		}
	}
	if w := l.ThumbnailWidth + l.TextStyle.Width(" "+seriesRecovery); w > room {
		t.Errorf("legend entry %q needs %v pt, the column has %v", seriesRecovery, w.Points(), room.Points())
	}
}
