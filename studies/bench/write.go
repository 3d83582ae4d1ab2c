package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
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
	SectionGateway   = "6 gateway"
)

// Markdown renders the report as README.md: how to reproduce it, the machine, one table row per
// measurement with its target beside it and whether it was met, and the ratio line. With more
// than one repetition every figure is its median and range over them.
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
	s.WriteString("The generator, the Go client, redis-benchmark, wrk and the Redis nodes share these cores: every number is this machine's, at this moment.\n")
	if n := len(rep.Repetitions); n > 1 {
		fmt.Fprintf(&s, "Every section ran %d times; each figure is the median (min–max) of the %d repetitions, and each target says in how many of them it was met.\n", n, n)
	}
	t := table{reps: rep.Repetitions, goals: rep.Goals}
	s.WriteString("\n| section | what ran | decisions/s | p50 ms | p99 ms | other | target |\n")
	s.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- |\n")
	t.sections(&s)
	s.WriteString("\n")
	t.ratio(&s)
	if len(rep.Repetitions) > 0 {
		fmt.Fprintf(&s, "Ceiling command: `%s`\n\nGateway load: `%s`\n\n", rep.Repetitions[0].Ceiling.Command, rep.Repetitions[0].Gateway.Command)
	}
	s.WriteString("Central and ceiling measure the same single primary (the owner of the hottest tenant's slot) with the same number of requests in flight: callers = connections x pipeline depth. ")
	s.WriteString("The gateway section serves the limiter/gateway handler in-process on one loopback port, switching between a bare net/http handler, the gateway with the in-memory bucket and with the Redis coalescing bucket; wrk loads each closed loop with the same connections and duration, in halves bare, in-memory, Redis, Redis, in-memory, bare; its p99 is the worse half's. ")
	s.WriteString("Closed-loop central and gateway latency is service time; generator, open-loop central and lease latency is measured from each request's intended start. Raw numbers of every repetition: `raw.json`.\n")
	return s.String()
}

// table renders the rows of a report's runs.
type table struct {
	reps  []Repetition
	goals []Goal
}

// fig is the figure f of every run, as its spread rendered with format.
func (t table) fig(f func(Repetition) float64, format func(float64) string) string {
	vs := make([]float64, len(t.reps))
	for i, r := range t.reps {
		vs[i] = f(r)
	}
	return spreadOf(vs).format(len(t.reps), format)
}

// latencyMs is a format for fig of a latency over offered requests: 3 decimals, and "not
// measurable" for the +Inf of a percentile above the decided share (results.Unmeasurable).
func latencyMs(x float64) string {
	if math.IsInf(x, 1) {
		return "not measurable"
	}
	return fmt.Sprintf("%.3f", x)
}

// verb is a format for fig: one Printf verb.
func verb(v string) func(float64) string {
	return func(x float64) string { return fmt.Sprintf(v, x) }
}

// target is the target cell of row: the target and whether it was met; "" for a row without.
func (t table) target(row string) string {
	g, ok := goalOf(t.goals, row)
	if !ok {
		return ""
	}
	return g.Target + ": **" + g.Verdict() + "**"
}

// sections writes one row per measurement.
func (t table) sections(s *strings.Builder) {
	f3, f1 := verb("%.3f"), verb("%.1f")
	fmt.Fprintf(s, "| %s | no-op limiter, %s offered, intended-time schedule, HDR recording | %s | | %s | schedule lag p99 %s ms, %s dropped | %s |\n",
		SectionGenerator, t.fig(func(r Repetition) float64 { return r.Generator.OfferedRPS }, num), t.fig(func(r Repetition) float64 { return r.Generator.DecisionsPerSec }, num),
		t.fig(func(r Repetition) float64 { return float64(r.Generator.LatencyP99Ms) }, f3), t.fig(func(r Repetition) float64 { return r.Generator.ScheduleLagP99 }, f3),
		t.fig(func(r Repetition) float64 { return float64(r.Generator.Dropped) }, num), t.target(SectionGenerator))
	fmt.Fprintf(s, "| %s | limiter.TokenBucket, Zipf(0.99) over %s tenants, one goroutine | %s | | | %s ns and %s allocs per decision | %s |\n",
		SectionMemory, num(memoryKeys), t.fig(func(r Repetition) float64 { return r.Memory.DecisionsPerSec }, num),
		t.fig(func(r Repetition) float64 { return r.Memory.NsPerDecision }, f1), t.fig(func(r Repetition) float64 { return r.Memory.AllocsPerDecision }, verb("%.2f")), t.target(SectionMemory))
	t.central(s)
	t.openLoop(s)
	t.ceiling(s)
	fmt.Fprintf(s, "| %s | hot-tenant-lease, %s offered, 2 gateways x 100-token leases | %s | %s | %s | achieved %s%%, %s dropped, %s errors, %s central ops/s | %s |\n",
		SectionLease, t.fig(func(r Repetition) float64 { return r.Lease.OfferedRPS }, num), t.fig(func(r Repetition) float64 { return r.Lease.AchievedRPS }, num),
		t.fig(func(r Repetition) float64 { return float64(r.Lease.P50Ms) }, latencyMs), t.fig(func(r Repetition) float64 { return float64(r.Lease.P99Ms) }, latencyMs),
		t.fig(func(r Repetition) float64 { return 100 * r.Lease.Achieved }, verb("%.2f")), t.fig(func(r Repetition) float64 { return float64(r.Lease.Dropped) }, num),
		t.fig(func(r Repetition) float64 { return float64(r.Lease.Errors) }, num), t.fig(func(r Repetition) float64 { return r.Lease.CentralOpsPS }, num), t.target(SectionLease))
	t.gateway(s)
}

