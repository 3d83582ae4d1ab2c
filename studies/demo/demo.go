// Package demo is `ratelab demo`: a guided sequence of short scenario runs that walks the
// argument of the project (the fixed window's boundary burst, the token bucket, a hot tenant on
// one shard, fail-open vs fail-closed under a paused primary, leases cutting Redis load, one
// global bucket against a quota split between regions) and ends with one HTML page linking every
// step's numbers, plots and report.
package demo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"ratelab/report"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// Options are the knobs of one demo.
type Options struct {
	// Out is the demo directory: one sub-directory per run and index.html.
	Out string
	// Quick shortens every run to about 2 s (for tests and a first look).
	Quick bool
	// Version is ratelab's version, recorded in every summary.
	Version string
	// Logf receives progress messages; nil is silent.
	Logf func(format string, args ...any)
	// Live, when set, gives each run its live-progress hooks: it is called with the run's label
	// and scheduled duration before the run starts, and the hooks' Done after it ends.
	Live func(label string, total time.Duration) LiveHooks
}

// LiveHooks follow one run as it goes (see engine.Options); nil fields are skipped.
type LiveHooks struct {
	OnInterval func(results.Interval)
	OnProgress func(results.Progress)
	Done       func()
}

// StepRun is one scenario run of a step, as the index shows it.
type StepRun struct {
	// Label names the run inside its step ("fixed window", "token bucket").
	Label string
	// Dir is the run directory relative to the demo directory.
	Dir string
	// Summary is the run's summary.json.
	Summary *results.Summary
}

// Fact is one key number of a step, already formatted.
type Fact struct {
	Label, Value string
}

// Step is one chapter of the story with what its runs measured.
type Step struct {
	Title     string
	Narration []string
	Runs      []StepRun
	// Facts are the numbers picked from the runs' summaries (see facts).
	Facts []Fact
	// Plots are the chart stems the index shows for each run (default: throughput, latency,
	// overspend).
	Plots []string
}

// runPlan is a run still to do: a built-in scenario and the edits the demo makes to it.
type runPlan struct {
	label, scenario, dir string
	edit                 func(s *scenarios.Spec, quick bool)
}

type stepPlan struct {
	title     string
	narration []string
	runs      []runPlan
	facts     func(runs []StepRun) []Fact
	plots     []string // chart stems for the index; nil: plotStems
}

// shorten sets the run's duration: full normally, 2 s with --quick.
func shorten(full time.Duration) func(*scenarios.Spec, bool) {
	return func(s *scenarios.Spec, quick bool) {
		s.Duration = scenarios.Duration(full)
		if quick {
			s.Duration = scenarios.Duration(2 * time.Second)
		}
	}
}

// withKind is shorten plus a limiter kind override.
func withKind(full time.Duration, kind scenarios.LimiterKind) func(*scenarios.Spec, bool) {
	return func(s *scenarios.Spec, quick bool) {
		shorten(full)(s, quick)
		s.Limiter.Kind = kind
	}
}

// pauseEdit shortens a pause scenario and moves its fault so that it still falls inside the run
// with time to recover after it: at a third of the run, for a third of it.
func pauseEdit(s *scenarios.Spec, quick bool) {
	d := 9 * time.Second
	if quick {
		d = 3 * time.Second
	}
	s.Duration = scenarios.Duration(d)
	for i := range s.Faults {
		s.Faults[i].At = scenarios.Duration(d / 3)
		s.Faults[i].For = scenarios.Duration(d / 3)
	}
}

// plan is the story, in order.
func plan() []stepPlan {
	return []stepPlan{boundaryStep(), hotTenantStep(), pauseStep(), leaseStep(), regionsStep()}
}

// boundaryStep is step 1: the fixed window's boundary burst against the token bucket.
func boundaryStep() stepPlan {
	return stepPlan{
		title: "1. The fixed window's boundary burst",
		narration: []string{
			"A fixed window counts requests per calendar second and resets at the edge. A client that spends its limit at the end of one window and again at the start of the next gets twice the limit in one second.",
			"The same trace runs through the fixed window and the token bucket (burst 50, refilled at 50/s). Overspend is measured against \"at most the limit in any window\": the fixed window overspends, the token bucket stays at about zero.",
		},
		runs: []runPlan{
			{"fixed window", "fixed-window-boundary", "1-fixed-window", withKind(6*time.Second, scenarios.KindFixedWindow)},
			{"token bucket", "fixed-window-boundary", "1-token-bucket", withKind(6*time.Second, scenarios.KindTokenBucket)},
		},
		facts: func(r []StepRun) []Fact {
			return []Fact{
				{"fixed window overspend", fmtOverspend(r[0].Summary)},
				{"token bucket overspend", fmtOverspend(r[1].Summary)},
			}
		},
	}
}

