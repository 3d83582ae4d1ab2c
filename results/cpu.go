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
	// PerDecision is the same CPU per decision (Summary.SetCPUPerDecision); absent without
	// decisions and in summaries of an older ratelab.
	PerDecision *CPUPerDecision `json:"us_per_decision,omitempty"`
}

// CPUPerDecision is a run's CPU per decision in microseconds: CPU seconds over the load
// (cores x WallS) over the completed requests (load.decisions). Primaries counts their main
// threads, the thread that bounds a node's decisions/s; replicas their whole processes; Total
// is the three together, the figure to hold against the machine's budget (cores / offered rate:
// 20 µs for 100,000/s on 2 cores).
type CPUPerDecision struct {
	Generator float64 `json:"generator"`
	Primaries float64 `json:"primaries"`
	Replicas  float64 `json:"replicas"`
	Total     float64 `json:"total"`
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
	// CallsPerRead is the node's script calls (EVALSHA and EVAL) per read from its clients'
	// connections (INFO stats total_reads_processed) over the load: the decisions one read
	// carried, the pipeline depth as the node saw it. A read may hold less than one pipeline
	// (a large one arrives in several) or more (two that queued together); the replication
	// link's acknowledgements and the INFO calls count as reads too. Absent on a node with no
	// script calls (replicas).
	CallsPerRead float64 `json:"script_calls_per_read,omitempty"`
}

// NodesTotal is the nodes' process CPU in cores.
func (c *CPU) NodesTotal() float64 {
	var t float64
	for _, n := range c.Nodes {
		t += n.Process
	}
	return t
}

// split is the primaries' main threads and the replicas' processes, in cores.
func (c *CPU) split() (primaries, replicas float64) {
	for _, n := range c.Nodes {
		if n.Role == "replica" {
			replicas += n.Process
		} else {
			primaries += n.MainThread
		}
	}
	return primaries, replicas
}

// Line is the text summary's row: the generator, the primaries' main threads, the replicas,
// the rest of the machine and the machine's total, in cores; then the CPU per decision and
// each primary's script calls per read.
func (c *CPU) Line() string {
	var prim, depth []string
	var reads bool // a primary's calls per read is known (absent in older summaries)
	for _, n := range c.Nodes {
		if n.Role != "replica" {
			prim = append(prim, fmt.Sprintf("%.2f", n.MainThread))
			depth = append(depth, fmt.Sprintf("%.1f", n.CallsPerRead))
			reads = reads || n.CallsPerRead > 0
		}
	}
	_, repl := c.split()
	s := fmt.Sprintf("generator %.2f cores", c.Generator)
	if len(prim) > 0 {
		s += fmt.Sprintf(", primaries' main threads %s, replicas %.2f", strings.Join(prim, " / "), repl)
	}
	if c.MachineBusy >= 0 {
		s += fmt.Sprintf(", other %.2f; machine %.2f of %d cores busy", max(c.Other, 0), c.MachineBusy, c.Cores)
	}
	s += fmt.Sprintf(" (over %.1f s of load)", c.WallS)
	if p := c.PerDecision; p != nil {
		s += fmt.Sprintf("; µs per decision: generator %.1f, primaries %.1f, replicas %.1f, total %.1f",
			p.Generator, p.Primaries, p.Replicas, p.Total)
	}
	if reads {
		s += fmt.Sprintf("; script calls per read %s", strings.Join(depth, " / "))
	}
	return s
}

// usPerDecision is cores over wall seconds per decision, in microseconds.
func usPerDecision(cores, wallS float64, decisions int64) float64 {
	return cores * wallS / float64(decisions) * 1e6
}

// SetCPUPerDecision fills the CPU section's PerDecision from its cores and load.decisions;
// without a CPU section or decisions it leaves PerDecision nil.
func (s *Summary) SetCPUPerDecision() {
	c, n := s.CPU, s.Load.Completed
	if c == nil || n <= 0 {
		return
	}
	prim, repl := c.split()
	p := &CPUPerDecision{Generator: usPerDecision(c.Generator, c.WallS, n),
		Primaries: usPerDecision(prim, c.WallS, n), Replicas: usPerDecision(repl, c.WallS, n)}
	p.Total = p.Generator + p.Primaries + p.Replicas
	c.PerDecision = p
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
	return usPerDecision(s.CPU.Generator, s.CPU.WallS, s.Load.Completed)
}
