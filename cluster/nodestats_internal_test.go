package cluster

import "testing"

const infoBefore = "# Commandstats\r\ncmdstat_evalsha:calls=1000,usec=20000,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_eval:calls=10,usec=500,usec_per_call=50.00\r\ncmdstat_ping:calls=5,usec=1\r\n" +
	"# CPU\r\nused_cpu_sys:9.5\r\nused_cpu_user:9.5\r\nused_cpu_sys_main_thread:1.000000\r\nused_cpu_user_main_thread:2.000000\r\n" +
	"# Latencystats\r\nlatency_percentiles_usec_evalsha:p50=10.000,p99=50.000,p99.9=90.000\r\n" +
	"# Stats\r\ntotal_reads_processed:250\r\ntotal_writes_processed:240\r\n"

// A node's INFO gives the scripts' calls (EVALSHA and EVAL, nothing else), the main thread's
// CPU where Redis reports it apart, the whole process's, and EVALSHA's percentiles.
func TestNodeStatsOf(t *testing.T) {
	t.Parallel()
	s := nodeStatsOf(infoBefore)
	want := NodeStats{Calls: 1010, Usec: 20500, CPUSeconds: 3, TotalCPUSeconds: 19, Reads: 250, P50Us: 10, P99Us: 50}
	if s != want {
		t.Errorf("nodeStatsOf = %+v, want %+v (main-thread CPU, EVALSHA + EVAL, reads)", s, want)
	}
	// Without the main thread's own lines the process's CPU stands in for it.
	s = nodeStatsOf("used_cpu_sys:1.5\r\nused_cpu_user:2.5\r\n")
	if want := (NodeStats{CPUSeconds: 4, TotalCPUSeconds: 4}); s != want {
		t.Errorf("nodeStatsOf without main-thread CPU = %+v, want %+v", s, want)
	}
}