// central writes one row per central variant.
func (t table) central(s *strings.Builder) {
	if len(t.reps) == 0 {
		return
	}
	for i, c := range t.reps[0].Central {
		at := func(f func(Central) float64) func(Repetition) float64 {
			return func(r Repetition) float64 {
				if i >= len(r.Central) {
					return 0
				}
				return f(r.Central[i])
			}
		}
		other := fmt.Sprintf("%s µs client CPU per decision, Redis main thread %s%% busy at %s µs per call, %s errors",
			t.fig(at(func(c Central) float64 { return c.CPUPerDecisionUs }), verb("%.1f")), t.fig(at(func(c Central) float64 { return 100 * c.RedisBusy }), verb("%.0f")),
			t.fig(at(func(c Central) float64 { return c.RedisUsPerCall }), verb("%.1f")), t.fig(at(func(c Central) float64 { return float64(c.Errors) }), num))
		if c.PerPipeline > 0 {
			other += fmt.Sprintf(", %s decisions per pipeline, linger %v", t.fig(at(func(c Central) float64 { return c.PerPipeline }), verb("%.1f")), time.Duration(c.LingerUs*1e3))
		}
		fmt.Fprintf(s, "| %s | %s, %d closed-loop callers, GOMAXPROCS %d, one primary | %s | %s | %s | %s | |\n",
			SectionCentral, c.Mode, c.Callers, c.GOMAXPROCS, t.fig(at(func(c Central) float64 { return c.DecisionsPerSec }), num),
			t.fig(at(func(c Central) float64 { return c.P50Ms }), verb("%.3f")), t.fig(at(func(c Central) float64 { return c.P99Ms }), verb("%.3f")), other)
	}
}

// openLoop writes section 3's open-loop row: hot-tenant as `ratelab run` drives it, with the CPU
// per decision by part and the primaries' pipeline depth, so the gap to the closed loop shows.
func (t table) openLoop(s *strings.Builder) {
	cpu := func(f func(*results.CPUPerDecision) float64) func(Repetition) float64 {
		return func(r Repetition) float64 {
			if r.OpenLoop.CPU == nil {
				return 0
			}
			return f(r.OpenLoop.CPU)
		}
	}
	f1 := verb("%.1f")
	fmt.Fprintf(s, "| %s | hot-tenant, %s offered, open loop over 3 primaries x 1 replica, coalescing | %s | %s | %s | µs CPU per decision: generator %s, primaries %s, replicas %s, total %s; %s script calls per read | |\n",
		SectionCentral, t.fig(func(r Repetition) float64 { return r.OpenLoop.OfferedRPS }, num), t.fig(func(r Repetition) float64 { return r.OpenLoop.AchievedRPS }, num),
		t.fig(func(r Repetition) float64 { return float64(r.OpenLoop.P50Ms) }, latencyMs), t.fig(func(r Repetition) float64 { return float64(r.OpenLoop.P99Ms) }, latencyMs),
		t.fig(cpu(func(c *results.CPUPerDecision) float64 { return c.Generator }), f1), t.fig(cpu(func(c *results.CPUPerDecision) float64 { return c.Primaries }), f1),
		t.fig(cpu(func(c *results.CPUPerDecision) float64 { return c.Replicas }), f1), t.fig(cpu(func(c *results.CPUPerDecision) float64 { return c.Total }), f1),
		t.fig(func(r Repetition) float64 { return r.OpenLoop.CallsPerRead }, f1))
}

// ceiling writes the redis-benchmark row, with the ratio and its target.
func (t table) ceiling(s *strings.Builder) {
	if len(t.reps) == 0 {
		return
	}
	ce := t.reps[0].Ceiling
	fmt.Fprintf(s, "| %s | redis-benchmark EVALSHA, -c %d -P %d, same primary and script, the better of %d runs | %s | %s | %s | Redis main thread %s%% busy at %s µs per call (both runs); best central / ceiling = %s (%s) | %s |\n",
		SectionCeiling, ce.Conns, ce.Depth, len(ce.Runs), t.fig(func(r Repetition) float64 { return r.Ceiling.RequestsPerSec }, num),
		t.fig(func(r Repetition) float64 { return r.Ceiling.P50Ms }, verb("%.3f")), t.fig(func(r Repetition) float64 { return r.Ceiling.P99Ms }, verb("%.3f")),
		t.fig(func(r Repetition) float64 { return 100 * r.Ceiling.RedisBusy }, verb("%.0f")), t.fig(func(r Repetition) float64 { return r.Ceiling.RedisUsPerCall }, verb("%.1f")),
		t.fig(func(r Repetition) float64 { return r.Ratio.Value }, verb("%.2f")), t.bestModes(), t.target(SectionCeiling))
}

