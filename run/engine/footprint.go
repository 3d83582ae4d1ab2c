package engine

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
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
// scavenger returns freed pages to the OS over minutes, not at once: raw RSS after a fault (a
// pause fills every in-flight slot, a latency fault adds proxy buffers) grows by retained free
// pages while the live heap does not (docs/architecture.md has the soak's figures).
//
// Settling is not free under load: the forced collection and the scavenge (which holds the heap
// lock while allocating workers wait) stall a high-rate run for part of a second, dropping
// requests. So the engine settles only for a spec that judges memory (an rss_growth or
// heap_growth SLO). Otherwise the sample disturbs nothing: RSS
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

// footprintPlan says at which seconds a run samples its footprint. The warm-up sample is taken
// after a tenth of the run unless slo.warmup says when: by then pools, histograms and the
// collector's headroom have grown to their working size, so later growth means a leak. A later
// warm-up also keeps the sample at a tenth (early), and a third sample halfway from warm-up to
// the end tells a leak (it keeps growing) from a step (the allocator's footprint after the first
// transient peaks). A sample is taken as second sec is written, sec+1 seconds into the run.
type footprintPlan struct {
	early, warm, mid int // -1: no such sample
	// settle: samples are settled (see sampleFootprint) only where the spec judges memory growth.
	settle bool
}

func newFootprintPlan(spec *scenarios.Spec, secs int) footprintPlan {
	p := footprintPlan{early: max(secs/10-1, 0), mid: -1}
	p.warm = p.early
	if w := spec.SLO.Warmup; w != nil {
		p.warm = max(int(time.Duration(*w)/time.Second)-1, 0)
	}
	if secs >= 20 && (p.warm+secs)/2 > p.warm {
		p.mid = (p.warm + secs) / 2
	}
	p.settle = spec.SLO.RSSGrowth != nil || spec.SLO.HeapGrowth != nil
	return p
}

// sample records the samples due at second sec into the summary's process section.
func (p footprintPlan) sample(sec int, proc *results.Process) {
	if sec == p.early && p.early < p.warm {
		f := sampleFootprint(p.settle)
		proc.EarlyS, proc.RSSEarlyMB, proc.AnonEarlyMB = float64(sec+1), f.rssMB, f.anonMB
	}
	if sec == p.warm {
		f := sampleFootprint(p.settle)
		proc.WarmS = float64(sec + 1)
		proc.RSSWarmMB, proc.HeapWarmMB, proc.GoroutinesWarm = f.rssMB, f.heapMB, f.goroutines
		proc.AnonWarmMB = f.anonMB
		proc.Warm = &f.mem
	}
	if sec == p.mid {
		f := sampleFootprint(p.settle)
		proc.MidS = float64(sec + 1)
		proc.RSSMidMB, proc.AnonMidMB = f.rssMB, f.anonMB
	}
}

// end records the end-of-run samples.
func (p footprintPlan) end(proc *results.Process) {
	proc.Settled = p.settle
	proc.RSSPeakMB = peakRSSMB()
	f := sampleFootprint(p.settle)
	proc.RSSEndMB, proc.HeapEndMB, proc.GoroutinesEnd = f.rssMB, f.heapMB, f.goroutines
	proc.AnonEndMB = f.anonMB
	proc.End = &f.mem
}
