package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"ratelab/results"
)

// TestBenchfmtReadsBack writes two sets as benchfmt and reads the stream back with benchfmt's
// own Reader: every line parses, the side key splits the results into the two sets with their
// run counts, and each result carries its run's values in every unit.
func TestBenchfmtReadsBack(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), []float64{1, 1.1, 1.2, 1.3}, nil))
	next := load(t, writeReps(t, t.TempDir(), []float64{2, 2.1, 2.2, 2.3, 2.4, 2.5}, func(i int, s *results.Summary) {
		s.Overspend.Ratio = 0.01 * float64(i)
		if i == 5 {
			s.LatencyMs.P999 = results.Ms(math.Inf(1)) // not measurable: the largest float64
		}
	}))
	var buf bytes.Buffer
	if err := WriteBenchfmt(&buf, base, next); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(bytes.NewReader(buf.Bytes()), "compare.bench")
	have := map[string][]*benchfmt.Result{}
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("line does not parse: %v\n%s", rec, buf.String())
		case *benchfmt.Result:
			side := string(rec.GetConfig(SideKey))
			have[side] = append(have[side], rec.Clone())
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nBenchmarkRatelab/scenario=synthetic ") {
		t.Errorf("no line of benchmark BenchmarkRatelab/scenario=synthetic:\n%s", buf.String())
	}
	if len(have[SideBase]) != 4 || len(have[SideNew]) != 6 || len(have) != 2 {
		t.Fatalf("results per side: base %d, new %d, %d sides; want 4, 6, 2\n%s", len(have[SideBase]), len(have[SideNew]), len(have), buf.String())
	}
	for side, set := range map[string]*Set{SideBase: base, SideNew: next} {
		for i, res := range have[side] {
			s := set.Runs[i].Summary
			if got, want := string(res.Name), "Ratelab/scenario=synthetic"; got != want {
				t.Errorf("%s run %d: name %q, want %q", side, i, got, want)
			}
			if res.Iters != int(s.Load.Completed) {
				t.Errorf("%s run %d: iterations %d, want the decisions %d", side, i, res.Iters, s.Load.Completed)
			}
			if len(res.Values) != len(benchUnits) {
				t.Errorf("%s run %d: %d values, want %d", side, i, len(res.Values), len(benchUnits))
			}
			if v, _ := res.Value("p999-sec"); side == SideNew && i == 5 && v != math.MaxFloat64 {
				t.Errorf("%s run %d: p999-sec %v, want the largest float64 for not measurable", side, i, v)
			}
			for _, tt := range []struct {
				unit string
				want float64
			}{
				{"p99-sec", float64(s.LatencyMs.P99) / 1e3},
				{"achieved-req/s", s.Load.AchievedRPS},
				{"overspend-ratio", s.Overspend.Ratio},
			} {
				if v, ok := res.Value(tt.unit); !ok || math.Abs(v-tt.want) > 1e-12*math.Abs(tt.want) {
					t.Errorf("%s run %d: %s = %v (found %v), want %v", side, i, tt.unit, v, ok, tt.want)
				}
			}
		}
	}
	units := r.Units()
	for _, tt := range []struct {
		unit string
		want int
	}{{"p99-sec", -1}, {"achieved-req/s", 1}, {"error-ratio", -1}} {
		if got := units.GetBetter(tt.unit); got != tt.want {
			t.Errorf("unit %s: better %d, want %d", tt.unit, got, tt.want)
		}
	}
}

// TestReportJSON: the comparison prints as JSON even with a not-measurable latency (null).
func TestReportJSON(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), []float64{1, 1.1, 1.2, 1.3}, nil))
	next := load(t, writeReps(t, t.TempDir(), []float64{1, 1.1, 1.2, 1.3}, func(i int, s *results.Summary) {
		s.LatencyMs.P999 = results.Ms(math.Inf(1))
	}))
	rep, err := Compare(base, next, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back ReportJSON
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(back.Rows) != len(Metrics) || len(back.New.Runs) != 4 {
		t.Fatalf("rows %d, new runs %d; want %d, 4", len(back.Rows), len(back.New.Runs), len(Metrics))
	}
	for _, r := range back.Rows {
		if r.Metric == "p999_ms" && (r.NewMedian != nil || r.BaseMedian == nil) {
			t.Errorf("p999_ms medians: base %v new %v; want a number and null", r.BaseMedian, r.NewMedian)
		}
	}
}

// benchValues reads side's values in unit from a benchfmt stream, as benchstat does.
func benchValues(t *testing.T, stream []byte, side, unit string) []float64 {
	t.Helper()
	r := benchfmt.NewReader(bytes.NewReader(stream), "compare.bench")
	var out []float64
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok && string(res.GetConfig(SideKey)) == side {
			if v, ok := res.Value(unit); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// A run whose p99 was not measurable stays in benchstat's sample, as the slowest value: the
// median benchstat takes (benchmath's, over the values it reads) is the one compare takes, not
// the median of the runs that survived. Three of five runs not measurable put the median among
// them; one of five leaves it finite, at the third value, not the mean of the middle survivors.
func TestBenchstatMedianCountsUnmeasurableRuns(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		p99s []float64 // ms
	}{
		{"most runs not measurable", []float64{1, 2, inf, inf, inf}},
		{"one run not measurable", []float64{1, 2, 3, 4, inf}},
		{"every run not measurable", []float64{inf, inf, inf, inf, inf}},
	} {
		set := load(t, writeReps(t, t.TempDir(), []float64{1, 2, 3, 4, 5}, func(i int, s *results.Summary) {
			s.LatencyMs.P99 = results.Ms(tc.p99s[i])
		}))
		var buf bytes.Buffer
		if err := WriteBenchfmt(&buf, set, set); err != nil {
			t.Fatal(err)
		}
		vs := benchValues(t, buf.Bytes(), SideBase, "p99-sec")
		if len(vs) != len(tc.p99s) {
			t.Errorf("%s: benchstat reads %d p99 values of %d runs:\n%s", tc.name, len(vs), len(tc.p99s), buf.String())
			continue
		}
		ms := make([]float64, len(tc.p99s))
		copy(ms, tc.p99s)
		want := median(ms) / 1e3 // compare's median, in seconds
		got := benchmath.AssumeNothing.Summary(benchmath.NewSample(vs, &benchmath.DefaultThresholds), 0.95).Center
		switch {
		case math.IsInf(want, 1) && got < math.MaxFloat64/2:
			t.Errorf("%s: benchstat's median %v s; want it among the runs not measurable (above any latency)", tc.name, got)
		case !math.IsInf(want, 1) && math.Abs(got-want) > 1e-12:
			t.Errorf("%s: benchstat's median %v s, compare's %v s", tc.name, got, want)
		}
	}
}
