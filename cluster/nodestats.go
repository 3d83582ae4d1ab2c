package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NodeStats is what Redis nodes did for the limiter, read from INFO and summed over the nodes it
// came from: its script calls, the time inside them, and the nodes' CPU time. Two readings, one
// before and one after a run, give what the run cost the nodes.
type NodeStats struct {
	// Calls of the limiter's scripts (EVALSHA and EVAL) and the µs Redis spent inside them.
	Calls int64
	Usec  int64
	// CPUSeconds is the main thread's CPU time (user + sys): commands plus network I/O;
	// TotalCPUSeconds the whole process's (background threads too).
	CPUSeconds      float64
	TotalCPUSeconds float64
	// Reads is how many reads the node made from its clients' connections (INFO stats
	// total_reads_processed): over a run, script calls per read is how many decisions one
	// read carried, the pipeline depth as the node saw it.
	Reads int64
	// P50Us and P99Us are Redis's own latency percentiles of EVALSHA (INFO latencystats,
	// Redis 7+); 0 when absent.
	P50Us, P99Us float64
}

// ReadNodeStats reads INFO commandstats, cpu, latencystats and stats from the node at each address and
// sums them (the percentiles are taken from the node with the most calls).
func ReadNodeStats(ctx context.Context, addrs []string) (NodeStats, error) {
	var out NodeStats
	most := int64(-1)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		text, err := c.Info(ctx, "commandstats", "cpu", "latencystats", "stats").Result()
		_ = c.Close()
		if err != nil {
			return out, fmt.Errorf("INFO on %s: %w", a, err)
		}
		s := nodeStatsOf(text)
		out.Calls += s.Calls
		out.Usec += s.Usec
		out.CPUSeconds += s.CPUSeconds
		out.TotalCPUSeconds += s.TotalCPUSeconds
		out.Reads += s.Reads
		if s.Calls > most {
			most, out.P50Us, out.P99Us = s.Calls, s.P50Us, s.P99Us
		}
	}
	return out, nil
}

// nodeStatsOf reads the fields NodeStats needs from one node's INFO text.
func nodeStatsOf(info string) NodeStats {
	var s NodeStats
	cpu := map[string]float64{}
	for k, v := range parseInfo(info) {
		switch {
		case k == "cmdstat_evalsha" || k == "cmdstat_eval":
			f := infoFields(v)
			calls, _ := strconv.ParseInt(f["calls"], 10, 64)
			usec, _ := strconv.ParseInt(f["usec"], 10, 64)
			s.Calls += calls
			s.Usec += usec
		case k == "total_reads_processed":
			s.Reads, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(k, "used_cpu_"):
			cpu[k], _ = strconv.ParseFloat(v, 64)
		case k == "latency_percentiles_usec_evalsha":
			f := infoFields(v)
			s.P50Us, _ = strconv.ParseFloat(f["p50"], 64)
			s.P99Us, _ = strconv.ParseFloat(f["p99"], 64)
		}
	}
	s.TotalCPUSeconds = cpu["used_cpu_user"] + cpu["used_cpu_sys"]
	if u, ok := cpu["used_cpu_user_main_thread"]; ok {
		s.CPUSeconds = u + cpu["used_cpu_sys_main_thread"]
	} else {
		s.CPUSeconds = cpu["used_cpu_user"] + cpu["used_cpu_sys"]
	}
	return s
}

// infoFields splits an INFO value of the form "a=1,b=2" into a map.
func infoFields(v string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, x, ok := strings.Cut(kv, "="); ok {
			out[k] = x
		}
	}
	return out
}
