package capacity

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/scenarios"
)

const sweepScenario = `
name: sweep-test
tenants: {count: 1000, theta: 0.99}
load: {rate: 1000, concurrency: 16, max_inflight: 64}
policy: {rate: 100, burst: 200}
slo: {error_ratio: 1}
`

// A real sweep: 1 and 2 primaries, central and with leases, two 1-second steps each, on local
// clusters. The SLO cannot
// fail (how fast a shared CI machine is decides nothing here): the test checks the stepping, the
// knee at the max rate with its lower-bound note, and the outputs; the search's pass/fail logic
// is TestSearchBracketsTheKnee's.
func TestSweepOnLocalCluster(t *testing.T) {
	spec, err := scenarios.Parse("sweep-test", []byte(sweepScenario))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	none := 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Sweep(ctx, spec, SweepOptions{
		Primaries: []int{1, 2}, Limiters: []scenarios.LimiterKind{"token-bucket", "lease"}, Replicas: &none, StepDuration: time.Second,
		Search: Search{Start: 400, Factor: 2, Max: 800}, Out: dir, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Series) != 4 {
		t.Fatalf("%d series, want 2 sizes x 2 limiters", len(res.Series))
	}
	for i, s := range res.Series {
		if want := []string{"token-bucket", "lease"}[i%2]; s.Limiter != want || s.Steps[0].Limiter != want {
			t.Errorf("series %d: limiter %q (step %q), want %q", i, s.Limiter, s.Steps[0].Limiter, want)
		}
		if len(s.Steps) != 2 {
			t.Errorf("primaries %d: %d steps, want 400 and 800", s.Primaries, len(s.Steps))
		}
		if s.Knee == nil {
			t.Fatalf("primaries %d: no knee with an SLO that cannot fail: %+v", s.Primaries, s.Steps)
		}
		if s.Knee.Offered < 0.95*800 || s.Knee.Offered > 1.05*800 || s.Knee.Achieved <= 0 || s.Knee.P99Ms <= 0 {
			t.Errorf("primaries %d: knee %+v, want the 800/s step with a measured rate and p99", s.Primaries, *s.Knee)
		}
		if !strings.Contains(s.Note, "at least") {
			t.Errorf("primaries %d: note %q, want the knee flagged as a lower bound", s.Primaries, s.Note)
		}
		for _, st := range s.Steps {
			if _, err := os.Stat(filepath.Join(st.Dir, "summary.json")); err != nil {
				t.Errorf("step %s has no summary: %v", st.Dir, err)
			}
		}
	}
	if len(res.Fits) != 2 || res.Fits[0].USL != nil || !strings.Contains(res.Fits[0].Note, "3 or more") {
		t.Errorf("two sizes cannot fit three parameters: fits %+v", res.Fits)
	}
	var back SweepResult
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Schema != SchemaCapacity || len(back.Series) != 4 {
		t.Errorf("capacity.json: err %v schema %q series %d", err, back.Schema, len(back.Series))
	}
	for _, f := range []string{MarkdownFile, ChartStem + ".png", ChartStem + ".svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster-p1.json")); !os.IsNotExist(err) {
		t.Errorf("the sweep left its cluster state file behind (err %v)", err)
	}
}

// The writer with three sizes: USL fitted, its chart drawn, the knee table in the Markdown.
func TestWriteSweepWithUSL(t *testing.T) {
	t.Parallel()
	res := &SweepResult{Schema: SchemaCapacity, Scenario: "synthetic", Mode: "central", Dir: t.TempDir(),
		Search: Search{Start: 1000, Factor: 2, Max: 64000, Bisect: 3, Tolerance: 0.05}, SLO: []string{"p99_ms <= 25"}}
	for n := 1; n <= 4; n++ {
		x := uslX(10_000, 0.1, 0.02, float64(n))
		steps := []Step{
			{Primaries: n, Phase: "step", Offered: x / 2, Achieved: x / 2, P99Ms: 1, Pass: true},
			{Primaries: n, Phase: "step", Offered: x, Achieved: x, P99Ms: 3, Pass: true},
			{Primaries: n, Phase: "step", Offered: 2 * x, Achieved: x, P99Ms: 40, Failed: []string{"p99_ms <= 25"}},
		}
		res.Series = append(res.Series, Series{Primaries: n, Limiter: "token-bucket", Steps: steps, Knee: &steps[1]})
	}
	fitUSL(res)
	if len(res.Fits) != 1 || res.Fits[0].USL == nil || res.Fits[0].USL.R2 < 0.999 {
		t.Fatalf("fits %+v: four exact points must fit", res.Fits)
	}
	if err := writeSweep(res); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 4 | token-bucket | 25974 | 25974 |", "sigma = 0.1000", "N* = sqrt", "fail: p99_ms <= 25"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("capacity.md lacks %q:\n%s", want, md)
		}
	}
	if st, err := os.Stat(filepath.Join(res.Dir, USLChartStem+".png")); err != nil || st.Size() == 0 {
		t.Errorf("usl.png: %v", err)
	}
}
