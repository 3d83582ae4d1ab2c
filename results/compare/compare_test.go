package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// writeReps writes one summary per p99 value into dir/rep-NN/summary.json, the layout of
// `ratelab run --repeat`. Other metrics follow p99 so every row has data.
func writeReps(t *testing.T, dir string, p99s []float64, mod func(i int, s *results.Summary)) string {
	t.Helper()
	for i, p99 := range p99s {
		s := results.NewSummary("synthetic", 7, time.Unix(1700000000, 0))
		s.DurationS = 2
		s.LatencyMs = results.Latency{P50: results.Ms(p99 / 4), P90: results.Ms(p99 / 2), P99: results.Ms(p99),
			P999: results.Ms(1.5 * p99), Max: results.Ms(2 * p99), MeasurablePct: 100}
		s.Load.OfferedRPS, s.Load.AchievedRPS, s.Load.Completed = 300, 299+float64(i%3)/10, 600
		s.Outcomes.Allowed, s.Outcomes.Denied = 500, 100
		s.CPU = &results.CPU{WallS: 2, Cores: 2, Generator: 0.05 + float64(i%3)/1000}
		if mod != nil {
			mod(i, s)
		}
		rep := filepath.Join(dir, fmt.Sprintf("rep-%02d", i+1))
		if err := os.MkdirAll(rep, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.WriteSummary(filepath.Join(rep, results.SummaryFile), s); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// noisy draws n p99 values around center with ±spread uniform noise from a seeded source.
func noisy(seed uint64, n int, center, spread float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = center + spread*(2*r.Float64()-1)
	}
	return out
}

func load(t *testing.T, paths ...string) *Set {
	t.Helper()
	s, err := Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func row(t *testing.T, r *Report, name string) Row {
	t.Helper()
	for _, row := range r.Rows {
		if row.Metric.Name == name {
			return row
		}
	}
	t.Fatalf("no row %s", name)
	return Row{}
}

func TestSameDistributionIsNoRegression(t *testing.T) {
	t.Parallel()
	// Many seeds: with alpha 0.05 a few pairs differ significantly by chance, but a regression
	// also needs a worse median beyond +10%, which ±8% noise around one center cannot produce.
	for seed := uint64(1); seed <= 40; seed++ {
		base := load(t, writeReps(t, t.TempDir(), noisy(seed, 6, 2.0, 0.16), nil))
		next := load(t, writeReps(t, t.TempDir(), noisy(seed+1000, 6, 2.0, 0.16), nil))
		rep, err := Compare(base, next, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Regressed() {
			var b strings.Builder
			rep.WriteText(&b)
			t.Fatalf("seed %d: regression on one distribution:\n%s", seed, b.String())
		}
	}
}

func TestShiftedDistributionIsSignificantRegression(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), noisy(1, 5, 1.0, 0.1), nil))
	// +2 ms on a 1 ms p99: what a 1 ms delay each way through the proxies adds.
	slow := load(t, writeReps(t, t.TempDir(), noisy(2, 5, 3.0, 0.1), func(i int, s *results.Summary) {
		s.Load.AchievedRPS = 250 // and the rate drops by a sixth
	}))
	rep, err := Compare(base, slow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p99 := row(t, rep, "p99_ms")
	if p99.Verdict != Regression || p99.P >= 0.05 || p99.DeltaPct < 150 {
		t.Errorf("p99 row %+v: want a significant regression of about +200%%", p99)
	}
	// 5 runs against 5 that do not overlap: the smallest p a two-sided U test can give, 2/C(10,5).
	if want := 2.0 / 252; math.Abs(p99.P-want) > 1e-12 {
		t.Errorf("p = %v, want %v", p99.P, want)
	}
	if v := row(t, rep, "achieved_rps").Verdict; v != Regression {
		t.Errorf("achieved_rps verdict %q: a lower rate is worse", v)
	}
	if !rep.Regressed() || !strings.Contains(strings.Join(rep.Regressions(), ","), "p99_ms") {
		t.Errorf("regressions %v", rep.Regressions())
	}
	// The same shift the other way is an improvement, never a failure.
	back, err := Compare(slow, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := row(t, back, "p99_ms").Verdict; v != Improved {
		t.Errorf("reverse p99 verdict %q, want improved", v)
	}
	if v := row(t, back, "achieved_rps").Verdict; v != Improved {
		t.Errorf("reverse achieved_rps verdict %q, want improved", v)
	}
}

func TestSmallShiftWithinThreshold(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), []float64{1.00, 1.01, 1.02, 1.03, 1.04, 1.05}, nil))
	next := load(t, writeReps(t, t.TempDir(), []float64{1.06, 1.07, 1.08, 1.09, 1.10, 1.11}, nil))
	rep, err := Compare(base, next, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, rep, "p99_ms"); r.Verdict != WorseWithin || r.P >= 0.05 {
		t.Errorf("p99 %+v: +6%% significant is worse but within the default +10%%", r)
	}
	// The same data against a 5% threshold fails.
	rep, err = Compare(base, next, Options{Thresholds: map[string]Threshold{"p99_ms": {Value: 0.05, Relative: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, rep, "p99_ms"); r.Verdict != Regression {
		t.Errorf("p99 verdict %q with a 5%% threshold, want a regression", r.Verdict)
	}
}

func TestTooFewRunsForAVerdict(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), []float64{1, 1.1}, nil))
	slow := load(t, writeReps(t, t.TempDir(), []float64{5, 5.5}, nil))
	rep, err := Compare(base, slow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Regressed() {
		t.Error("2 runs against 2 cannot be significant, yet a regression was reported")
	}
	if r := row(t, rep, "p99_ms"); r.Verdict != TooFew || r.P < 0.3 {
		t.Errorf("p99 %+v: want %q with p = 1/3", r, TooFew)
	}
	if rep.MinRuns != 4 {
		t.Errorf("MinRuns %d, want 4 (2/C(8,4) = 0.029 < 0.05)", rep.MinRuns)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !rep.NoVerdict {
		t.Error("NoVerdict is false with 2 runs against 2")
	}
	for _, want := range []string{"at least 4 runs in each set", "±∞", "too few runs for a verdict", "NO VERDICT: 2 and 2 runs"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestOverspendJudgedByAbsoluteThreshold(t *testing.T) {
	t.Parallel()
	ratio := func(r float64) func(int, *results.Summary) {
		return func(i int, s *results.Summary) { s.Overspend.Ratio = r + float64(i)*1e-6 }
	}
	p99 := []float64{1, 1, 1, 1, 1, 1}
	base := load(t, writeReps(t, t.TempDir(), p99, ratio(1e-5)))
	tiny := load(t, writeReps(t, t.TempDir(), p99, ratio(5e-5)))    // +400%, but 4 in 100,000
	large := load(t, writeReps(t, t.TempDir(), p99, ratio(2.5e-3))) // 2.5 in 1,000
	rep, _ := Compare(base, tiny, Options{})
	if r := row(t, rep, "overspend_ratio"); r.Verdict != WorseWithin {
		t.Errorf("tiny overspend increase: %+v, want worse within the absolute threshold", r)
	}
	rep, _ = Compare(base, large, Options{})
	if r := row(t, rep, "overspend_ratio"); r.Verdict != Regression {
		t.Errorf("overspend +2.5e-3: %+v, want a regression", r)
	}
	if r := row(t, rep, "p99_ms"); r.Verdict != NoChange || r.P != 1 {
		t.Errorf("identical p99s: %+v, want p = 1 and no change", r)
	}
}

func TestLoadLayoutsAndErrors(t *testing.T) {
	t.Parallel()
	reps := writeReps(t, t.TempDir(), []float64{1, 2, 3}, func(i int, s *results.Summary) {
		s.Interrupted = i == 2
	})
	set := load(t, reps)
	if len(set.Runs) != 2 || len(set.Skipped) != 1 || !strings.Contains(set.Skipped[0], "rep-03") {
		t.Errorf("runs %d skipped %v: want the interrupted rep-03 left out", len(set.Runs), set.Skipped)
	}
	// A single run directory and several paths make one set.
	one := filepath.Join(reps, "rep-01")
	set = load(t, one, filepath.Join(reps, "rep-02", results.SummaryFile))
	if len(set.Runs) != 2 {
		t.Errorf("two paths: %d runs", len(set.Runs))
	}
	empty := t.TempDir()
	_, err := Load(empty)
	if !errors.Is(err, ErrNoRuns) || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "rep-*/summary.json") {
		t.Errorf("empty dir: %v: want ErrNoRuns naming the path and what is missing", err)
	}
	_, err = Load(filepath.Join(empty, "nope"))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing path: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "summary.json")
	os.WriteFile(bad, []byte(`{"schema":"other"}`), 0o644)
	if _, err := Load(bad); !errors.Is(err, results.ErrSchema) {
		t.Errorf("foreign file: %v, want ErrSchema", err)
	}
}

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		have    string
		key     string
		want    Threshold
		wantErr string
	}{
		{have: "p99_ms=15%", key: "p99_ms", want: Threshold{0.15, true}},
		{have: "overspend_ratio=+0.002", key: "overspend_ratio", want: Threshold{0.002, false}},
		{have: " achieved_rps = 3% ", key: "achieved_rps", want: Threshold{0.03, true}},
		{have: "p98_ms=5%", wantErr: "unknown metric"},
		{have: "p99_ms", wantErr: "key=value"},
		{have: "p99_ms=fast", wantErr: "not a number"},
		{have: "p99_ms=-5%", wantErr: "not a number >= 0"},
	} {
		key, th, err := ParseThreshold(c.have)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err %v, want %q", c.have, err, c.wantErr)
			}
			continue
		}
		if err != nil || key != c.key || math.Abs(th.Value-c.want.Value) > 1e-12 || th.Relative != c.want.Relative {
			t.Errorf("%q: %s %+v %v, want %s %+v", c.have, key, th, err, c.key, c.want)
		}
	}
}

