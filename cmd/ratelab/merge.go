package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"ratelab/results"
	"ratelab/scenarios/engine"
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
	parts  string
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
ledgers, fault recovery and the SLO are re-evaluated on the merged data.

Refused: runs of different scenarios, seeds or part counts, the same part twice, runs that are
not parts. A missing part is allowed when the directories are listed; the summary's note and
part.missing name it. --parts RUNDIR takes every part-* directory under RUNDIR (or a glob's
matches) and requires all N parts (N from their summaries), naming a missing or doubled one. See
docs/distributed.md. Exit code 3 if the merged run fails its SLO, 4 if a part's fault could not be
carried out.`,
		Example: "  ratelab merge --out out/hot-merged out/hot-0 out/hot-1 out/hot-2\n" +
			"  ratelab merge --parts out/hot-1 --out out/hot-1/merged",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.resolveDirs(args); err != nil {
				return err
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
	cmd.Flags().StringVar(&o.out, "out", "", "merged run `DIR` (default out/<scenario>-merged-<time>)")
	o.output = addOutputFlag(cmd, runOutputHelp, outputJSON, outputMD)
	return cmd
}

// resolveDirs sets o.dirs from the arguments or from --parts (one or the other).
func (o *mergeOptions) resolveDirs(args []string) error {
	switch {
	case o.parts != "" && len(args) > 0:
		return fmt.Errorf("--parts %s and directories %v: give the parts one way, --parts RUNDIR or the list", o.parts, args)
	case o.parts != "":
		dirs, err := results.PartDirs(o.parts)
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
