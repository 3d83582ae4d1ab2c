package demo

import (
	"testing"

	"ratelab/results"
)

// The hot-tenant step's p99 never reads "not measurable ms": with requests dropped it says how
// many, and gives the answered requests' p99 beside it.
func TestP99Fact(t *testing.T) {
	t.Parallel()
	var s results.Summary
	s.LatencyMs.P99, s.LatencyMs.MeasurablePct, s.LatencyServedMs.P99 = 4.25, 100, 4.25
	if got, want := p99Fact(&s), "4.250 ms over offered requests"; got != want {
		t.Errorf("p99Fact = %q, want %q", got, want)
	}
	s.LatencyMs.P99, s.LatencyMs.MeasurablePct, s.LatencyServedMs.P99 = results.Unmeasurable, 64.5, 13.719
	if got, want := p99Fact(&s), "not measurable over offered requests (35.5% dropped); answered requests' p99 13.719 ms"; got != want {
		t.Errorf("p99Fact = %q, want %q", got, want)
	}
}
