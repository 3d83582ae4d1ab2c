package engine

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"

	"ratelab/results"
)

// footprint is the process's memory and goroutines at one moment of a run.
type footprint struct {
	rssMB, anonMB, heapMB float64
	// mem splits the anonymous part the Go runtime accounts for (see results.MemSplit).
	mem        results.MemSplit
	goroutines int
}

// sampleFootprint measures the process. With settle, every sample is taken the same way so two
// samples compare a leak and nothing else: debug.FreeOSMemory collects garbage and hands every
// free page back to the OS first, then RSS and the live heap are read.
//
// Without that step RSS depends on when the sample lands in the collector's cycle: with GOGC=100
// the heap may grow to twice the live heap before a collection, and the runtime's background
// scavenger returns freed pages to the OS over minutes, not at once. A soak that sampled raw RSS
// after a fault (a pause fills every in-flight slot, a latency fault adds proxy buffers) read
// 70 -> 81 MB while the live heap went 25.7 -> 24.7 MB: retained free pages, not a leak.
//
// Settling is not free under load: the forced collection and the scavenge (which holds the heap
// lock while allocating workers wait) stalled a 100,000/s lease run: in 7 alternated 12 s runs of
// hot-tenant-lease on one cluster the second of the warm sample dropped 2,586-9,569 requests
// (median 7,820) when settled and 0-2,821 (median 736) when not. So the engine settles only for a spec that
// judges memory (an rss_growth or heap_growth SLO). Otherwise the sample disturbs nothing: RSS
// as it is, and the live heap the last collection marked (runtime/metrics /gc/heap/live:bytes).
//
// anonMB is the anonymous part of RSS (RssAnon): memory the process allocated and wrote. The
// rest is file-backed, mostly the binary's own code, paged in as new paths first run (the first
// failover, a latency proxy).
func sampleFootprint(settle bool) footprint {
	if settle {
		debug.FreeOSMemory()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	heap := float64(m.HeapAlloc)
	if !settle {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(live)
		if live[0].Value.Kind() == metrics.KindUint64 {
			heap = float64(live[0].Value.Uint64())
		}
	}
	anon, _ := procStatusKB("RssAnon:")
	const mb = 1 << 20
	return footprint{
		rssMB:  rssMB(),
		anonMB: anon / 1024,
		heapMB: heap / mb,
		mem: results.MemSplit{
			HeapInuseMB: float64(m.HeapInuse) / mb,
			StacksMB:    float64(m.StackInuse) / mb,
			RuntimeMB:   float64(m.MSpanInuse+m.MCacheInuse+m.GCSys+m.OtherSys+m.BuckHashSys) / mb,
		},
		goroutines: runtime.NumGoroutine(),
	}
}

// rssMB is the process's resident set size in MiB: VmRSS from /proc/self/status on Linux, the
// runtime's own view of memory obtained from the OS elsewhere.
func rssMB() float64 {
	if kb, ok := procStatusKB("VmRSS:"); ok {
		return kb / 1024
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.Sys) / (1 << 20)
}

// peakRSSMB is the process's peak resident set size in MiB (VmHWM), or 0 where /proc is absent.
func peakRSSMB() float64 {
	kb, _ := procStatusKB("VmHWM:")
	return kb / 1024
}

// procStatusKB reads one "Name: N kB" line of /proc/self/status.
func procStatusKB(name string) (float64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			if f := bytes.Fields(rest); len(f) > 0 {
				if kb, err := strconv.ParseFloat(string(f[0]), 64); err == nil {
					return kb, true
				}
			}
		}
	}
	return 0, false
}