// hotTenantStep is step 2: one hot tenant on one shard.
func hotTenantStep() stepPlan {
	return stepPlan{
		title: "2. A hot tenant on one shard",
		narration: []string{
			"10,000 tenants with Zipf 0.99 skew: a few tenants make most of the traffic, and every decision for one tenant goes to the one primary that owns its key's slot.",
			"Adding shards does not spread one hot key. Watch achieved vs offered, the tail latency, and how much of the load the hottest key's node carries (the load-share chart: its bar against the even share).",
		},
		runs:  []runPlan{{"token bucket", "hot-tenant", "2-hot-tenant", shorten(6 * time.Second)}},
		plots: []string{report.ThroughputChart, report.LatencyChart, report.NodesChart},
		facts: func(r []StepRun) []Fact {
			s := r[0].Summary
			f := []Fact{
				{"offered / achieved", fmt.Sprintf("%.0f / %.0f req/s", s.Load.OfferedRPS, s.Load.AchievedRPS)},
				{"p99 latency", p99Fact(s)},
			}
			if len(s.HotKeys) > 0 {
				k := s.HotKeys[0]
				f = append(f, Fact{"hottest key", fmt.Sprintf("%s (%.1f%% of decisions) on %s", k.Key, 100*k.Share, k.Node)})
				for _, n := range s.Nodes {
					if n.Addr == k.Node {
						f = append(f, Fact{"its node's share of Redis ops", fmt.Sprintf("%.1f%%", 100*n.Share)})
					}
				}
			}
			if s.CPU != nil {
				f = append(f, Fact{"where the cores went", s.CPU.Line()})
			}
			return f
		},
	}
}

// pauseStep is step 3: fail open against fail closed under a paused primary.
func pauseStep() stepPlan {
	return stepPlan{
		title: "3. A paused primary: fail open or fail closed",
		narration: []string{
			"The hottest tenant's primary is paused (SIGSTOP): it neither answers nor fails. Decisions for its slots time out within a 5 ms budget, and a circuit breaker stops asking it.",
			"Failing open keeps serving and lets those tenants overspend; failing closed keeps the limit and denies requests that were within it (false denies). Same seed, same fault: pick which error the product can afford.",
		},
		runs: []runPlan{
			{"fail open", "pause-fail-open", "3-fail-open", pauseEdit},
			{"fail closed", "pause-fail-closed", "3-fail-closed", pauseEdit},
		},
		facts: func(r []StepRun) []Fact {
			o, c := r[0].Summary, r[1].Summary
			return []Fact{
				{"the fault", pauseFact(o)},
				{"fail open: failed open / overspend", fmt.Sprintf("%d / %s", o.Outcomes.FailedOpen, fmtOverspend(o))},
				{"fail open: false denies", fmt.Sprintf("%d (%.2g)", o.Overspend.FalseDenies, o.Overspend.FalseDenyRatio)},
				{"fail closed: failed closed / overspend", fmt.Sprintf("%d / %s", c.Outcomes.FailedClosed, fmtOverspend(c))},
				{"fail closed: false denies", fmt.Sprintf("%d (%.2g)", c.Overspend.FalseDenies, c.Overspend.FalseDenyRatio)},
				{"p99 latency: fail open / fail closed", fmt.Sprintf("%s / %s ms", o.LatencyMs.P99, c.LatencyMs.P99)},
			}
		},
	}
}

// leaseStep is step 4: leases against the central bucket.
func leaseStep() stepPlan {
	return stepPlan{
		title: "4. Leases cut Redis load, and what they cost",
		narration: []string{
			"Each gateway takes up to 50 tokens at once and spends them locally: Redis sees one call per lease instead of one per request.",
			"The cost is overspend — a burst beyond the limit no larger than the tokens outstanding in leases — and false denies when one gateway holds tokens another needs. Compare the central operations per second, overspend, false denies and p99 with the plain token bucket on the same load.",
		},
		runs: []runPlan{
			{"lease", "lease-vs-central", "4-lease", shorten(6 * time.Second)},
			{"central token bucket", "lease-vs-central", "4-central", withKind(6*time.Second, scenarios.KindTokenBucket)},
		},
		facts: func(r []StepRun) []Fact {
			l, c := r[0].Summary, r[1].Summary
			red := "n/a"
			if l.Central.OpsPerS > 0 {
				red = fmt.Sprintf("%.1fx fewer", c.Central.OpsPerS/l.Central.OpsPerS)
			}
			return []Fact{
				{"Redis ops/s: lease vs central", fmt.Sprintf("%.0f vs %.0f (%s)", l.Central.OpsPerS, c.Central.OpsPerS, red)},
				{"lease overspend", fmt.Sprintf("%d tokens in all; burst excess %.0f tokens on the worst key against a bound of %.0f", l.Overspend.Tokens, l.Overspend.BurstExcess.WorstTokens, l.Overspend.Bound.Tokens)},
				{"false denies: lease vs central", fmt.Sprintf("%d (%.2g) vs %d (%.2g)", l.Overspend.FalseDenies, l.Overspend.FalseDenyRatio, c.Overspend.FalseDenies, c.Overspend.FalseDenyRatio)},
				{"p99 latency: lease vs central", fmt.Sprintf("%s vs %s ms", l.LatencyMs.P99, c.LatencyMs.P99)},
			}
		},
	}
}

