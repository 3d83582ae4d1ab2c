package scenarios

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

func TestSLOEvaluate(t *testing.T) {
	t.Parallel()
	sum := results.NewSummary("x", 1, zeroTime)
	sum.DurationS = 20
	sum.LatencyMs = results.Latency{P99: 4, P999: 12}
	sum.Load = results.Load{OfferedRPS: 1000, AchievedRPS: 900, Completed: 1000}
	sum.Outcomes.Errors = 5
	sum.Overspend.Ratio = 0.002
	// The third fault left no trace (a restart of a replica, say): it never needed to recover.
	sum.Faults = []results.Fault{{AtS: 5, DetectedS: 5, RecoveredS: 7.5}, {AtS: 10, DetectedS: 10.5, RecoveredS: 0}, {AtS: 15}}
	// A fault that lasts is measured from its end: 4 s of latency, recovered 1.5 s after.
	lasting := results.NewSummary("x", 1, zeroTime)
	lasting.DurationS = 20
	lasting.Faults = []results.Fault{{AtS: 2, ForS: 4, DetectedS: 2, RecoveredS: 7.5}}
	slo := SLO{RecoveredS: new(2.0)}
	if c := slo.Evaluate(lasting).Checks; len(c) != 1 || c[0].Value != 1.5 || !c[0].Pass {
		t.Errorf("lasting fault: checks %+v, want recovered_s 1.5 (from its end at 6 s), pass", c)
	}
	tests := []struct {
		name  string
		flags []string
		pass  bool
		want  []string // "name limit value pass"
	}{
		{"none always passes", nil, true, nil},
		{"latency ok", []string{"p99_ms=5"}, true, []string{"p99_ms <= 5 4 true"}},
		{"latency fails", []string{"p99_ms=5", "p999_ms=10"}, false, []string{"p99_ms <= 5 4 true", "p999_ms <= 10 12 false"}},
		{"achieved is a floor", []string{"achieved_ratio=0.95"}, false, []string{"achieved_ratio >= 0.95 0.9 false"}},
		{"error ratio", []string{"error_ratio=0.01"}, true, []string{"error_ratio <= 0.01 0.005 true"}},
		{"overspend", []string{"overspend_ratio=0.001"}, false, []string{"overspend_ratio <= 0.001 0.002 false"}},
		// The second fault never recovered: it counts as the rest of the run (20 - 10 = 10 s).
		{"unrecovered fault", []string{"recovered_s=5"}, false, []string{"recovered_s <= 5 10 false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Spec
			for _, f := range tt.flags {
				if err := s.SetSLO(f); err != nil {
					t.Fatal(err)
				}
			}
			got := s.SLO.Evaluate(sum)
			if got.Pass != tt.pass {
				t.Errorf("pass = %v, want %v (%+v)", got.Pass, tt.pass, got.Checks)
			}
			var have []string
			for _, c := range got.Checks {
				have = append(have, strings.Join([]string{c.Name, ftoa(c.Limit), ftoa(c.Value), btoa(c.Pass)}, " "))
			}
			if strings.Join(have, "|") != strings.Join(tt.want, "|") {
				t.Errorf("checks = %q, want %q", have, tt.want)
			}
		})
	}
}

func TestSetSLOErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"p99_ms", "write key=value"},
		{"p99=5", "unknown key; use one of"},
		{"p99_ms=fast", `"fast" is not a number`},
	} {
		var s Spec
		if err := s.SetSLO(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SetSLO(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	s, err := Parse("x.yaml", []byte(validYAML+"slo: {overspend_ratio: 5, p99_ms: -1}\n"))
	if err == nil || !strings.Contains(err.Error(), "slo.overspend_ratio: 5: is a ratio") || !strings.Contains(err.Error(), "slo.p99_ms: -1") {
		t.Errorf("Parse = %v, %v; want both SLO fields rejected", s, err)
	}
}

var zeroTime = time.Time{}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func btoa(b bool) string { return strconv.FormatBool(b) }

// TestSLOFailsANotMeasurablePercentile: a p99 or p99.9 that falls among the dropped requests is
// not measurable, and a check on it fails however generous its limit: the served requests'
// percentile (small) must not pass a run that dropped most of its load.
func TestSLOFailsANotMeasurablePercentile(t *testing.T) {
	t.Parallel()
	sum := results.NewSummary("x", 1, zeroTime)
	sum.LatencyMs = results.Latency{P50: 3, P90: results.Unmeasurable, P99: results.Unmeasurable, P999: results.Unmeasurable, MeasurablePct: 85}
	sum.LatencyServedMs = results.ServedLatency{P50: 3, P99: 5, P999: 9}
	limit := 1e6
	slo := SLO{P99Ms: &limit, P999Ms: &limit}
	v := slo.Evaluate(sum)
	if v.Pass || len(v.Checks) != 2 || v.Checks[0].Pass || v.Checks[1].Pass {
		t.Errorf("verdict %+v: a not-measurable percentile must fail its check", v)
	}
}
