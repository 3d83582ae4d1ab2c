package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"ratelab/report"
	"ratelab/report/progress"
	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

// repDir is the directory of repetition i (1-based) inside a repeated run's directory.
func repDir(out string, i int) string { return filepath.Join(out, fmt.Sprintf("rep-%02d", i)) }

// repeater is one `run --repeat`: where the repetitions go and the cluster they share.
type repeater struct {
	cmd    *cobra.Command
	spec   *scenarios.Spec
	o      runOptions
	out    string
	shared *engine.Shared
}

// runRepeated runs spec o.repeat times with the same seed, each repetition in OUT/rep-NN with
// its summary, timeseries, plots and report. The repetitions share one cluster where they can
// (engine.Share: a local one is started once unless the scenario's faults change or instrument
// the cluster), emptied before each.
func runRepeated(cmd *cobra.Command, spec *scenarios.Spec, o runOptions) (err error) {
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stopProfiles, err := startProfiles(o.cpuProfile, o.memProfile)
	if err != nil {
		return err
	}
	defer stopProfiles()
	stderr, lines := cmd.ErrOrStderr(), progressOut(cmd, o.output.value)
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) }
	r := &repeater{cmd: cmd, spec: spec, o: o, out: o.out}
	if r.out == "" {
		r.out = engine.DefaultDir(spec.Name, time.Now())
	}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", r.out, err)
	}
	// One cluster owned by this process (its nodes die with it, even on a second Ctrl-C or a
	// crash); the repetitions attach to it through a state file, as to `ratelab cluster up`'s.
	sopts := engine.Options{Logf: logf, StateFile: o.stateFile}
	o.clusterOptions(&sopts)
	if r.shared, err = engine.Share(ctx, sopts, spec); err != nil {
		return err
	}
	defer func() {
		if cerr := r.shared.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stopping the shared cluster: %w", cerr)
		}
	}()
	var sums []*results.Summary
	for i := 1; i <= o.repeat && ctx.Err() == nil; i++ {
		s, rerr := r.repetition(ctx, i)
		if rerr != nil {
			return rerr
		}
		sums = append(sums, s)
		fmt.Fprintln(lines, repLine(i, o.repeat, s))
	}
	if o.output.value == outputJSON {
		if err := printJSON(cmd.OutOrStdout(), sums); err != nil {
			return err
		}
	}
	fmt.Fprintf(lines, "%d of %d repetitions in %s; compare with: ratelab compare BASE %s\n", len(sums), o.repeat, r.out, r.out)
	if ctx.Err() != nil || (len(sums) > 0 && sums[len(sums)-1].Interrupted) {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted after %d of %d repetitions; what ran is in %s", len(sums), o.repeat, r.out)}
	}
	return repeatVerdict(r.out, sums)
}

// repetition runs repetition i (1-based) into OUT/rep-NN with its report, on the shared cluster
// (emptied first) when there is one.
func (r *repeater) repetition(ctx context.Context, i int) (*results.Summary, error) {
	dir, n := repDir(r.out, i), r.o.repeat
	stderr := r.cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "ratelab: repetition %d of %d -> %s\n", i, n, dir)
	live := newLiveProgress(stderr, time.Duration(r.spec.Duration), r.o.quiet, progress.WithPrefix(fmt.Sprintf("rep %d/%d", i, n)))
	ropts := engine.Options{Out: dir, Version: version, StateFile: r.o.stateFile,
		Logf: live.logf, OnInterval: live.onInterval, OnProgress: live.onProgress}
	r.o.clusterOptions(&ropts)
	res, err := r.shared.Run(ctx, r.spec, ropts, runOne)
	live.close()
	if res == nil {
		return nil, fmt.Errorf("repetition %d of %d: %w (earlier repetitions are in %s)", i, n, err, r.out)
	}
	if gerr := report.Generate(dir); gerr != nil && err == nil {
		err = fmt.Errorf("writing the report of %s: %w", dir, gerr)
	}
	if err != nil {
		return nil, fmt.Errorf("repetition %d of %d: %w (its data is in %s)", i, n, err, dir)
	}
	return res.Summary, nil
}

// repLine is one repetition's line of the repeated run's table.
func repLine(i, n int, s *results.Summary) string {
	verdict := "SLO pass"
	if !s.SLO.Pass {
		verdict = "SLO FAILED: " + failedChecks(s.SLO)
	}
	if f := failedFaults(s.Faults); f != "" {
		verdict = "FAULT FAILED: " + f + "; " + verdict
	}
	if s.Interrupted {
		verdict = "INTERRUPTED after " + strconv.FormatFloat(s.DurationS, 'f', 1, 64) + " s"
	}
	return fmt.Sprintf("rep %2d/%d  p50 %8s ms  p99 %8s ms  p99.9 %8s ms  achieved %8.0f/s  overspend %.2g  errors %d  %s",
		i, n, s.LatencyMs.P50, s.LatencyMs.P99, s.LatencyMs.P999, s.Load.AchievedRPS, s.Overspend.Ratio, s.Outcomes.Errors, verdict)
}
