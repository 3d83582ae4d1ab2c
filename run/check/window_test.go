package check

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
		// 1000 is more than the reorder window (200 ms) behind 5000: judged at 4800, it meets
		// the three at 5000 in the window (3800, 4800 + 1000).
		{"a request older than the reorder window is judged at its edge", []obs{{5000, 1, true, Conforming},
			{5000, 1, true, Conforming}, {5000, 1, true, Conforming}, {1000, 1, true, Overspend}}},
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

// TestWindowJudgesEachRequestAtItsOwnTime: requests complete out of order; each is judged at its
// own decision time, against every window that contains it — not at the newest time seen.
func TestWindowJudgesEachRequestAtItsOwnTime(t *testing.T) {
	t.Parallel()
	type obs struct {
		ms      int64
		allowed bool
		want    Verdict
	}
	tests := []struct {
		name string
		obs  []obs
	}{
		// Three at 10..30 fill (−10, 990]. The request at 990 overspent there; observed after
		// one at 1040, it must not be judged in (40, 1040] where it would fit.
		{"late overspend", []obs{{10, true, Conforming}, {20, true, Conforming}, {30, true, Conforming},
			{1040, true, Conforming}, {990, true, Overspend}}},
		// Likewise a late denial at 995 was right: its window was full.
		{"late rightful denial", []obs{{10, true, Conforming}, {20, true, Conforming}, {30, true, Conforming},
			{1040, true, Conforming}, {995, false, Denied}}},
		// Windows after a late request count the requests observed before it: at 1150 the
		// window (150, 1150] holds 1100, 1120 and 1150 itself, and (400, 1400] after it
		// holds 1300 too — four.
		{"later tokens count", []obs{{1100, true, Conforming}, {1120, true, Conforming}, {1300, true, Conforming},
			{1150, true, Overspend}}},
		// ... and a late request whose windows all have room conforms: 1900's windows hold at
		// most 2000 and 2100 besides it. Then 1950's window (1100, 2100] is full, whether it
		// is allowed or denied; 2950's (1950, 2950] has room: a false deny.
		{"a late request with room conforms", []obs{{2000, true, Conforming}, {2100, true, Conforming},
			{1900, true, Conforming}, {1950, true, Overspend}, {1950, false, Denied}, {2950, false, FalseDeny}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := NewWindow(1, 3, 1000)
			w.SetReorderWindow(250, nil)
			for i, o := range tt.obs {
				if have := w.ObserveAs(0, o.ms, 1, o.allowed, 0); have != o.want {
					t.Errorf("observation %d at %d ms (allowed %v): %v, want %v", i, o.ms, o.allowed, have, o.want)
				}
			}
		})
	}
}

// windowRef is the Window envelope by its definition, brute force: a request at t (t clamped to
// newest - reorder) conforms when for every s in [t, t + w) the conforming tokens in (s - w, s]
// plus its cost are within the limit.
type windowRef struct {
	limit, w, reorder, newest int64
	conforming                map[int64]int64 // ms -> tokens
}

func (r *windowRef) judge(ms, cost int64, allowed bool) bool {
	r.newest = max(r.newest, ms)
	t := max(ms, r.newest-r.reorder)
	fits := true
	for s := t; s < t+r.w; s++ {
		var in int64
		for at, n := range r.conforming {
			if at > s-r.w && at <= s {
				in += n
			}
		}
		fits = fits && in+cost <= r.limit
	}
	if allowed && fits {
		r.conforming[t] += cost
	}
	return fits
}

// TestWindowMatchesItsDefinition replays random out-of-order streams through Window and the
// brute-force definition; the fits/does-not-fit judgement of every request must agree (false
// denies aside: the envelope reserves room for provisional ones, the definition does not).
func TestWindowMatchesItsDefinition(t *testing.T) {
	t.Parallel()
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 5))
		const limit, w, reorder = 5, 50, 30
		c := NewWindow(1, limit, w)
		c.SetReorderWindow(reorder, nil)
		ref := &windowRef{limit: limit, w: w, reorder: reorder, conforming: map[int64]int64{}}
		ms := int64(1000)
		var over int
		for i := range 600 {
			ms += r.Int64N(4)
			at := ms - r.Int64N(40) // up to 40 ms late: some beyond the reorder window
			cost := 1 + r.Int64N(2)
			fits := ref.judge(at, cost, true)
			v := c.ObserveAs(0, at, cost, true, 0)
			if (v == Conforming) != fits {
				t.Fatalf("seed %d request %d at %d (newest %d) cost %d: %v, the definition says fits=%v",
					seed, i, at, ref.newest, cost, v, fits)
			}
			if !fits {
				over++
			}
		}
		if over < 50 {
			t.Fatalf("seed %d: %d overspend of 600: the stream should press the limit", seed, over)
		}
	}
}

// TestWindowMemoryIsBounded: with a limit of 1,000,000 per second the envelope keeps runs for a
// window plus the reorder window — one per millisecond at most — not a slot per token of the
// limit, and stops allocating once the runs stop growing.
func TestWindowMemoryIsBounded(t *testing.T) {
	// Not parallel: the heap is measured for the whole process.
	const keys, limit, window = 40, 1_000_000, 1000
	w := NewWindow(keys, limit, window)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ms := int64(1_767_000_000_000)
	observe := func() {
		for k := range keys {
			for range 3 {
				w.ObserveAs(k, ms, 1, true, 0)
			}
			w.ObserveAs(k, ms-5, 1, true, 0) // a late one: inserted among the runs
		}
		ms++
	}
	for range 3 * window { // three windows of 1 ms steps
		observe()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perKey := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / keys
	// Runs live for window + reorder window ms, 24 bytes each, in a buffer at most 1.5 times
	// that, which the allocator rounds up to whole 8 KiB pages; 1 KiB more for the noise of
	// the rest of the process.
	const runs = window + DefaultReorderWindowMs + 1
	bound := float64((36*runs+8191)/8192*8192 + 1024)
	t.Logf("limit %d per %d ms: %.0f bytes per key retained (bound %.0f)", limit, window, perKey, bound)
	if perKey > bound {
		t.Errorf("limit %d: %.0f bytes per key retained, want at most %.0f", limit, perKey, bound)
	}
	runtime.KeepAlive(w)
	if allocs := testing.AllocsPerRun(200, observe); allocs != 0 {
		t.Errorf("steady state: %.1f allocations per step of %d keys, want 0", allocs, keys)
	}
	if tot := w.Totals(); tot.OverspendRequests != 0 || tot.Allowed != int64(keys*4*(3*window+201)) {
		t.Errorf("totals %+v: want every request conforming (4 per ms is far below the limit)", tot)
	}
}
