package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// regionsSummary is a multi-region summary with the regions given.
func regionsSummary(design string, periodS, cross float64, regions ...results.Region) *results.Summary {
	return &results.Summary{Regions: &results.Regions{Design: design, PeriodS: periodS, CrossRegionCallsPerS: cross, List: regions}}
}

func TestRegionsRowsSumTheRegionsAgainstTheGlobalEnvelope(t *testing.T) {
	dir := filepath.Join("out", "sweep")
	runs := []results.StudyRun{
		{Design: "global", Dir: filepath.Join(dir, "runs", "global"), Summary: regionsSummary("global", 0, 2000,
			results.Region{Name: "eu", Offered: 1000, Allowed: 600, Denied: 400, P99Ms: 2, Availability: 1, Overspend: 0, FalseDenies: 0},
			results.Region{Name: "us", Offered: 3000, Allowed: 1800, Denied: 1200, P99Ms: 64, Availability: 0.9, Overspend: 6, FalseDenies: 12},
		)},
		{Design: "split", Dir: filepath.Join(dir, "runs", "split"), Summary: regionsSummary("split", 0, 0,
			results.Region{Name: "eu", Offered: 1000, Allowed: 500, Denied: 500, P99Ms: 1, Availability: 1, FalseDenies: 100},
			results.Region{Name: "us", Offered: 3000, Allowed: 1900, Denied: 1100, P99Ms: 1.5, Availability: 1, Overspend: 50, FalseDenies: 50},
		)},
		// Worse than split on both axes: not on the front.
		{Design: "rebalance", PeriodS: 0.25, Dir: filepath.Join(dir, "runs", "rebalance-T250ms"), Summary: regionsSummary("rebalance", 0.25, 40,
			results.Region{Name: "eu", Offered: 1000, Allowed: 500, Denied: 500, P99Ms: 3, Availability: 1, FalseDenies: 200},
			results.Region{Name: "us", Offered: 3000, Allowed: 1900, Denied: 1100, P99Ms: 2, Availability: 1, Overspend: 50},
		)},
		{Design: "rebalance", PeriodS: 16, Dir: filepath.Join(dir, "runs", "rebalance-T16s"), Err: "engine: cluster did not start"},
	}
	rows := RegionsRows(dir, runs)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want one per run (the failed one kept): %+v", len(rows), rows)
	}
	g := rows[0]
	if g.Allowed != 2400 || g.Overspend != 6 || g.FalseDenies != 12 || g.OverspendRatio != 6.0/2400 || g.FalseDenyRatio != 12.0/1600 ||
		g.ErrorsPerAllowed != 18.0/2400 {
		t.Errorf("global: %+v; want allowed 2400, overspend 6 (6/2400), false denies 12 (12/1600 denied), errors per allowed 18/2400", g)
	}
	if g.WorstRegion != "us" || g.WorstP99Ms != 64 || g.MeanP99Ms != 33 || math.Abs(g.Availability-0.925) > 1e-12 || g.CrossRegionCallsPerS != 2000 {
		t.Errorf("global: worst %s %v, mean %v, availability %v, cross %v; want us 64, 33, 0.925 (weighted by offered), 2000",
			g.WorstRegion, g.WorstP99Ms, g.MeanP99Ms, g.Availability, g.CrossRegionCallsPerS)
	}
	if rows[0].Dir != "runs/global" || rows[2].Label != "rebalance T=250ms" || rows[3].Label != "rebalance T=16s" {
		t.Errorf("dir %q, labels %q %q; want runs/global, rebalance T=250ms, rebalance T=16s", rows[0].Dir, rows[2].Label, rows[3].Label)
	}
	if !rows[0].Pareto || !rows[1].Pareto || rows[2].Pareto || rows[3].Pareto {
		t.Errorf("Pareto %v %v %v %v; want global and split only (rebalance T=250ms is beaten by split, T=16s failed)",
			rows[0].Pareto, rows[1].Pareto, rows[2].Pareto, rows[3].Pareto)
	}
	f := rows[3]
	if f.Error != "engine: cluster did not start" || f.WorstP99Ms.Measurable() || f.Allowed != 0 {
		t.Errorf("failed row: %+v; want its error, no p99, no counts", f)
	}
}

