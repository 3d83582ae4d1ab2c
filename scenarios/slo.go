package scenarios

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"ratelab/results"
)

// SLO is the pass/fail contract of a run. Every field is optional; a run with none always passes.
// `ratelab run` exits 3 when any check fails.
type SLO struct {
	// P99Ms and P999Ms bound the run's latency percentiles (from intended start), in ms.
	P99Ms  *float64 `yaml:"p99_ms,omitempty"`
	P999Ms *float64 `yaml:"p999_ms,omitempty"`
	// OverspendRatio bounds overspend requests / allowed requests.
	OverspendRatio *float64 `yaml:"overspend_ratio,omitempty"`
	// FalseDenyRatio bounds false denies / denied requests.
	FalseDenyRatio *float64 `yaml:"false_deny_ratio,omitempty"`
	// ErrorRatio bounds decisions that ended in an error / decisions.
	ErrorRatio *float64 `yaml:"error_ratio,omitempty"`
	// AchievedRatio is the least share of the offered rate that must be achieved.
	AchievedRatio *float64 `yaml:"achieved_ratio,omitempty"`
	// RecoveredS bounds, for every fault, the seconds from its end to recovery: from injection
	// for an instant fault (kill, failover), from injection + for_s for one that lasts (a 30 s
	// latency fault's own 30 s are not slowness to recover). A fault that never recovered fails it.
	RecoveredS *float64 `yaml:"recovered_s,omitempty"`
	// RSSGrowth bounds (RSS at the end - RSS after warm-up) / RSS after warm-up, warm-up being
	// Warmup; both are read after free pages went back to the OS (see results.Process): a
	// soak's memory must stay flat.
	RSSGrowth *float64 `yaml:"rss_growth,omitempty"`
	// HeapGrowth is RSSGrowth for the live Go heap after a forced GC (the leak signal that a short
	// run can judge; RSS also holds stacks, runtime metadata and memory outside the Go heap).
	HeapGrowth *float64 `yaml:"heap_growth,omitempty"`
	// GoroutineGrowth bounds goroutines at the end minus after warm-up (the end is taken
	// after the workers stopped, so a run without leaks is below 0).
	GoroutineGrowth *float64 `yaml:"goroutine_growth,omitempty"`
	// Warmup is when the warm-up footprint sample, the baseline of the three growth checks, is
	// taken (default a tenth of the run; 0 < warmup < duration). Give a run with faults a
	// warm-up that spans one round of them and repeat the round after it: the first pause or
	// failover grows the process once (re-dialled connections scattered through the heap, the
	// runtime's metadata for the peak), and a leak is what the second, identical round adds.
	// The summary then also keeps the footprint at a tenth of the run (process.rss_early_mb),
	// so that one-time step stays visible.
	Warmup *Duration `yaml:"warmup,omitempty"`
}

// sloField is one SLO key: its YAML name, its field, whether the value is a ceiling or a floor,
// and how to read the run's value.
type sloField struct {
	name    string
	field   func(*SLO) **float64
	atLeast bool
	value   func(*results.Summary) float64
}

