package check

import (
	"fmt"
	"testing"

	"ratelab/limiter"
)

func TestWindowEnvelope(t *testing.T) {
	t.Parallel()
	type obs struct {
		ms      int64
		cost    int64
		allowed bool
		want    Verdict
	}
	c := Cause(limiter.Central)
	tests := []struct {
		name string
		obs  []obs
	}{
		{"limit then overspend", []obs{{1000, 1, true, Conforming}, {1100, 1, true, Conforming}, {1200, 1, true, Conforming}, {1300, 1, true, Overspend}}},
		// 3 per 1000 ms: the window slides, so a token frees 1000 ms after it was taken.
		{"sliding", []obs{{0 + 1000, 1, true, Conforming}, {1500, 1, true, Conforming}, {1600, 1, true, Conforming},
			{1999, 1, true, Overspend}, {2000, 1, true, Conforming}, {2001, 1, false, Denied}, {2500, 1, false, FalseDeny}}},
		// The fixed window's double burst: 3 at 1999 and 3 at 2000 are 6 in one sliding second.
		{"fixed window double burst", []obs{{1999, 1, true, Conforming}, {1999, 1, true, Conforming}, {1999, 1, true, Conforming},
			{2000, 1, true, Overspend}, {2000, 1, true, Overspend}, {2000, 1, true, Overspend}}},
		{"cost", []obs{{1000, 2, true, Conforming}, {1000, 2, true, Overspend}, {1000, 1, true, Conforming}, {1000, 4, false, Denied}}},
		{"time never goes back", []obs{{5000, 1, true, Conforming}, {5000, 1, true, Conforming}, {5000, 1, true, Conforming}, {1000, 1, true, Overspend}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := NewWindow(1, 3, 1000)
			var have, want []Verdict
			for _, o := range tt.obs {
				have = append(have, w.ObserveAs(0, o.ms, o.cost, o.allowed, c))
				want = append(want, o.want)
			}
			if fmt.Sprint(have) != fmt.Sprint(want) {
				t.Errorf("verdicts %v, want %v", have, want)
			}
		})
	}
}

// TestWindowEnvelopeAgainstExactLimiters: a sliding-log limiter is exact for this envelope (zero
// overspend and false denies); a fixed-window one overspends at window edges.
func TestWindowEnvelopeAgainstExactLimiters(t *testing.T) {
	t.Parallel()
	slog, err := limiter.NewSlidingLog(limiter.SlidingLogPolicy{Window: 1e9, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := limiter.NewFixedWindow(limiter.FixedWindowPolicy{Window: 1e9, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		allow     func(nowMs int64) bool
		overspend bool
	}{
		{"sliding log", func(ms int64) bool { return slog.AllowAt("k", ms, 1).Allowed }, false},
		{"fixed window", func(ms int64) bool { return fixed.AllowAt("k", ms, 1).Allowed }, true},
	} {
		w := NewWindow(1, 10, 1000)
		// 40 requests per second for 5 s, in bursts around the window edges.
		for s := int64(1); s <= 5; s++ {
			for i := int64(0); i < 40; i++ {
				ms := s*1000 - 20 + i
				w.ObserveAs(0, ms, 1, tt.allow(ms), Cause(limiter.Central))
			}
		}
		tot := w.Totals()
		if tt.overspend && tot.OverspendRequests == 0 {
			t.Errorf("%s: totals %+v, want overspend at the window edges", tt.name, tot)
		}
		if !tt.overspend && (tot.OverspendRequests != 0 || tot.FalseDenies != 0) {
			t.Errorf("%s: totals %+v, want an exact match", tt.name, tot)
		}
	}
}

func TestWindowEnvelopeWithdrawsExplainedDenials(t *testing.T) {
	t.Parallel()
	w := NewWindow(1, 3, 1000)
	c := Cause(limiter.Central)
	// Seen first, but the store served it last: the three allowed requests took the room.
	w.ObserveAs(0, 1000, 1, false, c)
	for range 3 {
		w.ObserveAs(0, 1000, 1, true, c)
	}
	// A genuine one: the window has room and nothing takes it within the reorder window.
	w.ObserveAs(0, 2500, 1, false, c)
	w.ObserveAs(0, 3000, 1, true, c)
	if got := w.Totals(); got.FalseDenies != 1 || got.Withdrawn != 1 || got.OverspendRequests != 0 {
		t.Errorf("totals %+v: want the explained denial withdrawn and the genuine one kept", got)
	}
}