// gateway writes one row per gateway variant; the limited ones carry their ratio to bare.
func (t table) gateway(s *strings.Builder) {
	if len(t.reps) == 0 {
		return
	}
	g := t.reps[0].Gateway
	for i, v := range g.Variants {
		at := func(f func(GatewayVariant) float64) func(Repetition) float64 {
			return func(r Repetition) float64 {
				if i >= len(r.Gateway.Variants) {
					return 0
				}
				return f(r.Gateway.Variants[i])
			}
		}
		other := fmt.Sprintf("CPU µs per request: wrk %s, server %s, Redis %s; %s not 2xx, %s socket errors",
			t.fig(at(func(v GatewayVariant) float64 { return v.WrkCPUUs }), verb("%.1f")), t.fig(at(func(v GatewayVariant) float64 { return v.ServerCPUUs }), verb("%.1f")),
			t.fig(at(func(v GatewayVariant) float64 { return v.RedisCPUUs }), verb("%.1f")),
			t.fig(at(func(v GatewayVariant) float64 { return float64(v.Non2xx) }), num), t.fig(at(func(v GatewayVariant) float64 { return float64(v.SocketErrors) }), num))
		row := SectionGateway + " " + v.Name
		switch v.Name {
		case GatewayMemory:
			other = fmt.Sprintf("%s x bare; ", t.fig(func(r Repetition) float64 { return r.Gateway.MemoryRatio }, verb("%.2f"))) + other
		case GatewayRedis:
			other = fmt.Sprintf("%s x bare; ", t.fig(func(r Repetition) float64 { return r.Gateway.RedisRatio }, verb("%.2f"))) + other
		}
		fmt.Fprintf(s, "| %s | %s, wrk %d connections closed loop, requests/s | %s | %s | %s | %s | %s |\n",
			SectionGateway, v.Name, g.Conns, t.fig(at(func(v GatewayVariant) float64 { return v.RequestsPerSec }), num),
			t.fig(at(func(v GatewayVariant) float64 { return v.P50Ms }), verb("%.3f")), t.fig(at(func(v GatewayVariant) float64 { return v.P99Ms }), verb("%.3f")),
			other, t.target(row))
	}
}

// bestModes names the central mode that was best against the ceiling, or each of them in the
// order first seen when repetitions disagree.
func (t table) bestModes() string {
	var modes []string
	for _, r := range t.reps {
		if !slices.Contains(modes, r.Ratio.Best) {
			modes = append(modes, r.Ratio.Best)
		}
	}
	return strings.Join(modes, " / ")
}

// ratio writes the ratio line and the warnings that say when it is not to be trusted.
func (t table) ratio(s *strings.Builder) {
	if len(t.reps) == 0 {
		return
	}
	ratio := t.fig(func(r Repetition) float64 { return r.Ratio.Value }, verb("%.2f"))
	fmt.Fprintf(s, "**ratio**: best central mode (%s) / redis-benchmark ceiling = **%s** (%s / %s)\n\n",
		t.bestModes(), ratio, t.fig(func(r Repetition) float64 { return r.Ratio.Value * r.Ceiling.RequestsPerSec }, num),
		t.fig(func(r Repetition) float64 { return r.Ceiling.RequestsPerSec }, num))
	ratios := make([]float64, len(t.reps))
	for i, r := range t.reps {
		ratios[i] = r.Ratio.Value
	}
	if spreadOf(ratios).Median > 1.05 {
		s.WriteString("A ratio above 1 means redis-benchmark got less of the machine than the Go client did in its runs (one single-threaded process against a client with GOMAXPROCS threads on busy cores): the ceiling is under-measured, rerun on a quiet machine.\n\n")
	}
	for i, r := range t.reps {
		if w := cpuWarning(r); w != "" {
			if len(t.reps) > 1 {
				w = fmt.Sprintf("Repetition %d: %s", i+1, w)
			}
			s.WriteString(w + "\n\n")
		}
	}
}

// cpuWarning says when Redis spent clearly more (or less) CPU per call under run's best central
// variant than under redis-benchmark; "" when they are close or unmeasured.
func cpuWarning(r Repetition) string {
	for _, c := range r.Central {
		if c.Mode != r.Ratio.Best || r.Ceiling.RedisUsPerCall <= 0 || c.RedisUsPerCall <= 0 {
			continue
		}
		// The script does the same work for both clients; a main thread that spent much more
		// CPU per call in one of them ran on a slower (contended) core then.
		if q := c.RedisUsPerCall / r.Ceiling.RedisUsPerCall; q > 1.15 || q < 1/1.15 {
			return fmt.Sprintf("Redis spent %.1f µs of CPU per call under %s and %.1f µs under redis-benchmark: the machine's speed changed between them (other load on the host), so the ratio mixes two machines; rerun on a quieter one.",
				c.RedisUsPerCall, c.Mode, r.Ceiling.RedisUsPerCall)
		}
	}
	return ""
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