var sloFields = []sloField{
	{"p99_ms", func(s *SLO) **float64 { return &s.P99Ms }, false, func(r *results.Summary) float64 { return float64(r.LatencyMs.P99) }},
	{"p999_ms", func(s *SLO) **float64 { return &s.P999Ms }, false, func(r *results.Summary) float64 { return float64(r.LatencyMs.P999) }},
	{"overspend_ratio", func(s *SLO) **float64 { return &s.OverspendRatio }, false, func(r *results.Summary) float64 { return r.Overspend.Ratio }},
	{"false_deny_ratio", func(s *SLO) **float64 { return &s.FalseDenyRatio }, false, func(r *results.Summary) float64 { return r.Overspend.FalseDenyRatio }},
	{"error_ratio", func(s *SLO) **float64 { return &s.ErrorRatio }, false, func(r *results.Summary) float64 {
		return results.Ratio(r.Outcomes.Errors, r.Load.Completed)
	}},
	{"achieved_ratio", func(s *SLO) **float64 { return &s.AchievedRatio }, true, func(r *results.Summary) float64 {
		if r.Load.OfferedRPS == 0 {
			return 0
		}
		return r.Load.AchievedRPS / r.Load.OfferedRPS
	}},
	{"recovered_s", func(s *SLO) **float64 { return &s.RecoveredS }, false, worstRecovery},
	{"rss_growth", func(s *SLO) **float64 { return &s.RSSGrowth }, false, func(r *results.Summary) float64 {
		if r.Process.RSSWarmMB <= 0 {
			return 0
		}
		return (r.Process.RSSEndMB - r.Process.RSSWarmMB) / r.Process.RSSWarmMB
	}},
	{"heap_growth", func(s *SLO) **float64 { return &s.HeapGrowth }, false, func(r *results.Summary) float64 {
		if r.Process.HeapWarmMB <= 0 {
			return 0
		}
		return (r.Process.HeapEndMB - r.Process.HeapWarmMB) / r.Process.HeapWarmMB
	}},
	{"goroutine_growth", func(s *SLO) **float64 { return &s.GoroutineGrowth }, false, func(r *results.Summary) float64 {
		return float64(r.Process.GoroutinesEnd - r.Process.GoroutinesWarm)
	}},
}

// worstRecovery is the longest time from a fault to its recovery; a fault that was detected and
// never recovered counts as the whole rest of the run, one never detected (no trouble seen) as 0.
func worstRecovery(r *results.Summary) float64 {
	worst := 0.0
	for _, f := range r.Faults {
		if f.DetectedS == 0 {
			continue
		}
		d := max(f.RecoveredS-(f.AtS+f.ForS), 0)
		if f.RecoveredS == 0 {
			d = r.DurationS - f.AtS
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// SLOKeys lists the keys `slo:` and --slo accept.
func SLOKeys() []string {
	keys := make([]string, len(sloFields))
	for i, f := range sloFields {
		keys[i] = f.name
	}
	sort.Strings(keys)
	return keys
}

// SetSLO applies one "key=value" (the --slo flag) over the scenario's slo section.
func (s *Spec) SetSLO(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("--slo %q: write key=value, e.g. p99_ms=5 (keys: %s)", kv, strings.Join(SLOKeys(), ", "))
	}
	k = strings.TrimSpace(k)
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return fmt.Errorf("--slo %s: %q is not a number", k, v)
	}
	for _, f := range sloFields {
		if f.name == k {
			*f.field(&s.SLO) = &x
			return nil
		}
	}
	return fmt.Errorf("--slo %s: unknown key; use one of %s", k, strings.Join(SLOKeys(), ", "))
}

// validateSLO reports limits no run can meet or that make no sense.
func (s *Spec) validateSLO(bad badFunc) {
	if w := s.SLO.Warmup; w != nil && (*w <= 0 || (s.Duration > 0 && *w >= s.Duration)) {
		bad("slo.warmup", time.Duration(*w), fmt.Sprintf("must be within the run: 0 < warmup < duration (%s); leave it out for a tenth of the run", time.Duration(s.Duration)))
	}
	for _, f := range sloFields {
		p := *f.field(&s.SLO)
		if p == nil {
			continue
		}
		v := *p
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || (v < 0 && f.name != "goroutine_growth"):
			bad("slo."+f.name, v, "must be a finite number >= 0")
		case strings.HasSuffix(f.name, "_ratio") && v > 1:
			bad("slo."+f.name, v, "is a ratio: write it between 0 and 1 (e.g. 0.001 for 0.1%)")
		}
	}
}

// Evaluate checks a run's summary against the SLO.
func (s *SLO) Evaluate(sum *results.Summary) results.SLO {
	out := results.SLO{Pass: true, Checks: []results.Check{}}
	for _, f := range sloFields {
		p := *f.field(s)
		if p == nil {
			continue
		}
		v := f.value(sum)
		op, pass := "<=", v <= *p
		if f.atLeast {
			op, pass = ">=", v >= *p
		}
		out.Checks = append(out.Checks, results.Check{Name: f.name + " " + op, Limit: *p, Value: v, Pass: pass})
		out.Pass = out.Pass && pass
	}
	return out
}
