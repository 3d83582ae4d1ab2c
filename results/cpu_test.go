package results

import (
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
