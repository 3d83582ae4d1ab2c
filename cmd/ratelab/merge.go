package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/workload"
)

// partFlag is --part i/N, parsed (and refused with its fix) when the flag is read.
type partFlag struct{ workload.Part }

func (f *partFlag) String() string {
	if f.Part == (workload.Part{}) {
		return ""
	}
	return f.Part.String()
}

func (f *partFlag) Set(s string) error {
	sh, err := workload.ParsePart(s)
	if err != nil {
		return err
	}
	f.Part = sh
	return nil
}

func (f *partFlag) Type() string { return "INDEX/COUNT" }

// mergeOptions are the flags and arguments of `ratelab merge`.
type mergeOptions struct {
	// out is the merged run's directory (default out/<scenario>-merged-<time>).
	out string
	// dirs are the parts' run directories.
	dirs []string
	// parts is --parts DIR|GLOB: take every part-* directory under DIR (or the glob's matches).
	parts string
	// wait is how long --parts waits for parts still running or not yet started (0: not at all).
	wait   time.Duration
	output *outputFlag
}

func newMergeCmd() *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge [--out DIR] (--parts RUNDIR | DIR...)",
		Short: "Merge the run directories of `ratelab run --part i/N` into one run with its report",
		Long: `Merge the directories of the parts of one load (same scenario, same seed, ratelab run
--part 0/N ... N-1/N) into one run directory whose summary, timeseries, plots and report read
like a single run: counts and rates add, latency percentiles come from the merged HDR histograms
(whole run and per second), overspend and false denies add, hot keys come from the merged per-key
tallies, fault recovery and the SLO are re-evaluated on the merged data.

Refused: runs of different scenarios, seeds or part counts, the same part twice, runs that are
not parts. A missing part is allowed when the directories are listed; the summary's note and
part.missing name it. --parts RUNDIR takes every part-* directory under RUNDIR (or a glob's
matches) and requires all N parts (N from their summaries), naming a missing or doubled one;
with --wait it waits that long for parts still running or not yet started, so the merge can
be started together with the parts (ratelab kubernetes does). See docs/distributed.md. Exit code 3 if the merged run fails its SLO, 4 if a part's fault could not be
carried out.`,
		Example: "  ratelab merge --out out/hot-merged out/hot-0 out/hot-1 out/hot-2\n" +
			"  ratelab merge --parts out/hot-1 --out out/hot-1/merged",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := interruptContext(cmd.Context())
			defer stop()
			if err := o.resolveDirs(ctx, args, cmd.ErrOrStderr()); err != nil {
				return interruptedErr(ctx, err)
			}
			res, err := engine.MergeRuns(o.out, o.dirs...)
			if err != nil {
				return err
			}
			if err := reportRun(cmd.OutOrStdout(), o.output.value, res.Dir, res.Summary, nil); err != nil {
				return err
			}
			// A part's failed fault makes the merged run as much not the scenario's as the part.
			if f := failedFaults(res.Summary.Faults); f != "" {
				return &exitError{code: exitFaultFailed, err: fmt.Errorf("fault failed: %s; the run did not test what the scenario asked (results in %s)", f, res.Dir)}
			}
			if !res.Summary.SLO.Pass {
				return &exitError{code: exitSLOFailed, err: fmt.Errorf("SLO failed: %s", failedChecks(res.Summary.SLO))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.parts, "parts", "", "merge every part-* directory under `RUNDIR` (or a glob's matches); all N parts must be there")
	cmd.Flags().DurationVar(&o.wait, "wait", 0, "with --parts: wait up to `D` for parts still running or not yet started (checked every few seconds; 0: merge what is there now)")
	cmd.Flags().StringVar(&o.out, "out", "", "merged run `DIR` (default out/<scenario>-merged-<time>)")
	o.output = addOutputFlag(cmd, runOutputHelp, outputJSON, outputMD)
	return cmd
}

// resolveDirs sets o.dirs from the arguments or from --parts (one or the other), waiting up to
// --wait for parts still running, and saying on log what it waits for.
func (o *mergeOptions) resolveDirs(ctx context.Context, args []string, log io.Writer) error {
	switch {
	case o.parts != "" && len(args) > 0:
		return fmt.Errorf("--parts %s and directories %v: give the parts one way, --parts RUNDIR or the list", o.parts, args)
	case o.wait < 0:
		return fmt.Errorf("--wait %s: want a duration >= 0 (e.g. 30m), how long to wait for the parts", o.wait)
	case o.wait > 0 && o.parts == "":
		return fmt.Errorf("--wait %s: only --parts RUNDIR has parts to wait for; add --parts or drop --wait", o.wait)
	case o.parts != "":
		dirs, err := waitParts(ctx, o.parts, o.wait, log)
		if err != nil {
			return err
		}
		o.dirs = dirs
	case len(args) == 0:
		return errors.New("no parts to merge: give their directories, or --parts RUNDIR for every part-* directory under it")
	default:
		o.dirs = args
	}
	return nil
}

// partsPoll is how often merge --wait looks for the parts again.
const partsPoll = 2 * time.Second

// waitParts is results.PartDirs(dir), retried every partsPoll while its refusal is one time may
// cure (results.ErrPartsIncomplete) and wait has not passed; it logs each new reason it waits.
func waitParts(ctx context.Context, dir string, wait time.Duration, log io.Writer) ([]string, error) {
	deadline := time.Now().Add(wait)
	last := ""
	for {
		dirs, err := results.PartDirs(dir)
		if err == nil || !errors.Is(err, results.ErrPartsIncomplete) || time.Now().After(deadline) {
			if err != nil && wait > 0 && errors.Is(err, results.ErrPartsIncomplete) {
				err = fmt.Errorf("after waiting %s (--wait): %w", wait, err)
			}
			return dirs, err
		}
		if msg := err.Error(); msg != last {
			fmt.Fprintf(log, "ratelab merge: waiting up to %s: %s\n", time.Until(deadline).Round(time.Second), msg)
			last = msg
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(partsPoll, time.Until(deadline)+time.Millisecond)):
		}
	}
}
