package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"ratelab/results"
)

// The exit codes of every command; exitCodesHelp, in `ratelab --help`, says the same to users.
//
//	0    ok
//	1    error: bad input, or a failure before there were results (exitError's default)
//	3    an SLO check failed (run, its --repeat, attack, merge) or
//	     compare or perf-check found a regression (exitRegression)
//	4    a scheduled fault could not be carried out (run, merge)
//	130  interrupted by SIGINT/SIGTERM; the results up to the interrupt are written (run,
//	     attack, demo, side-by-side, capacity sweep, bench, simulate calibrate and
//	     validate: interruptedErr)
//
// A long-running server (gateway) stopped by a signal exits 0: stopping it is how it ends.
const (
	// exitSLOFailed: the run completed but failed an SLO check.
	exitSLOFailed = 3
	// exitFaultFailed: a scheduled fault could not be carried out (its target named no such
	// node, the cluster refused it, a failover never promoted the replica). The run did not test
	// what its scenario asked, so whatever its SLO says, it is not the scenario's verdict.
	exitFaultFailed = 4
	// exitInterrupted: the run was stopped by a signal (after its results were written).
	exitInterrupted = 130
)

// exitCodesHelp is the exit-code table of `ratelab --help`.
const exitCodesHelp = `Exit codes:

    0    ok
    1    error: bad input, or a failure before there were results
    3    an SLO check failed (run, attack, merge) or compare or perf-check found a regression
    4    a scheduled fault could not be carried out: the run did not test what its scenario asked
    130  interrupted (SIGINT/SIGTERM); the results up to the interrupt are written

gateway, a server, exits 0 when a signal stops it.`

// interruptedErr is the exit error of a command whose ctx a signal cancelled (exit 130, what
// err says kept), else err.
func interruptedErr(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if err == nil || errors.Is(err, context.Canceled) {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	}
	return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %w", err)}
}

// runVerdict is the exit error of a run whose files are all written in dir: interrupted first (the
// user stopped it), then a failed fault (the run is not the scenario's), then a failed SLO; nil
// when none applies.
func runVerdict(dir string, sum *results.Summary) error {
	if sum.Interrupted {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted; partial results in %s", dir)}
	}
	if f := failedFaults(sum.Faults); f != "" {
		msg := "fault failed: " + f + "; the run did not test what the scenario asked (results in " + dir + ")"
		if !sum.SLO.Pass {
			msg += "; its SLO failed too: " + failedChecks(sum.SLO)
		}
		return &exitError{code: exitFaultFailed, err: fmt.Errorf("%s", msg)}
	}
	if !sum.SLO.Pass {
		return &exitError{code: exitSLOFailed, err: fmt.Errorf("SLO failed: %s", failedChecks(sum.SLO))}
	}
	return nil
}

// repeatVerdict is the exit error of `run --repeat` once every repetition in out has run
// (sums[i] is repetition i+1): a failed fault in any repetition, else a failed SLO in any; nil
// when none applies.
func repeatVerdict(out string, sums []*results.Summary) error {
	var faults, slos []string
	for i, s := range sums {
		rep := filepath.Base(repDir(out, i+1))
		if f := failedFaults(s.Faults); f != "" {
			faults = append(faults, rep+": "+f)
		}
		if !s.SLO.Pass {
			slos = append(slos, rep)
		}
	}
	if len(faults) > 0 {
		return &exitError{code: exitFaultFailed, err: fmt.Errorf("fault failed in %s; those repetitions did not test what the scenario asked (results in %s)",
			strings.Join(faults, "; "), out)}
	}
	if len(slos) > 0 {
		return &exitError{code: exitSLOFailed, err: fmt.Errorf("SLO failed in %s", strings.Join(slos, ", "))}
	}
	return nil
}

// failedFaults names the faults that could not be carried out, as "kind at Ns on target: why",
// joined by "; "; "" when every fault was.
func failedFaults(fs []results.Fault) string {
	var out []string
	for _, f := range fs {
		if f.Failed {
			out = append(out, fmt.Sprintf("%s at %.1fs on %s: %s", f.Kind, f.AtS, f.Target, f.Error))
		}
	}
	return strings.Join(out, "; ")
}

// failedChecks lists the failed SLO checks as "name limit (was value)".
func failedChecks(s results.SLO) string {
	var out []string
	for _, c := range s.Checks {
		if !c.Pass {
			out = append(out, fmt.Sprintf("%s %g (was %g)", c.Name, c.Limit, c.Value))
		}
	}
	return strings.Join(out, "; ")
}
