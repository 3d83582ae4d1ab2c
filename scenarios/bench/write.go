package bench

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results"
)

// Files written into Options.Out.
const (
	ReadmeFile = "README.md"
	RawFile    = "raw.json"
)

func write(dir string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode %s: %w", RawFile, err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, RawFile), append(b, '\n')); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, ReadmeFile), []byte(Markdown(rep)))
}

// Section names, the first cell of each table row.
const (
	SectionGenerator = "1 generator"
	SectionMemory    = "2 in-memory bucket"
	SectionCentral   = "3 central"
	SectionCeiling   = "4 ceiling"
	SectionLease     = "5 lease"
)

// Markdown renders the report as README.md: how to reproduce it, the machine, one table row per
// measurement with its target beside it, and the ratio line.
func Markdown(rep *Report) string {
	var s strings.Builder
	m := rep.Machine
	fmt.Fprintf(&s, "# ratelab bench\n\n")
	fmt.Fprintf(&s, "Reproduce: `make bench` (the Go benchmarks, then `ratelab bench`). This table: `%s`", rep.Command)
	if rep.Quick {
		s.WriteString(" (quick: short sections, noisy numbers)")
	}
	fmt.Fprintf(&s, ".\n\nMeasured %s on %d cores (GOMAXPROCS %d, %s), %s, %s, Redis %s (%s), one %s cluster shared by every section; %s in all.\n",
		rep.StartedAt.Format("2006-01-02 15:04 UTC"), m.Cores, m.GOMAXPROCS, orNA(m.CPU), m.OS, m.Go, m.RedisVersion,
		orNA(m.Bench), m.Cluster, rep.Duration.Round(1e8))
	s.WriteString("The generator, the Go client, redis-benchmark and the Redis nodes share these cores: every number is this machine's, at this moment.\n\n")
	s.WriteString("| section | what ran | decisions/s | p50 ms | p99 ms | other | target |\n")
	s.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- |\n")
	g := rep.Generator
	fmt.Fprintf(&s, "| %s | no-op limiter, %s offered, intended-time schedule, HDR recording | %s | | %.3f | schedule lag p99 %.3f ms, %d dropped | >= 2,000,000/s |\n",
		SectionGenerator, num(g.OfferedRPS), num(g.DecisionsPerSec), g.LatencyP99Ms, g.ScheduleLagP99, g.Dropped)
	me := rep.Memory
	fmt.Fprintf(&s, "| %s | limiter.TokenBucket, Zipf(0.99) over %s tenants, one goroutine | %s | | | %.1f ns and %.2f allocs per decision | 0 allocs |\n",
		SectionMemory, num(float64(me.Keys)), num(me.DecisionsPerSec), me.NsPerDecision, me.AllocsPerDecision)
	for _, c := range rep.Central {
		other := fmt.Sprintf("%.1f µs client CPU per decision, Redis main thread %.0f%% busy at %.1f µs per call, %d errors",
			c.CPUPerDecisionUs, 100*c.RedisBusy, c.RedisUsPerCall, c.Errors)
		if c.PerPipeline > 0 {
			other += fmt.Sprintf(", %.1f decisions per pipeline, linger %v", c.PerPipeline, time.Duration(c.LingerUs*1e3))
		}
		fmt.Fprintf(&s, "| %s | %s, %d closed-loop callers, GOMAXPROCS %d, one primary | %s | %.3f | %.3f | %s | |\n",
			SectionCentral, c.Mode, c.Callers, c.GOMAXPROCS, num(c.DecisionsPerSec), c.P50Ms, c.P99Ms, other)
	}
	ce := rep.Ceiling
	fmt.Fprintf(&s, "| %s | redis-benchmark EVALSHA, -c %d -P %d, same primary and script, the better of %d runs | %s | %.3f | %.3f | Redis main thread %.0f%% busy at %.1f µs per call; best central / ceiling = %.2f (%s) | >= 0.9 |\n",
		SectionCeiling, ce.Conns, ce.Depth, len(ce.Runs), num(ce.RequestsPerSec), ce.P50Ms, ce.P99Ms, 100*ce.RedisBusy, ce.RedisUsPerCall, rep.Ratio.Value, rep.Ratio.Best)
	l := rep.Lease
	fmt.Fprintf(&s, "| %s | hot-tenant-lease, %s offered, 2 gateways x 100-token leases | %s | %.3f | %.3f | achieved %.2f%%, %d dropped, %d errors, %s central ops/s | >= 99%%, p99 < 1 ms |\n\n",
		SectionLease, num(l.OfferedRPS), num(l.AchievedRPS), l.P50Ms, l.P99Ms, 100*l.Achieved, l.Dropped, l.Errors, num(l.CentralOpsPS))
	fmt.Fprintf(&s, "**ratio**: best central mode (%s) / redis-benchmark ceiling = **%.2f** (%s / %s)\n\n",
		rep.Ratio.Best, rep.Ratio.Value, num(rep.Ratio.Value*ce.RequestsPerSec), num(ce.RequestsPerSec))
	if rep.Ratio.Value > 1.05 {
		s.WriteString("A ratio above 1 means redis-benchmark got less of the machine than the Go client did in its runs (one single-threaded process against a client with GOMAXPROCS threads on busy cores): the ceiling is under-measured, rerun on a quiet machine.\n\n")
	}
	for _, c := range rep.Central {
		if c.Mode != rep.Ratio.Best || ce.RedisUsPerCall <= 0 || c.RedisUsPerCall <= 0 {
			continue
		}
		// The script does the same work for both clients; a main thread that spent much more
		// CPU per call in one of them ran on a slower (contended) core then.
		if r := c.RedisUsPerCall / ce.RedisUsPerCall; r > 1.15 || r < 1/1.15 {
			fmt.Fprintf(&s, "Redis spent %.1f µs of CPU per call under %s and %.1f µs under redis-benchmark: the machine's speed changed between them (other load on the host), so the ratio mixes two machines; rerun on a quieter one.\n\n",
				c.RedisUsPerCall, c.Mode, ce.RedisUsPerCall)
		}
	}
	fmt.Fprintf(&s, "Ceiling command: `%s`\n\n", ce.Command)
	s.WriteString("Central and ceiling measure the same single primary (the owner of the hottest tenant's slot) with the same number of requests in flight: callers = connections x pipeline depth. ")
	s.WriteString("Central latency is closed-loop service time; generator and lease latency is measured from each request's intended start. Raw numbers: `raw.json`.\n")
	return s.String()
}

// num formats a rate with thousands separators.
func num(v float64) string {
	n := int64(v + 0.5)
	str := fmt.Sprint(n)
	var out []byte
	for i := range len(str) {
		if i > 0 && (len(str)-i)%3 == 0 && str[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, str[i])
	}
	return string(out)
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}