// pauseFact says when the run's first fault hit and when decisions succeeded again.
func pauseFact(s *results.Summary) string {
	if len(s.Faults) == 0 {
		return "none recorded"
	}
	f := s.Faults[0]
	out := fmt.Sprintf("%s of %s at %.1f s", f.Kind, f.Target, f.AtS)
	if f.RecoveredS > 0 {
		out += fmt.Sprintf(", decisions succeeding again at %.1f s", f.RecoveredS)
	}
	return out
}

// fmtOverspend formats a run's overspend (results.Overspend, as the run judged it) as tokens and
// ratio.
func fmtOverspend(s *results.Summary) string {
	return fmt.Sprintf("%d tokens (ratio %.3g)", s.Overspend.Tokens, s.Overspend.Ratio)
}

// Play runs the story into o.Out and writes index.html after every step, so an interrupted demo
// (ctx cancelled) still leaves an index of the steps that finished. It returns the finished
// steps; the error names the run that failed.
func Play(ctx context.Context, o Options) ([]Step, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var done []Step
	for _, sp := range plan() {
		if ctx.Err() != nil {
			break
		}
		logf("%s", sp.title)
		st := Step{Title: sp.title, Narration: sp.narration, Plots: sp.plots}
		for _, rp := range sp.runs {
			if ctx.Err() != nil {
				break
			}
			run, err := playRun(ctx, o, rp, logf)
			if err != nil && ctx.Err() != nil {
				// Interrupted before the run measured anything (e.g. while its cluster started):
				// not a failure, and the index of the finished steps is already written.
				logf("  %s: interrupted: %v", rp.label, err)
				break
			}
			if err != nil {
				return done, errors.Join(err, WriteIndex(o.Out, done))
			}
			if run.Summary.Interrupted {
				break
			}
			st.Runs = append(st.Runs, run)
		}
		if len(st.Runs) < len(sp.runs) {
			break // interrupted: a half step's numbers would mislead
		}
		st.Facts = sp.facts(st.Runs)
		done = append(done, st)
		if err := WriteIndex(o.Out, done); err != nil {
			return done, err
		}
	}
	if len(done) == 0 {
		return done, WriteIndex(o.Out, done)
	}
	return done, nil
}

func playRun(ctx context.Context, o Options, rp runPlan, logf func(string, ...any)) (StepRun, error) {
	spec, err := scenarios.Builtin(rp.scenario)
	if err != nil {
		return StepRun{}, err
	}
	rp.edit(spec, o.Quick)
	if err := spec.Validate(); err != nil {
		return StepRun{}, fmt.Errorf("demo run %s (%s): %w", rp.dir, rp.scenario, err)
	}
	dir := filepath.Join(o.Out, rp.dir)
	logf("  %s: %s for %s -> %s", rp.label, rp.scenario, time.Duration(spec.Duration), dir)
	ro := engine.Options{Out: dir, Version: o.Version, Logf: logf}
	if o.Live != nil {
		h := o.Live(rp.label, time.Duration(spec.Duration))
		ro.OnInterval, ro.OnProgress = h.OnInterval, h.OnProgress
		if h.Done != nil {
			defer h.Done()
		}
	}
	res, err := engine.Run(ctx, spec, ro)
	if res == nil {
		return StepRun{}, fmt.Errorf("demo run %s (%s): %w", rp.dir, rp.scenario, err)
	}
	if gerr := report.Generate(res.Dir); gerr != nil && err == nil {
		err = fmt.Errorf("demo run %s: writing its report: %w", rp.dir, gerr)
	}
	if err != nil {
		return StepRun{}, err
	}
	return StepRun{Label: rp.label, Dir: rp.dir, Summary: res.Summary}, nil
}

// Steps is the number of steps in the story.
func Steps() int { return len(plan()) }

// p99Fact is a run's p99 over offered requests or, when the dropped requests make it not
// measurable, what was dropped and the answered requests' p99 beside it.
func p99Fact(s *results.Summary) string {
	if p := s.LatencyMs.P99; p.Measurable() {
		return fmt.Sprintf("%s ms over offered requests", p)
	}
	return fmt.Sprintf("not measurable over offered requests (%.1f%% dropped); answered requests' p99 %s ms",
		100-s.LatencyMs.MeasurablePct, results.Ms(s.LatencyServedMs.P99))
}
