package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"ratelab/results"
)

// TestWriteTextFaults: each fault line says what the generator saw: recovery counted from the
// injection, or from the end of a lasting fault; a fault detected and never recovered says so;
// a fault no decision noticed is not called "not recovered".
func TestWriteTextFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have results.Fault
		want string
	}{
		{"recovered", results.Fault{AtS: 10, Kind: "kill-primary", Target: "n1", DetectedS: 10, RecoveredS: 12.5},
			"kill-primary at 10.0 s on n1: detected at 10 s, recovered 2.5 s after"},
		{"lasting", results.Fault{AtS: 10, Kind: "pause", Target: "n1", DetectedS: 10, RecoveredS: 14, ForS: 3},
			"pause at 10.0 s on n1: detected at 10 s, recovered 1.0 s after it ended (lasted 3 s)"},
		{"never recovered", results.Fault{AtS: 10, Kind: "kill-primary", Target: "n1", DetectedS: 11},
			"kill-primary at 10.0 s on n1: detected at 11 s, not recovered"},
		{"unnoticed", results.Fault{AtS: 20, Kind: "restart", Target: "n1"},
			"restart at 20.0 s on n1: no errors seen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := results.NewSummary("x", 1, time.Unix(0, 0))
			s.Faults = []results.Fault{tc.have}
			var b bytes.Buffer
			if err := WriteText(&b, s, ""); err != nil {
				t.Fatal(err)
			}
			var line string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.Contains(l, "fault ") {
					line = l
				}
			}
			if !strings.HasSuffix(line, tc.want) {
				t.Errorf("fault line = %q, want it to end with %q", line, tc.want)
			}
		})
	}
}
