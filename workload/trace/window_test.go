package trace_test

import (
	"testing"
	"time"

	"ratelab/workload/trace"
)

// every returns n requests gap apart from offset first.
func every(n int, first, gap time.Duration) []trace.Request {
	out := make([]trace.Request, n)
	for i := range out {
		out[i] = trace.Request{At: first + time.Duration(i)*gap, Cost: 1}
	}
	return out
}

func TestWindow(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		tr         trace.Trace
		speed      float64
		wantWindow time.Duration
		wantRate   float64
	}{
		{"1,000/s over 1.5 s, from a file", trace.Trace{Requests: every(1500, 0, ms)}, 1, 1500 * ms, 1000},
		{"the same at speed 2", trace.Trace{Requests: every(1500, 0, ms)}, 2, 750 * ms, 2000},
		{"the same at speed 0.5", trace.Trace{Requests: every(1500, 0, ms)}, 0.5, 3 * time.Second, 500},
		{"a whole second", trace.Trace{Requests: every(1000, 0, ms)}, 1, time.Second, 1000},
		{"starting late: the window still opens at 0", trace.Trace{Requests: every(11, 5*time.Second, 100*ms)}, 1, 6100 * ms, 11 / 6.1},
		{"generated: its span", trace.Trace{Requests: every(3, 0, 400*ms), Span: 1500 * ms}, 1, 1500 * ms, 2},
		{"a span before the last request is not a window", trace.Trace{Requests: every(3, 0, 400*ms), Span: 500 * ms}, 1, 1200 * ms, 2.5},
		{"one request", trace.Trace{Requests: every(1, 300*ms, 0)}, 1, 1300 * ms, 1 / 1.3},
		{"all at one instant", trace.Trace{Requests: every(4, 0, 0)}, 1, time.Second, 4},
		{"no speed counts as 1", trace.Trace{Requests: every(1500, 0, ms)}, 0, 1500 * ms, 1000},
		{"empty", trace.Trace{}, 1, 0, 0},
	} {
		w, r := tc.tr.Window(tc.speed)
		if w != tc.wantWindow || r < tc.wantRate*(1-1e-9) || r > tc.wantRate*(1+1e-9) {
			t.Errorf("%s: window %v rate %v; want %v and %v", tc.name, w, r, tc.wantWindow, tc.wantRate)
		}
	}
}

// Every request of a trace falls inside its window at any speed, even when many share a
// microsecond (a mean interval below a nanosecond).
func TestWindowHoldsTheLastRequest(t *testing.T) {
	t.Parallel()
	recs := every(5000, 0, 0)
	recs[len(recs)-1].At = time.Microsecond
	tr := trace.Trace{Requests: recs}
	for _, speed := range []float64{1, 3, 7.5, 1000} {
		w, _ := tr.Window(speed)
		if last := time.Duration(float64(time.Microsecond) / speed); w <= last {
			t.Errorf("speed %v: window %v does not hold the last request at %v", speed, w, last)
		}
	}
}

// A generated trace's window is the duration it was drawn for, Poisson arrivals included.
func TestGeneratedWindow(t *testing.T) {
	t.Parallel()
	tr := genTrace(t, 2000, 1500*time.Millisecond, 3)
	if w, r := tr.Window(1); w != 1500*time.Millisecond || r != float64(len(tr.Requests))/1.5 {
		t.Errorf("window %v rate %v; want 1.5 s and %v", w, r, float64(len(tr.Requests))/1.5)
	}
}
