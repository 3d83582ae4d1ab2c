package report

import (
	"slices"
	"testing"

	"ratelab/results"
)

func TestFaultReading(t *testing.T) {
	t.Parallel()
	// Seconds 0..9; second i has i failed decisions (errors 1 and failed-closed i-1 from 1 on)
	// and one overspend request in seconds 4 and 5.
	var rows []results.Interval
	for i := range 10 {
		r := results.Interval{TS: float64(i)}
		if i > 0 {
			r.Errors, r.FailedClosed = 1, int64(i-1)
		}
		if i == 4 || i == 5 {
			r.Overspend = 1
		}
		rows = append(rows, r)
	}
	tests := []struct {
		name string
		have results.Fault
		rows []results.Interval
		want string
	}{
		{"detected and recovered", results.Fault{AtS: 2, DetectedS: 3.1, RecoveredS: 4.5}, rows,
			"detected after 1.1 s, recovered 2.5 s after injection; in 2–5 s: 9 failed decisions, 1 overspend request"},
		{"recovered only", results.Fault{AtS: 4, RecoveredS: 6.3}, rows,
			"recovered 2.3 s after injection; in 4–7 s: 15 failed decisions, 2 overspend requests"},
		{"detected only: lasts to the end", results.Fault{AtS: 8.5, DetectedS: 9}, rows,
			"detected after 0.5 s, no recovery seen before the run ended; in 8–10 s: 17 failed decisions, 0 overspend requests"},
		{"nothing observed", results.Fault{AtS: 9}, rows,
			"neither detection nor recovery recorded; in 9–10 s: 9 failed decisions, 0 overspend requests"},
		{"at t=0", results.Fault{AtS: 0, RecoveredS: 1}, rows,
			"recovered 1 s after injection; in 0–1 s: 0 failed decisions, 0 overspend requests"},
		{"at the end of the data", results.Fault{AtS: 10, RecoveredS: 12}, rows,
			"recovered 2 s after injection"},
		{"beyond the last row", results.Fault{AtS: 30, DetectedS: 31}, rows,
			"injected outside the recorded 0–10 s, so not on the charts; detected after 1 s, no recovery seen before the run ended"},
		{"before the first row", results.Fault{AtS: -2, RecoveredS: 1.5}, rows,
			"injected outside the recorded 0–10 s, so not on the charts; recovered 3.5 s after injection; in 0–2 s: 1 failed decision, 0 overspend requests"},
		{"recovered at injection", results.Fault{AtS: 3, RecoveredS: 3}, rows,
			"recovered at injection: no interruption seen"},
		{"recovery before injection", results.Fault{AtS: 3, RecoveredS: 2}, rows,
			"recovered_s 2 is before at_s: the summary's fault entry is inconsistent"},
		{"detection before injection", results.Fault{AtS: 3, DetectedS: 1, RecoveredS: 5}, rows,
			"detected_s 1 is before at_s: the summary's fault entry is inconsistent; in 3–5 s: 7 failed decisions, 1 overspend request"},
		{"no rows", results.Fault{AtS: 3, DetectedS: 4}, nil,
			"detected after 1 s, no recovery seen before the run ended"},
	}
	for _, tt := range tests {
		if have := faultReading(tt.have, tt.rows); have != tt.want {
			t.Errorf("%s:\nhave %q\nwant %q", tt.name, have, tt.want)
		}
	}
}

func TestFaultRows(t *testing.T) {
	t.Parallel()
	have := faultRows([]results.Fault{
		{AtS: 8, Kind: "kill-primary", Target: "127.0.0.1:7001", DetectedS: 9.1, RecoveredS: 10.4},
		{AtS: 0.25, Kind: "pause", Target: "127.0.0.1:7002"},
	}, nil)
	want := []faultRow{
		{At: "8", Kind: "kill-primary", Target: "127.0.0.1:7001", Detected: "9.1", Recovered: "10.4",
			Reading: "detected after 1.1 s, recovered 2.4 s after injection"},
		{At: "0.25", Kind: "pause", Target: "127.0.0.1:7002", Detected: "—", Recovered: "—",
			Reading: "neither detection nor recovery recorded"},
	}
	if !slices.Equal(have, want) {
		t.Errorf("have %+v\nwant %+v", have, want)
	}
}
