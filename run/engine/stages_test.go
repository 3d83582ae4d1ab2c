package engine

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// TestStagesRampAndFirstFailure runs a ramp from 0 to 3000 requests/s over 6 s, the rate at t
// being 500·t, through the noop limiter (it allows everything) for one tenant whose policy is
// 1000/s with a burst of 10. At the schedule's clock (limiter.clock: schedule) the envelope
// sees no overspend while the rate is below 1000/s, and overspends from 2.2 s on (the 10 tokens
// of burst cover the first 0.2 s above it): overspend_ratio must first fail in second 2, whose
// offered rate is the ramp's integral over it, 1250/s. The p99 bound is one the run cannot
// fail, so it is judged and absent from the failures.
func TestStagesRampAndFirstFailure(t *testing.T) {
	t.Parallel()
	spec, err := scenarios.Parse("ramp", []byte(`
name: ramp
load:
  concurrency: 4
  stages: [{to: 3000, over: 6s}]
tenants: {count: 1}
policy: {rate: 1000, burst: 10}
limiter: {kind: noop, clock: schedule}
slo: {overspend_ratio: 0.001, p99_ms: 1000}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sum, rows := readRun(t, res.Dir)
	checkConsistent(t, sum, rows)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want one per second of the 6 s the stages last", len(rows))
	}
	for k, r := range rows {
		want := 500 * (float64(k) + 0.5) // ∫ 500·t dt over [k, k+1)
		if math.Abs(float64(r.Offered)-want) > 1 {
			t.Errorf("second %d offered %d, want the ramp's %v ± 1", k, r.Offered, want)
		}
	}
	st := sum.Stages
	if st == nil {
		t.Fatal("summary has no stages section")
	}
	if strings.Join(st.Checked, ",") != "p99_ms,overspend_ratio" {
		t.Errorf("checked %v, want p99_ms and overspend_ratio", st.Checked)
	}
	if len(st.FirstFailure) != 1 {
		t.Fatalf("first failures %+v, want overspend_ratio's only", st.FirstFailure)
	}
	ff := st.FirstFailure[0]
	if ff.Check != "overspend_ratio" || ff.AtS != 2 || math.Abs(ff.OfferedRPS-1250) > 1 || ff.Value == nil || *ff.Value <= 0.001 {
		t.Errorf("first failure %+v (value %v): want overspend_ratio in second 2 at 1250 ± 1 offered/s", ff, ff.Value)
	}
	if ff.FailedSeconds != 4 {
		t.Errorf("overspend_ratio failed %d seconds, want 4 (seconds 2 to 5)", ff.FailedSeconds)
	}
	if st.PeakOfferedRPS < 2749 || st.PeakOfferedRPS > 2751 {
		t.Errorf("peak offered %v, want the last second's 2750", st.PeakOfferedRPS)
	}
	raw, err := os.ReadFile(filepath.Join(res.Dir, results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"first_failure"`) {
		t.Errorf("summary.json lacks stages.first_failure:\n%s", raw)
	}
}

func TestNoStagesNoSection(t *testing.T) {
	t.Parallel()
	spec := testSpec(t, "memory", 1000, time.Second)
	if newFirstFailures(spec) != nil || stagesNote(spec) != "" {
		t.Error("a run without load.stages judges stages")
	}
	if got := loadLine(spec); got != "1000 requests/s offered for 1s" {
		t.Errorf("load line %q", got)
	}
}
