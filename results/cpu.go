package results

import (
	"fmt"
	"math"
	"strings"
)

// CPU says where the machine's cores went during a run's load: the generator process (the
// schedule, the workers and the Redis client, all in this process), each local Redis node, and
// everything else. On one machine the generator and the nodes share the cores, so a run that
// missed its offered rate says here whether the generator, a node's main thread or the rest of
// the machine took them. Figures are CPU seconds over the load's wall time; a share of 1.0 is
// one core busy for the whole load.
type CPU struct {
	// WallS is the load's wall time the figures are counted over.
	WallS float64 `json:"wall_s"`
	// Cores is the machine's cores (runtime.NumCPU).
	Cores int `json:"cores"`
	// Generator is this process's CPU (user + system) in cores.
	Generator float64 `json:"generator_cores"`
	// Nodes are the cluster's nodes, from their INFO cpu; empty where INFO was not readable.
	Nodes []NodeCPU `json:"nodes"`
	// MachineBusy is every process's CPU in cores (/proc/stat), -1 where it cannot be read.
	MachineBusy float64 `json:"machine_busy_cores"`
	// Other is MachineBusy less the generator and the nodes: other processes on the machine
	// (and kernel work not charged to a process); -1 where MachineBusy is unknown.
	Other float64 `json:"other_cores"`
}

// NodeCPU is one Redis node's CPU during the load.
type NodeCPU struct {
	Addr string `json:"addr"`
	// Role is "primary" or "replica" at the run's start.
	Role string `json:"role"`
	// MainThread is the node's main thread's CPU in cores: commands, scripts and network I/O,
	// the single thread that bounds a node's decisions/s; near 1.0 it is saturated.
	MainThread float64 `json:"main_thread_cores"`
	// Process is the whole redis-server's CPU in cores (background threads too).
	Process float64 `json:"process_cores"`
}

// NodesTotal is the nodes' process CPU in cores.
func (c *CPU) NodesTotal() float64 {
	var t float64
	for _, n := range c.Nodes {
		t += n.Process
	}
	return t
}

// Line is the text summary's row: the generator, the primaries' main threads, the replicas,
// the rest of the machine and the machine's total, in cores.
func (c *CPU) Line() string {
	var prim []string
	var repl float64
	for _, n := range c.Nodes {
		if n.Role == "replica" {
			repl += n.Process
			continue
		}
		prim = append(prim, fmt.Sprintf("%.2f", n.MainThread))
	}
	s := fmt.Sprintf("generator %.2f cores", c.Generator)
	if len(prim) > 0 {
		s += fmt.Sprintf(", primaries' main threads %s, replicas %.2f", strings.Join(prim, " / "), repl)
	}
	if c.MachineBusy >= 0 {
		s += fmt.Sprintf(", other %.2f; machine %.2f of %d cores busy", max(c.Other, 0), c.MachineBusy, c.Cores)
	}
	return s + fmt.Sprintf(" (over %.1f s of load)", c.WallS)
}

// GeneratorUsPerDecision is the generator's CPU per decision in microseconds: its CPU seconds
// over the load (Generator cores x WallS) divided by the completed requests (load.decisions). It is the run's own
// cost of deciding, which latency does not show (results/studies/gate-power.md has how much a busy machine moves
// it). NaN without a CPU section (a merge of parts, an HTTP attack, a summary of an older
// ratelab) or without decisions.
func (s *Summary) GeneratorUsPerDecision() float64 {
	if s.CPU == nil || s.Load.Completed <= 0 {
		return math.NaN()
	}
	return s.CPU.Generator * s.CPU.WallS / float64(s.Load.Completed) * 1e6
}
