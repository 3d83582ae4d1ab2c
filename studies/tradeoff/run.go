package tradeoff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// Plan is a run still to do: its labels (a results.StudyRun without results), its directory's name under
// the driver's runs/ and its spec.
type Plan struct {
	Run  results.StudyRun
	Name string
	Spec scenarios.Spec
}

// RunsDir is where a driver puts its runs, under its output directory.
const RunsDir = "runs"

// runAll runs each plan in turn into out/runs/<name>. A plan whose Run already holds an error
// (a spec its validation refused) is kept without running; a run that fails is kept with its
// error and the next one runs; an interrupt (ctx cancelled) keeps what the interrupted run measured
// and stops there, returning ctx's error.
func runAll(ctx context.Context, plans []Plan, out, version string, logf func(string, ...any)) ([]results.StudyRun, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	var runs []results.StudyRun
	for i, p := range plans {
		if err := ctx.Err(); err != nil {
			return runs, err
		}
		r := p.Run
		r.Dir = filepath.Join(out, RunsDir, p.Name)
		if r.Err != "" {
			logf("%s (%d of %d): not run: %s", p.Name, i+1, len(plans), r.Err)
			runs = append(runs, r)
			continue
		}
		logf("%s (%d of %d): %s for %s -> %s", p.Name, i+1, len(plans), p.Spec.Name, time.Duration(p.Spec.Duration), r.Dir)
		spec := p.Spec
		res, err := engine.Run(ctx, &spec, engine.Options{Out: r.Dir, Version: version, Logf: logf})
		if res != nil {
			r.Summary = res.Summary
		}
		if err != nil {
			r.Err = err.Error()
			logf("%s: failed: %v", p.Name, err)
		} else if r.Summary != nil && r.Summary.Interrupted {
			r.Err = "interrupted: the figures cover the part that ran"
		}
		runs = append(runs, r)
		if ctx.Err() != nil {
			return runs, ctx.Err()
		}
	}
	return runs, nil
}

// revalidate fills the defaults a rewrite left empty and validates the result, naming what
// the rewrite was in the error.
func revalidate(s *scenarios.Spec, what string) error {
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return fmt.Errorf("scenario %s with %s: %w", s.Name, what, err)
	}
	return nil
}
