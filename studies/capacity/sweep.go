package capacity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// SchemaCapacity is the schema of capacity.json.
const SchemaCapacity = "ratelab.capacity/v1"

// Output file names in a sweep's directory.
const (
	JSONFile     = "capacity.json"
	MarkdownFile = "capacity.md"
	ChartStem    = "capacity" // capacity.png, capacity.svg
	USLChartStem = "usl"      // usl.png, usl.svg (with 3 or more primary counts)
)

// DefaultStepDuration is how long each step runs: long enough for a few per-second rows after
// the first (connection warm-up) second, short enough for a sweep of ~10 steps per primary
// count to take a minute or two.
const DefaultStepDuration = 3 * time.Second

// DefaultSLO is a sweep's pass/fail when the scenario sets none: the generator achieves 95% of
// the offered rate, at most 1% of decisions fail, and p99 over the offered requests stays under
// 25 ms (half the default decision timeout: beyond it queueing, not the script, sets latency).
// A step that drops more than 1% of its offered requests has no measurable p99 and fails.
func DefaultSLO() scenarios.SLO {
	p99, achieved, errs := 25.0, 0.95, 0.01
	return scenarios.SLO{P99Ms: &p99, AchievedRatio: &achieved, ErrorRatio: &errs}
}

// SweepOptions are the knobs of a sweep that are not part of the scenario.
type SweepOptions struct {
	// Primaries lists the cluster sizes to sweep; default the scenario's cluster.primaries.
	Primaries []int
	// Limiters lists the limiter kinds to sweep each size with (e.g. token-bucket and lease, to
	// see what leases change); default the scenario's limiter.kind.
	Limiters []scenarios.LimiterKind
	// Replicas per primary; nil keeps the scenario's.
	Replicas *int
	// StepDuration of each step; default DefaultStepDuration.
	StepDuration time.Duration
	// Search steps the rate; zero fields take the Default* constants.
	Search Search
	// Out is the sweep's directory (steps go to Out/steps/); default out/capacity-<scenario>-<time>.
	Out string
	// Version is ratelab's version, recorded in each step's summary.
	Version string
	// Logf receives progress; nil is silent.
	Logf func(format string, args ...any)
}

// Step is one measured rate.
type Step struct {
	Primaries     int        `json:"primaries"`
	Limiter       string     `json:"limiter"`
	Phase         string     `json:"phase"` // "step" (geometric) or "bisect"
	Offered       float64    `json:"offered_rps"`
	Achieved      float64    `json:"achieved_rps"`
	P50Ms         results.Ms `json:"p50_ms"`
	P99Ms         results.Ms `json:"p99_ms"`
	ErrorRatio    float64    `json:"error_ratio"`
	AchievedRatio float64    `json:"achieved_ratio"`
	Dropped       int64      `json:"dropped"`
	Pass          bool       `json:"pass"`
	Failed        []string   `json:"failed"`
	Dir           string     `json:"dir"`
}

// Series is the sweep of one cluster size with one limiter kind.
type Series struct {
	Primaries int    `json:"primaries"`
	Limiter   string `json:"limiter"`
	Steps     []Step `json:"steps"`
	// Knee is the highest passing step: the max sustainable rate. nil when no step passed.
	Knee *Step `json:"knee"`
	// Note says when the knee is only a lower bound (the SLO held up to the max rate).
	Note string `json:"note,omitempty"`
}

// SweepResult is capacity.json.
type SweepResult struct {
	Schema        string   `json:"schema"`
	Scenario      string   `json:"scenario"`
	Mode          string   `json:"mode"`
	StartedAt     string   `json:"started_at"`
	StepDurationS float64  `json:"step_duration_s"`
	SLO           []string `json:"slo"`
	Search        Search   `json:"search"`
	Series        []Series `json:"series"`
	// Fits holds, per limiter kind, the USL fit of knee throughput against primaries.
	Fits []Fit  `json:"fits"`
	Dir  string `json:"-"`
}

// Fit is one limiter kind's USL fit; USL is nil (and Note says why) with fewer than 3 sizes.
type Fit struct {
	Limiter string `json:"limiter"`
	USL     *USL   `json:"usl"`
	Note    string `json:"note,omitempty"`
}

