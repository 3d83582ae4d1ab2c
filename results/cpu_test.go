package results

import (
	"math"
	"strings"
	"testing"
)

// The CPU row names the generator, each primary's main thread, the replicas and the rest of the
// machine, and leaves the machine out where it could not be read.
func TestCPULine(t *testing.T) {
	t.Parallel()
	c := &CPU{WallS: 20, Cores: 2, Generator: 0.9, MachineBusy: 1.95, Other: 0.05, Nodes: []NodeCPU{
		{Addr: "a", Role: "primary", MainThread: 0.31, Process: 0.33},
		{Addr: "b", Role: "replica", MainThread: 0.1, Process: 0.12},
		{Addr: "c", Role: "primary", MainThread: 0.5, Process: 0.55},
	}}
	want := "generator 0.90 cores, primaries' main threads 0.31 / 0.50, replicas 0.12, other 0.05; machine 1.95 of 2 cores busy (over 20.0 s of load)"
	if got := c.Line(); got != want {
		t.Errorf("Line() = %q\nwant    %q", got, want)
	}
	c.MachineBusy, c.Other = -1, -1
	if got := c.Line(); strings.Contains(got, "machine") || strings.Contains(got, "other") {
		t.Errorf("Line() = %q with the machine unknown: want no machine or other figure", got)
	}
}

// The generator's CPU per decision is its CPU seconds over the load per decision, and not a
// number where the summary has no CPU section or no decisions.
func TestGeneratorUsPerDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cpu  *CPU
		n    int64
		want float64 // NaN: not a number
	}{
		{"0.15 cores over 5 s, 5,000 decisions", &CPU{WallS: 5, Generator: 0.15}, 5000, 150},
		{"one core over 2 s, 100,000 decisions", &CPU{WallS: 2, Generator: 1}, 100000, 20},
		{"no cpu section", nil, 5000, math.NaN()},
		{"no decisions", &CPU{WallS: 5, Generator: 0.1}, 0, math.NaN()},
	} {
		s := &Summary{CPU: tc.cpu}
		s.Load.Completed = tc.n
		have := s.GeneratorUsPerDecision()
		if math.IsNaN(tc.want) != math.IsNaN(have) || (!math.IsNaN(have) && math.Abs(have-tc.want) > 1e-9) {
			t.Errorf("%s: GeneratorUsPerDecision() = %g, want %g", tc.name, have, tc.want)
		}
	}
}
