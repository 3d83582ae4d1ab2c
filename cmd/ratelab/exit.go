package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"ratelab/results"
)

// Exit codes of the commands that run a scenario (run, its --repeat, trace record and replay,
// merge); 1 is any other error. README.md's table lists them.
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