// Sweep finds, for each cluster size, the highest offered rate that meets the SLO. Each size gets
// one fresh local cluster (the scenario's cluster.provider is ignored), reused by its steps with
// its keys flushed between them; each step is an engine.Run of StepDuration without faults,
// written under Out/steps/. It writes capacity.json, capacity.md and the charts.
func Sweep(ctx context.Context, spec *scenarios.Spec, opts SweepOptions) (*SweepResult, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if !spec.NeedsCluster() {
		return nil, fmt.Errorf("capacity sweep: limiter.kind %s does not use Redis; sweep a scenario whose limiter does", spec.Limiter.Kind)
	}
	s := opts.Search.withDefaults()
	if err := validateSearch(s, opts.StepDuration); err != nil {
		return nil, err
	}
	step := cmp.Or(opts.StepDuration, DefaultStepDuration)
	sizes, err := sweepSizes(spec, opts.Primaries)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	dir := cmp.Or(opts.Out, filepath.Join("out", "capacity-"+spec.Name+"-"+started.Format("20060102-150405")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	run := stepSpec(spec, step, opts.Replicas)
	res := &SweepResult{
		Schema: SchemaCapacity, Scenario: spec.Name, StartedAt: started.UTC().Format(time.RFC3339),
		StepDurationS: step.Seconds(), Search: s, Dir: dir,
	}
	for _, c := range run.SLO.Evaluate(&results.Summary{}).Checks {
		res.SLO = append(res.SLO, fmt.Sprintf("%s %g", c.Name, c.Limit))
	}
	kinds := opts.Limiters
	if len(kinds) == 0 {
		kinds = []scenarios.LimiterKind{spec.Limiter.Kind}
	}
	errs := []error{sweepAll(ctx, res, spec, run, sizes, kinds, opts.Version, logf)}
	fitUSL(res)
	errs = append(errs, writeSweep(res))
	return res, errors.Join(errs...)
}

// sweepSizes is the cluster sizes to sweep: sizes, or the scenario's own when none is given.
func sweepSizes(spec *scenarios.Spec, sizes []int) ([]int, error) {
	if len(sizes) == 0 {
		sizes = []int{spec.Cluster.Primaries}
	}
	for _, p := range sizes {
		if p < 1 || p > 64 {
			return nil, fmt.Errorf("capacity sweep: primaries %d: must be between 1 and 64", p)
		}
	}
	return sizes, nil
}

// stepSpec is the scenario every step runs: spec without its faults, step long, with replicas
// per primary (nil keeps the scenario's) and DefaultSLO when the scenario sets none.
func stepSpec(spec *scenarios.Spec, step time.Duration, replicas *int) scenarios.Spec {
	r := *spec.Cluster.Replicas
	if replicas != nil {
		r = *replicas
	}
	run := *spec
	run.Faults = nil
	run.Duration = scenarios.Duration(step)
	run.Cluster.Replicas = &r
	if isZeroSLO(spec.SLO) {
		run.SLO = DefaultSLO()
	}
	return run
}

// sweepAll sweeps each size with each limiter kind into res.Series, stopping at the first that
// fails. A kind other than spec's is applied to run with that kind's own defaults.
func sweepAll(ctx context.Context, res *SweepResult, spec *scenarios.Spec, run scenarios.Spec, sizes []int, kinds []scenarios.LimiterKind, version string, logf func(string, ...any)) error {
	for _, p := range sizes {
		for _, kind := range kinds {
			r := run
			r.Limiter.Kind = kind
			if kind != spec.Limiter.Kind {
				r.Limiter.Lease = nil
				r.ApplyDefaults()
				if err := r.Validate(); err != nil {
					return fmt.Errorf("limiter %s: %w", kind, err)
				}
			}
			series, err := sweepSize(ctx, r, p, res.Search, res.Dir, version, logf, &res.Mode)
			res.Series = append(res.Series, series)
			if err != nil {
				return fmt.Errorf("primaries %d, limiter %s: %w", p, kind, err)
			}
		}
	}
	return nil
}

func validateSearch(s Search, step time.Duration) error {
	var errs []error
	if !(s.Start > 0) {
		errs = append(errs, fmt.Errorf("start rate %v: must be > 0 requests/s", s.Start))
	}
	if !(s.Factor > 1) {
		errs = append(errs, fmt.Errorf("factor %v: must be > 1 (2 doubles the rate each step)", s.Factor))
	}
	if !(s.Max >= s.Start) || s.Max > 10_000_000 {
		errs = append(errs, fmt.Errorf("max rate %v: must be between the start rate (%v) and 10,000,000", s.Max, s.Start))
	}
	if !(s.Tolerance > 0 && s.Tolerance < 1) {
		errs = append(errs, fmt.Errorf("tolerance %v: must be in (0, 1), e.g. 0.05", s.Tolerance))
	}
	if step != 0 && step < time.Second {
		errs = append(errs, fmt.Errorf("step duration %v: must be at least 1s", step))
	}
	return errors.Join(errs...)
}

func isZeroSLO(s scenarios.SLO) bool { return len(s.Evaluate(&results.Summary{}).Checks) == 0 }

// sweepSize starts one local cluster of p primaries (engine.Share) and searches its knee, each
// step on the cluster emptied first: it starts from full buckets, as its overspend envelope
// assumes.
func sweepSize(ctx context.Context, run scenarios.Spec, p int, s Search, dir, version string, logf func(string, ...any), mode *string) (Series, error) {
	series := Series{Primaries: p, Limiter: string(run.Limiter.Kind)}
	logf("capacity: %d primaries x %d replicas (%s): starting a local cluster", p, *run.Cluster.Replicas, run.Limiter.Kind)
	run.Cluster.Provider = scenarios.ProviderLocal
	run.Cluster.Primaries = p
	sh, err := engine.Share(ctx, engine.Options{Logf: logf}, &run)
	if err != nil {
		return series, err
	}
	defer sh.Close()
	measure := func(ctx context.Context, rate float64, phase string) (Step, error) {
		spec := run
		spec.Load.Rate = rate
		out := filepath.Join(dir, "steps", fmt.Sprintf("p%d-%s-r%.0f", p, run.Limiter.Kind, rate))
		r, err := sh.Run(ctx, &spec, engine.Options{Out: out, Version: version}, nil)
		if err != nil {
			return Step{}, err
		}
		if ctx.Err() != nil {
			return Step{}, ctx.Err()
		}
		st := stepOf(r.Summary, p, phase, out)
		st.Limiter = string(run.Limiter.Kind)
		*mode = r.Summary.Environment.Mode
		verdict := "pass"
		if !st.Pass {
			verdict = "FAIL " + strings.Join(st.Failed, ", ")
		}
		logf("capacity: %d primaries, %s, %s %8.0f/s offered: achieved %8.0f/s, p99 %7.3f ms, errors %.4f: %s",
			p, run.Limiter.Kind, phase, rate, st.Achieved, st.P99Ms, st.ErrorRatio, verdict)
		return st, nil
	}
	steps, k, err := s.run(ctx, measure)
	series.Steps, series.Knee = steps, k
	if k != nil && k.Offered >= s.Max {
		series.Note = fmt.Sprintf("the SLO held up to the max rate %.0f/s: the knee is at least that", s.Max)
	}
	if k == nil && err == nil {
		series.Note = "no step met the SLO, even the lowest rate"
	}
	return series, err
}

func stepOf(sum *results.Summary, p int, phase, dir string) Step {
	st := Step{
		Primaries: p, Phase: phase, Offered: sum.Load.OfferedRPS, Achieved: sum.Load.AchievedRPS,
		P50Ms: sum.LatencyMs.P50, P99Ms: sum.LatencyMs.P99,
		ErrorRatio: results.Ratio(sum.Outcomes.Errors, sum.Load.Completed), Dropped: sum.Load.Dropped,
		Pass: sum.SLO.Pass, Failed: []string{}, Dir: dir,
	}
	if st.Offered > 0 {
		st.AchievedRatio = st.Achieved / st.Offered
	}
	for _, c := range sum.SLO.Checks {
		if !c.Pass {
			st.Failed = append(st.Failed, fmt.Sprintf("%s %g (was %.4g)", c.Name, c.Limit, c.Value))
		}
	}
	return st
}

// fitUSL fits, per limiter kind, knee throughput against primaries (3 or more sizes with a knee).
func fitUSL(res *SweepResult) {
	res.Fits = nil
	var kinds []string
	pts := map[string][]USLPoint{}
	for _, s := range res.Series {
		if _, ok := pts[s.Limiter]; !ok {
			kinds = append(kinds, s.Limiter)
			pts[s.Limiter] = []USLPoint{}
		}
		if s.Knee != nil {
			pts[s.Limiter] = append(pts[s.Limiter], USLPoint{N: float64(s.Primaries), X: s.Knee.Achieved})
		}
	}
	for _, k := range kinds {
		u, err := FitUSL(pts[k])
		f := Fit{Limiter: k, USL: u}
		if err != nil {
			f.Note = "no USL fit: " + err.Error()
		}
		res.Fits = append(res.Fits, f)
	}
}
