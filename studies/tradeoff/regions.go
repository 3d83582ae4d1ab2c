package tradeoff

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/scenarios"
)

// DefaultRegionsScenario is the built-in a regions sweep rewrites: every design runs its
// trace (seed, load, tenants, policy), so the rows differ by design and period only.
const DefaultRegionsScenario = "regions-global"

// DefaultPeriods are the rebalance periods T a sweep tries: from a few round trips to many
// seconds, each 4 times the last.
var DefaultPeriods = []time.Duration{250 * time.Millisecond, time.Second, 4 * time.Second, 16 * time.Second}

// Designs are the regions designs a sweep runs, in the order of its rows.
var Designs = []string{scenarios.DesignGlobal, scenarios.DesignSplit, scenarios.DesignRebalance}

// RegionsOptions are the knobs of a regions sweep.
type RegionsOptions struct {
	// Periods are the rebalance periods T; default DefaultPeriods. The global and split
	// designs have no period: they run once each.
	Periods []time.Duration
	// Duration of every run; 0 is the scenario's, or twice the longest period when that is
	// longer, so that every period has its rebalances in the run.
	Duration time.Duration
	// Out is the sweep's directory (runs go to Out/runs/); default out/regions-sweep-<time>.
	Out string
	// Version is ratelab's version, recorded in each run's summary.
	Version string
	// Logf receives progress; nil is silent.
	Logf func(format string, args ...any)
}

// RegionsPlan is the runs of a regions sweep of base: the global and split designs once, the
// rebalance design at each period, all on base's seed and load for duration (0: base's, or
// twice the longest period when that is longer). base must have a regions
// section; it is not modified. A rewrite the spec's validation refuses is a Plan whose Run
// says so (Err), not an error: the sweep's table keeps its row.
func RegionsPlan(base *scenarios.Spec, periods []time.Duration, duration time.Duration) ([]Plan, error) {
	if base.Regions == nil {
		return nil, fmt.Errorf("scenario %s: regions: absent: a regions sweep needs a multi-region scenario; use %s or a file with a regions: section", base.Name, DefaultRegionsScenario)
	}
	if len(periods) == 0 {
		periods = DefaultPeriods
	}
	for _, t := range periods {
		if t <= 0 {
			return nil, fmt.Errorf("--periods %v: a rebalance period must be > 0; write it like 250ms or 4s", t)
		}
	}
	if duration != 0 && duration < time.Second {
		return nil, fmt.Errorf("--duration %v: must be at least 1s", duration)
	}
	if duration == 0 {
		duration = max(time.Duration(base.Duration), 2*slices.Max(periods))
	}
	var plans []Plan
	for _, d := range Designs {
		ts := []time.Duration{0}
		if d == scenarios.DesignRebalance {
			ts = periods
		}
		for _, t := range ts {
			s := WithDesign(base, d, t)
			s.Duration = scenarios.Duration(duration)
			run := results.StudyRun{Design: d, PeriodS: t.Seconds()}
			if err := revalidate(&s, "regions.design "+d); err != nil {
				run.Err = err.Error()
			}
			plans = append(plans, Plan{Run: run, Name: regionsRunName(d, t), Spec: s})
		}
	}
	return plans, nil
}

// WithDesign returns a copy of base whose regions share the limit by design, with period T
// for the rebalance design (0 keeps base's period) and none for the others, named after the
// design (designName). The copy's regions section is its own.
func WithDesign(base *scenarios.Spec, design string, period time.Duration) scenarios.Spec {
	s := *base
	r := *base.Regions
	r.List = append([]scenarios.RegionCfg(nil), base.Regions.List...)
	r.Design = design
	switch {
	case design != scenarios.DesignRebalance:
		r.Period = 0 // only rebalance has a period
	case period > 0:
		r.Period = scenarios.Duration(period)
	}
	s.Regions = &r
	s.Faults = append([]scenarios.FaultSpec(nil), base.Faults...)
	s.Name = designName(base.Name, design)
	return s
}

// designName is the name of base's run with design: a name ending in a design's name gets
// design's instead (regions-global becomes regions-split, as the built-ins are named), any
// other gets it appended.
func designName(base, design string) string {
	for _, d := range Designs {
		if strings.HasSuffix(base, "-"+d) {
			return strings.TrimSuffix(base, d) + design
		}
	}
	return base + "-" + design
}

// regionsRunName is a run's directory name: the design, and the period for rebalance.
func regionsRunName(design string, period time.Duration) string {
	if period == 0 {
		return design
	}
	return design + "-T" + period.String()
}

// RegionsSweep runs RegionsPlan(base, ...) into opts.Out and returns every run, failed ones
// included; on an interrupt, the runs up to it and ctx's error.
func RegionsSweep(ctx context.Context, base *scenarios.Spec, opts RegionsOptions) ([]results.StudyRun, string, error) {
	plans, err := RegionsPlan(base, opts.Periods, opts.Duration)
	if err != nil {
		return nil, "", err
	}
	out := cmp.Or(opts.Out, filepath.Join("out", "regions-sweep-"+time.Now().Format("20060102-150405")))
	runs, err := runAll(ctx, plans, out, opts.Version, logfOf(opts.Logf, "regions sweep"))
	return runs, out, err
}

// ParsePeriods reads --periods: durations separated by commas, each > 0.
func ParsePeriods(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil {
			if _, nerr := strconv.ParseFloat(f, 64); nerr == nil {
				return nil, fmt.Errorf("--periods %q: %q has no unit; write it like 250ms, 1s or 16s", s, f)
			}
			return nil, fmt.Errorf("--periods %q: %q is not a duration; write it like 250ms, 1s or 16s", s, f)
		}
		if d <= 0 {
			return nil, fmt.Errorf("--periods %q: %q must be > 0", s, f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--periods %q: no period; give at least one, like 250ms,1s,4s,16s", s)
	}
	return out, nil
}

// logfOf is logf with prefix, or a silent one when logf is nil.
func logfOf(logf func(string, ...any), prefix string) func(string, ...any) {
	if logf == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { logf(prefix+": "+format, args...) }
}
