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
	c.Nodes[0].CallsPerRead, c.Nodes[2].CallsPerRead = 12.34, 8
	c.PerDecision = &CPUPerDecision{Generator: 10.44, Primaries: 14.3, Replicas: 3.9, Total: 28.64}
	want = "generator 0.90 cores, primaries' main threads 0.31 / 0.50, replicas 0.12 (over 20.0 s of load); " +
		"µs per decision: generator 10.4, primaries 14.3, replicas 3.9, total 28.6; script calls per read 12.3 / 8.0"
	if got := c.Line(); got != want {
		t.Errorf("Line() = %q\nwant    %q", got, want)
	}
}

// The CPU per decision splits the cores into the generator, the primaries' main threads and
// the replicas' processes, each over the load per decision, and their sum; nothing without
// decisions or a CPU section.
func TestSetCPUPerDecision(t *testing.T) {
	t.Parallel()
	c := &CPU{WallS: 10, Cores: 2, Generator: 0.6, Nodes: []NodeCPU{
		{Role: "primary", MainThread: 0.25, Process: 0.3},
		{Role: "replica", MainThread: 0.05, Process: 0.1},
		{Role: "primary", MainThread: 0.25, Process: 0.3},
	}}
	s := &Summary{CPU: c}
	s.Load.Completed = 500000 // 50,000/s over 10 s: 1 core is 20 µs per decision
	s.SetCPUPerDecision()
	have, want := c.PerDecision, CPUPerDecision{Generator: 12, Primaries: 10, Replicas: 2, Total: 24}
	if have == nil {
		t.Fatal("PerDecision is nil with a CPU section and decisions")
	}
	for _, f := range []struct {
		name       string
		have, want float64
	}{{"generator", have.Generator, want.Generator}, {"primaries", have.Primaries, want.Primaries},
		{"replicas", have.Replicas, want.Replicas}, {"total", have.Total, want.Total}} {
		if math.Abs(f.have-f.want) > 1e-9 {
			t.Errorf("%s: %g µs per decision, want %g", f.name, f.have, f.want)
		}
	}
	if g := s.GeneratorUsPerDecision(); math.Abs(g-have.Generator) > 1e-9 {
		t.Errorf("GeneratorUsPerDecision() = %g, PerDecision.Generator %g: one figure, two values", g, have.Generator)
	}
	none := &Summary{CPU: &CPU{WallS: 10, Generator: 0.5}}
	none.SetCPUPerDecision()
	if none.CPU.PerDecision != nil {
		t.Errorf("PerDecision = %+v without decisions, want nil (no JSON field)", none.CPU.PerDecision)
	}
	(&Summary{}).SetCPUPerDecision() // no CPU section: must not panic
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
