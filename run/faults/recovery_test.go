package faults

import (
	"ratelab/results"
	"testing"
)

func TestMeasureRecovery(t *testing.T) {
	t.Parallel()
	row := func(sent, errs int64) results.Interval { return results.Interval{Sent: sent, Timeout: errs} }
	rows := []results.Interval{row(100, 0), row(100, 0), row(100, 50), row(100, 9), row(100, 0), row(100, 0),
		row(100, 30), row(100, 0), row(100, 1), row(100, 0), row(100, 0), row(100, 1), row(100, 0),
		row(100, 40), row(100, 40)}
	faults := []results.Fault{{AtS: 2.1}, {AtS: 6}, {AtS: 9.5}, {AtS: 11}, {AtS: 13}}
	MeasureRecovery(faults, rows)
	// Fault 0: trouble in 2 and 3, quiet from 4 (row 6 belongs to fault 1).
	// Fault 1: trouble in 6, quiet from 7 (1 error in 100 is under the 1% noise floor).
	// Fault 2: no trouble in its seconds: neither detected nor recovered.
	// Fault 3: trouble, but never above the noise floor: recovered when detected.
	// Fault 4: trouble until the end: detected, never recovered.
	want := []results.Fault{{AtS: 2.1, DetectedS: 2.1, RecoveredS: 4}, {AtS: 6, DetectedS: 6, RecoveredS: 7}, {AtS: 9.5},
		{AtS: 11, DetectedS: 11, RecoveredS: 11}, {AtS: 13, DetectedS: 13}}
	for i := range want {
		if faults[i] != want[i] {
			t.Errorf("fault %d = %+v, want %+v", i, faults[i], want[i])
		}
	}

	// A long run: trouble is charged to a fault only near it, and recovery is the first clean
	// cleanForS, not the last bad second before the next fault.
	long := make([]results.Interval, 400)
	for i := range long {
		long[i] = row(100, 0)
	}
	bad := func(secs ...int) {
		for _, s := range secs {
			long[s] = row(100, 20)
		}
	}
	bad(10, 11, 12, 30) // fault 0 (kill at 10): recovers at 13; 30 is within cleanForS of 13
	bad(100, 160)       // fault 1 (kill at 100): recovers at 101; 160 is a lone stall much later
	bad(250)            // fault 2 (latency at 200 for 30 s): first trouble 20 s after it ended
	bad(315)            // fault 3 (pause at 300 for 10 s): trouble 5 s after it ended is its own
	faults = []results.Fault{{AtS: 10}, {AtS: 100}, {AtS: 200, ForS: 30}, {AtS: 300, ForS: 10}}
	MeasureRecovery(faults, long)
	want = []results.Fault{{AtS: 10, DetectedS: 10, RecoveredS: 31}, {AtS: 100, DetectedS: 100, RecoveredS: 101},
		{AtS: 200, ForS: 30}, {AtS: 300, ForS: 10, DetectedS: 315, RecoveredS: 316}}
	for i := range want {
		if faults[i] != want[i] {
			t.Errorf("long run: fault %d = %+v, want %+v", i, faults[i], want[i])
		}
	}
}