func TestRegionsRowOfAOneRegionRun(t *testing.T) {
	s := &results.Summary{Outcomes: results.Outcomes{Allowed: 90, Denied: 10}, Load: results.Load{Offered: 200},
		Overspend: results.Overspend{Requests: 9, FalseDenies: 1}, LatencyMs: results.Latency{P99: 5}}
	r := RegionsRows(".", []results.StudyRun{{Design: "global", Dir: "x", Summary: s}})[0]
	if r.WorstRegion != "(whole run)" || r.WorstP99Ms != 5 || r.Availability != 0.5 || r.ErrorsPerAllowed != 10.0/90 || r.FalseDenyRatio != 0.1 {
		t.Errorf("one-region run: %+v; want the whole run's p99 5, availability 100/200, (9+1)/90", r)
	}
}

func TestRankDurability(t *testing.T) {
	tb := func(lo, hi int64) *results.TokensBack { return &results.TokensBack{Min: lo, Max: hi} }
	rows := []DurabilityRow{
		{Setting: "failed-first", Error: "boom"},
		{Setting: "async", TokensBack: tb(10, 40), SteadyP99Ms: 1},
		{Setting: "uncounted", SteadyP99Ms: 0.5},
		{Setting: "wait-slow", TokensBack: tb(0, 0), SteadyP99Ms: 9},
		{Setting: "wait-fast", TokensBack: tb(0, 0), SteadyP99Ms: 3},
		{Setting: "wait-unknown", TokensBack: tb(0, 900), SteadyP99Ms: 2},
		{Setting: "failed-second", Error: "bang"},
	}
	RankDurability(rows)
	want := []struct {
		setting string
		rank    int
	}{{"wait-fast", 1}, {"wait-slow", 2}, {"wait-unknown", 3}, {"async", 4}, {"uncounted", 5}, {"failed-first", 0}, {"failed-second", 0}}
	for i, w := range want {
		if rows[i].Setting != w.setting || rows[i].Rank != w.rank {
			t.Errorf("position %d: %s rank %d; want %s rank %d", i, rows[i].Setting, rows[i].Rank, w.setting, w.rank)
		}
	}
}

func TestFmtRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi int64
		want   string
	}{{0, 0, "0"}, {12, 12, "12"}, {3, 17, "3–17"}, {0, 12500, "0–12,500"}} {
		if got := fmtRange(c.lo, c.hi); got != c.want {
			t.Errorf("fmtRange(%d, %d) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
	for _, c := range []struct {
		tb              *results.TokensBack
		back, boundText string
	}{
		{nil, "not counted", "—"},
		{&results.TokensBack{Min: 2, Max: 9, Bound: 50, Verdict: results.VerdictWithin}, "2–9", "50 (within)"},
		{&results.TokensBack{Min: 60, Max: 60, Bound: 50, Verdict: results.VerdictBeyond}, "60", "50 (**beyond**)"},
		{&results.TokensBack{Min: 40, Max: 60, Bound: 50, Verdict: results.VerdictUndetermined}, "40–60", "50 (undetermined)"},
	} {
		if b, bd := fmtTokensBack(c.tb), fmtTokensBound(c.tb); b != c.back || bd != c.boundText {
			t.Errorf("tokens back %+v: %q, bound %q; want %q, %q", c.tb, b, bd, c.back, c.boundText)
		}
	}
	if got := fmtKinds(map[string]int64{"timeout": 3, "unreplicated": 40, "conn": 3}); got != "unreplicated 40, conn 3, timeout 3" {
		t.Errorf("fmtKinds: %q", got)
	}
}

func TestOnLogAxisClampsWhatALogAxisCannotShow(t *testing.T) {
	a := onLogAxis([]float64{0, -2, 0.5, 20, math.Inf(1), math.NaN()}, 1e-3)
	if a.Floor != 0.05 {
		t.Errorf("floor %v, want a tenth of the smallest positive value, 0.05", a.Floor)
	}
	wantVals := []float64{0.05, 0.05, 0.5, 20}
	for i, v := range wantVals {
		if a.Vals[i] != v || !a.Plotted[i] || a.Clamped[i] != (i < 2) {
			t.Errorf("value %d: %v plotted %v clamped %v; want %v plotted, clamped %v", i, a.Vals[i], a.Plotted[i], a.Clamped[i], v, i < 2)
		}
	}
	if a.Plotted[4] || a.Plotted[5] {
		t.Error("an infinite or NaN value is plotted; want it left out")
	}
	if !(a.Lo > 0 && a.Lo <= a.Floor && a.Hi >= 20) {
		t.Errorf("axis %v..%v; want > 0, holding %v..20", a.Lo, a.Hi, a.Floor)
	}
	z := onLogAxis([]float64{0, 0}, 0.1)
	if z.Floor != 0.1 || z.Vals[0] != 0.1 || !z.Clamped[1] || !(z.Lo > 0 && z.Lo <= 0.1 && z.Hi > z.Lo) {
		t.Errorf("all zero: %+v; want every value at the fallback floor 0.1 on a positive axis", z)
	}
}

// writeSeries writes a run's per-second files: each second's offered, decided and errors, and
// n answered latencies of lat each.
func writeSeries(t *testing.T, dir string, secs []results.Interval, lat []time.Duration) {
	t.Helper()
	w, err := results.CreateSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(time.Unix(1_700_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	for i, iv := range secs {
		h := results.NewHistogram()
		for range iv.Allowed + iv.Denied + iv.Errors {
			h.Record(lat[i])
		}
		if err := w.Write(iv, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDurabilityRowReadsSteadyStateAndFaultWindow(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "runs", "partition-async")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	ok := func(ts float64) results.Interval {
		return results.Interval{TS: ts, Offered: 100, Sent: 100, Allowed: 80, Denied: 20}
	}
	secs := []results.Interval{ok(0), ok(1), ok(2), ok(3),
		{TS: 4, Offered: 100, Sent: 100, Allowed: 30, Denied: 10, Errors: 60},
		{TS: 5, Offered: 100, Sent: 100, Allowed: 90, Denied: 10}, ok(6)}
	// Warm-up and fault seconds are slow: a steady state that took them in would show it.
	lat := []time.Duration{100 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 80 * time.Millisecond, 40 * time.Millisecond, 2 * time.Millisecond}
	writeSeries(t, run, secs, lat)
	s := &results.Summary{DurationS: 7, Outcomes: results.Outcomes{Allowed: 570, Denied: 150, Errors: 60}, Load: results.Load{Dropped: 3},
		Errors:     results.Errors{Timeout: 20, Conn: 40, Moved: 9},
		Faults:     []results.Fault{{AtS: 4.2, Kind: "partition", Target: "node:0", ForS: 1, RecoveredS: 5.5}},
		TokensBack: &results.TokensBack{Min: 3, Max: 8, Bound: 20}}
	// A run whose fault could not be carried out measured no fault: a failed row, whatever it holds.
	noFault := &results.Summary{DurationS: 7, TokensBack: &results.TokensBack{},
		Faults: []results.Fault{{AtS: 2, Kind: "partition", Failed: true, Error: "links cannot be cut"}}}
	rows := DurabilityRows(dir, []results.StudyRun{{Fault: "partition", Setting: "async", Dir: run, Summary: s}, {Fault: "partition", Setting: "wait", Err: "refused"},
		{Fault: "partition", Setting: "min-replicas", Dir: filepath.Join(dir, "runs", "none"), Summary: noFault}})
	if f := rows[2]; f.Setting != "min-replicas" || f.Rank != 0 || f.Error != "fault partition at 2s failed: links cannot be cut" {
		t.Errorf("row of a failed fault: %s rank %d error %q; want it unranked, last, saying which fault failed", f.Setting, f.Rank, f.Error)
	}
	r := rows[0]
	if r.SteadyFromS != 1 || r.SteadyToS != 4 || r.SteadyP99Ms > 3 || r.SteadyP50Ms < 1.9 {
		t.Errorf("steady state %g..%g s: p50 %v p99 %v; want seconds 1..4 at about 2 ms", r.SteadyFromS, r.SteadyToS, r.SteadyP50Ms, r.SteadyP99Ms)
	}
	if r.FaultAvailability == nil || *r.FaultAvailability != 0.7 || r.FaultFromS != 4.2 || r.FaultToS != 5.5 {
		t.Errorf("fault window %g..%g availability %v; want 4.2..5.5 (to the recovery), (40+100)/200 = 0.7", r.FaultFromS, r.FaultToS, r.FaultAvailability)
	}
	if r.Failed != 60 || r.Dropped != 3 || r.FailedByKind["conn"] != 40 || r.FailedByKind["timeout"] != 20 || r.FailedByKind["moved"] != 0 || len(r.Notes) != 0 {
		t.Errorf("failed %d %v dropped %d notes %v; want 60 (conn 40, timeout 20, no redirects), dropped 3, no notes", r.Failed, r.FailedByKind, r.Dropped, r.Notes)
	}
	if r.Rank != 1 || rows[1].Rank != 0 || rows[1].Error != "refused" {
		t.Errorf("ranks %d, %d (%q); want 1, then the failed row kept with rank 0 and its error", r.Rank, rows[1].Rank, rows[1].Error)
	}
}

func TestWriteTradeoffFilesKeepFailedRows(t *testing.T) {
	dir := t.TempDir()
	runs := []results.StudyRun{
		{Design: "global", Dir: filepath.Join(dir, "runs", "global"), Summary: regionsSummary("global", 0, 100,
			results.Region{Name: "eu", Offered: 10, Allowed: 10, P99Ms: 0, Availability: 1})}, // p99 0 and no errors: both axes clamp
		{Design: "split", Dir: filepath.Join(dir, "runs", "split"), Err: "no such built-in"},
	}
	rows, err := WriteRegionsSweep(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.json", "sweep.csv", "sweep.md", "tradeoff.png", "tradeoff.svg", "index.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if !strings.Contains(string(md), "no such built-in") || !strings.Contains(string(md), "[split](runs/split)") {
		t.Errorf("sweep.md lacks the failed row:\n%s", md)
	}
	c, _ := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	recs, err := csv.NewReader(bytes.NewReader(c)).ReadAll()
	if err != nil || len(recs) != 3 || recs[2][12] != "no such built-in" || recs[2][7] != "" {
		t.Errorf("sweep.csv: %v %q; want a header and 2 records, the failed one with its error and no p99", err, recs)
	}
	var j RegionsSweep
	b, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err := json.Unmarshal(b, &j); err != nil || j.Schema != SchemaRegionsSweep || len(j.Rows) != 2 || j.Rows[1].WorstP99Ms.Measurable() {
		t.Errorf("sweep.json: %v %+v; want 2 rows, the failed one's p99 null", err, j)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "tradeoff.svg"))
	if !strings.Contains(string(svg), "global (0)") || !strings.Contains(string(svg), "not plotted: split (failed)") {
		t.Errorf("tradeoff.svg: want the clamped point labelled \"global (0)\" and the failed row named as not plotted")
	}
	if len(rows) != 2 {
		t.Errorf("%d rows, want 2", len(rows))
	}
	d := t.TempDir()
	if _, err := WriteDurability(d, []results.StudyRun{{Fault: "partition", Setting: "wait", Dir: filepath.Join(d, "runs", "partition-wait"), Err: "unreplicated everywhere"}}); err != nil {
		t.Fatal(err)
	}
	dm, _ := os.ReadFile(filepath.Join(d, "durability.md"))
	if !strings.Contains(string(dm), "unreplicated everywhere") || !strings.Contains(string(dm), "| — | partition | [wait](runs/partition-wait) | not counted |") {
		t.Errorf("durability.md lacks the failed row, unranked:\n%s", dm)
	}
}
