package engine

import (
	"testing"
	"time"
)

// The CPU section counts from the load's start, not from a reading taken before a --start-at
// wait, and leaves out a node that one of the readings lacks (killed or restarted meanwhile).
func TestCPUBetween(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	a := cpuReading{at: t0, self: 10, machine: 100, nodes: []nodeReading{
		{addr: "n1", role: "primary", main: 5, allThreads: 6, calls: 1000, reads: 100}, {addr: "n2", role: "replica", main: 1, allThreads: 1}}}
	b := cpuReading{at: t0.Add(4 * time.Second), self: 13, machine: 106, nodes: []nodeReading{
		{addr: "n1", role: "primary", main: 7, allThreads: 8.5, calls: 41000, reads: 3300}}}
	c := cpuBetween(a, b, t0.Add(time.Second))
	if c.WallS != 3 || c.Generator != 1 || c.MachineBusy != 2 || len(c.Nodes) != 1 {
		t.Fatalf("cpu %+v: want 3 s of wall from the load's start, 1 core of generator, 2 of machine, node n1 only", c)
	}
	if n := c.Nodes[0]; n.MainThread != 2.0/3 || n.Process != 2.5/3 || n.CallsPerRead != 12.5 {
		t.Errorf("node %+v: want main thread 2/3 and process 2.5/3 of a core, 40,000 calls in 3,200 reads", n)
	}
	if want := 2 - 1 - 2.5/3; c.Other-want > 1e-9 || want-c.Other > 1e-9 {
		t.Errorf("other %v, want %v: the machine less the generator and the nodes", c.Other, want)
	}
	if c := cpuBetween(a, b, time.Time{}); c.WallS != 4 {
		t.Errorf("wall %v from a base before the first reading; want 4 s, from the reading", c.WallS)
	}
	unknown := b
	unknown.machine = -1
	if c := cpuBetween(a, unknown, t0); c.MachineBusy != -1 || c.Other != -1 {
		t.Errorf("cpu %+v: an unreadable machine is -1, not a guess", c)
	}
}
