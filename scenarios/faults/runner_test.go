package faults

import (
	"ratelab/scenarios"
	"ratelab/scenarios/check"
	"testing"
	"time"
)

func TestActiveKind(t *testing.T) {
	t.Parallel()
	specs := []scenarios.FaultSpec{
		{At: scenarios.Duration(5 * time.Second), Kind: scenarios.FaultKillPrimary},
		{At: scenarios.Duration(2 * time.Second), Kind: scenarios.FaultPause},
	}
	r := New(nil, specs, Hooks{HotKey: "k", CauseFor: func(string) check.Cause { return 9 }})
	if k := r.ActiveKind(3 * time.Second); k != "" {
		t.Errorf("no fault holding its cause: activeKind %q, want none", k)
	}
	release := r.hold("pause")
	tests := []struct {
		have time.Duration
		want string
	}{{time.Second, ""}, {2 * time.Second, string(scenarios.FaultPause)}, {4 * time.Second, string(scenarios.FaultPause)}, {6 * time.Second, string(scenarios.FaultKillPrimary)}}
	for _, tc := range tests {
		if k := r.ActiveKind(tc.have); k != tc.want {
			t.Errorf("activeKind(%v) = %q, want %q", tc.have, k, tc.want)
		}
	}
	release()
	if k := r.ActiveKind(6 * time.Second); k != "" {
		t.Errorf("after release: activeKind %q, want none", k)
	}
	var none *Runner
	if k := none.ActiveKind(time.Second); k != "" {
		t.Errorf("a run without faults: activeKind %q", k)
	}
}
