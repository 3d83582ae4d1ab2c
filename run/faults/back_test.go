package faults

import (
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/scenarios"
)

// TestIsolatedWindow: an isolated primary acknowledges writes for up to 1.5 node timeouts plus a
// cron period; min-replicas-to-write cuts that to the max lag plus two seconds when that is
// shorter, and never lengthens it.
func TestIsolatedWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		nodeTimeout, lag, want time.Duration
	}{
		{time.Second, 0, 1600 * time.Millisecond},
		{2 * time.Second, time.Second, 3 * time.Second},
		{3 * time.Second, time.Second, 3 * time.Second},
		{time.Second, 10 * time.Second, 1600 * time.Millisecond},
	} {
		r := New(nil, nil, nil, nil, Config{NodeTimeout: tt.nodeTimeout, MinReplicasLag: tt.lag})
		if got := r.isolatedWindow(); got != tt.want {
			t.Errorf("node timeout %s, max lag %s: window %s, want %s", tt.nodeTimeout, tt.lag, got, tt.want)
		}
	}
}

func TestFaultNameAndRanges(t *testing.T) {
	t.Parallel()
	if n := faultName(scenarios.FaultSpec{Kind: scenarios.FaultPartition}); n != "partition hottest" {
		t.Errorf("faultName = %q, want the default target named", n)
	}
	l := Loss{Slots: []cluster.SlotRange{{Start: 0, End: 10}, {Start: 100, End: 100}}}
	for slot, want := range map[int]bool{0: true, 10: true, 11: false, 100: true, 101: false} {
		if l.Covers(slot) != want {
			t.Errorf("Covers(%d) = %v, want %v", slot, !want, want)
		}
	}
}
