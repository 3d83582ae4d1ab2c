package wild

import (
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestRecoveryCell: the table's recovery cell reads a run's fault as the text summary does —
// seconds from the fault's end, never, no errors — and a run without a fault has none.
func TestRecoveryCell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults []results.Fault
		want   string
	}{
		{"no fault", nil, "-"},
		{"kill", []results.Fault{{AtS: 4, DetectedS: 4, RecoveredS: 6.5}}, "2.5 s"},
		{"pause", []results.Fault{{AtS: 4, ForS: 2, DetectedS: 4, RecoveredS: 7}}, "1.0 s"},
		{"never", []results.Fault{{AtS: 4, DetectedS: 4}}, "never"},
		{"unseen", []results.Fault{{AtS: 4, ForS: 2}}, "no errors"},
		{"failed", []results.Fault{{AtS: 4, Failed: true}}, "failed"},
	} {
		if got := recovery(tc.faults); got != tc.want {
			t.Errorf("%s: recovery = %q, want %q", tc.name, got, tc.want)
		}
	}
	s := results.NewSummary("x", 1, time.Unix(0, 0))
	s.Faults = []results.Fault{{AtS: 4, DetectedS: 4, RecoveredS: 6.5}}
	table := Table([]Row{{Variant: DefaultVariants[0], Fault: "kill-primary", Summary: s}})
	if !strings.Contains(table, "recovered after the fault |") || !strings.HasSuffix(strings.TrimSpace(table), "| 2.5 s |") {
		t.Errorf("table lacks the recovery column or its cell:\n%s", table)
	}
}