func TestMedianCI(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4, 5, 6}
	lo, hi, cov := medianCI(xs, 0.95)
	if lo != 1 || hi != 6 || math.Abs(cov-(1-2.0/64)) > 1e-12 {
		t.Errorf("n=6: [%v, %v] %v, want [1, 6] covering 1-2/64", lo, hi, cov)
	}
	if lo, _, _ := medianCI(xs[:5], 0.95); !math.IsInf(lo, -1) {
		t.Errorf("n=5: lower bound %v, want -Inf (5 values cannot cover 95%%)", lo)
	}
	if n := minRunsForCI(0.95); n != 6 {
		t.Errorf("minRunsForCI(0.95) = %d, want 6", n)
	}
	if m := median([]float64{1, 2, 3, 10}); m != 2.5 {
		t.Errorf("median %v", m)
	}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), noisy(1, 5, 1.0, 0.1), nil))
	slow := load(t, writeReps(t, t.TempDir(), noisy(2, 5, 3.0, 0.1), nil))
	rep, _ := Compare(base, slow, Options{})
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"| metric | BASE median |", "| --- |", "**REGRESSION**", "FAIL: significant regression beyond threshold in p50_ms, p99_ms, p999_ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// A metric some run's summary lacks (the generator's CPU in an older ratelab's summary) is not
// compared, whatever the other metrics say, and a note names it; Options.Metrics picks the rows.
func TestMissingMetricIsNotCompared(t *testing.T) {
	t.Parallel()
	base := load(t, writeReps(t, t.TempDir(), noisy(1, 6, 1, 0.1), func(_ int, s *results.Summary) { s.CPU = nil }))
	next := load(t, writeReps(t, t.TempDir(), noisy(2, 6, 3, 0.1), nil))
	rep, err := Compare(base, next, Options{Metrics: []string{"p99_ms", "generator_cpu_us"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Metric.Name != "p99_ms" || rep.Rows[1].Metric.Name != "generator_cpu_us" {
		t.Fatalf("rows %v: want p99_ms and generator_cpu_us", rep.Rows)
	}
	if have := rep.Rows[1].Verdict; have != NotMeasured {
		t.Errorf("generator_cpu_us without BASE's cpu section: verdict %q, want %q", have, NotMeasured)
	}
	if have := rep.Regressions(); len(have) != 1 || have[0] != "p99_ms" {
		t.Errorf("regressions %v, want [p99_ms]", have)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "generator_cpu_us is missing from 6 of 6 BASE and 0 of 6 NEW runs") {
		t.Errorf("notes %q: want one naming the missing metric", rep.Notes)
	}
	var buf strings.Builder
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "NaN") {
		t.Errorf("text table prints NaN:\n%s", buf.String())
	}
	if _, err := Compare(base, next, Options{Metrics: []string{"p98_ms"}}); err == nil || !strings.Contains(err.Error(), `"p98_ms"`) {
		t.Errorf("unknown metric p98_ms: error %v, want one naming it", err)
	}
}

// The generator's CPU per decision regresses like any relative metric: 10% more CPU in every
// NEW run is beyond the default 5%.
func TestGeneratorCPURegresses(t *testing.T) {
	t.Parallel()
	cpu := func(scale float64) func(i int, s *results.Summary) {
		return func(i int, s *results.Summary) { s.CPU.Generator = scale * (0.05 + float64(i%4)/2000) }
	}
	base := load(t, writeReps(t, t.TempDir(), noisy(3, 6, 1, 0.1), cpu(1)))
	next := load(t, writeReps(t, t.TempDir(), noisy(4, 6, 1, 0.1), cpu(1.1)))
	rep, err := Compare(base, next, Options{Metrics: []string{"generator_cpu_us"}})
	if err != nil {
		t.Fatal(err)
	}
	if row := rep.Rows[0]; row.Verdict != Regression || math.Abs(row.DeltaPct-10) > 0.5 {
		t.Errorf("generator_cpu_us +10%%: verdict %q, delta %.2f%%; want %q near +10%%", row.Verdict, row.DeltaPct, Regression)
	}
}
