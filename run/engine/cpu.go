package engine

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"ratelab/cluster"
	"ratelab/results"
	"ratelab/scenarios"
)

// cpuReading is one reading of where the cores went so far: this process's CPU, the machine's
// busy time and each local node's main-thread and process CPU, all in seconds.
type cpuReading struct {
	at      time.Time
	self    float64
	machine float64 // -1: not readable (no /proc/stat)
	nodes   []nodeReading
}

type nodeReading struct {
	addr, role       string
	main, allThreads float64
	calls, reads     int64 // script calls and reads from clients (cluster.NodeStats)
}

// readCPU takes a reading. Nodes are read only where they run on this machine (local and
// docker providers): an external cluster's CPU is another machine's. A node that does not
// answer INFO is left out.
func (s *Session) readCPU(ctx context.Context) cpuReading {
	r := cpuReading{at: time.Now(), self: selfCPUSeconds(), machine: machineBusySeconds()}
	if s.store == nil || s.Spec.Cluster.Provider == scenarios.ProviderExternal {
		return r
	}
	// An interrupted run still reads its nodes: what it measured is kept.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	for _, n := range s.store.cl.Nodes() {
		addr := n.Addr
		if n.RealAddr != "" {
			addr = n.RealAddr
		}
		st, err := cluster.ReadNodeStats(ctx, []string{addr})
		if err != nil {
			continue
		}
		r.nodes = append(r.nodes, nodeReading{addr: n.Addr, role: n.Role, main: st.CPUSeconds, allThreads: st.TotalCPUSeconds,
			calls: st.Calls, reads: st.Reads})
	}
	return r
}

// cpuBetween is the summary's CPU section from two readings around a load that started at base:
// CPU seconds over the load's wall seconds, in cores, and each node's script calls per read. The first reading is taken before a
// --start-at wait, when the processes idle, so the wall counts from base. A node missing from
// either reading (killed, restarted) is left out.
func cpuBetween(a, b cpuReading, base time.Time) *results.CPU {
	if base.Before(a.at) {
		base = a.at
	}
	wall := b.at.Sub(base).Seconds()
	if wall <= 0 {
		return nil
	}
	c := &results.CPU{WallS: wall, Cores: runtime.NumCPU(), Generator: (b.self - a.self) / wall, Nodes: []results.NodeCPU{}, MachineBusy: -1, Other: -1}
	for _, nb := range b.nodes {
		for _, na := range a.nodes {
			if na.addr != nb.addr || nb.allThreads < na.allThreads {
				continue
			}
			n := results.NodeCPU{Addr: nb.addr, Role: na.role,
				MainThread: (nb.main - na.main) / wall, Process: (nb.allThreads - na.allThreads) / wall}
			if reads := nb.reads - na.reads; reads > 0 && nb.calls > na.calls {
				n.CallsPerRead = float64(nb.calls-na.calls) / float64(reads)
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	if a.machine >= 0 && b.machine >= 0 {
		c.MachineBusy = (b.machine - a.machine) / wall
		c.Other = c.MachineBusy - c.Generator - c.NodesTotal()
	}
	return c
}

// machineBusySeconds is the machine's CPU time spent on anything but idle and I/O wait since
// boot, from /proc/stat's first line (Linux; -1 elsewhere). Its unit is USER_HZ, 100 per
// second on every Linux architecture that user space sees.
func machineBusySeconds() float64 {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return -1
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 8 || fields[0] != "cpu" {
		return -1
	}
	var busy float64
	for i, v := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // guest time is already in user
			break
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return -1
		}
		busy += n
	}
	return busy / 100
}
