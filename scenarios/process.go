package scenarios

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// rssMB is the process's resident set size in MiB: VmRSS from /proc/self/status on Linux, the
// runtime's own view of memory obtained from the OS elsewhere.
func rssMB() float64 {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range bytes.Split(data, []byte("\n")) {
			if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
				f := bytes.Fields(rest)
				if len(f) > 0 {
					if kb, err := strconv.ParseFloat(string(f[0]), 64); err == nil {
						return kb / 1024
					}
				}
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.Sys) / (1 << 20)
}

// heapMB forces a collection and returns the live heap in MiB. The collection costs the run a
// few milliseconds of CPU; it is taken twice per run (after the first second and at the end).
func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}
