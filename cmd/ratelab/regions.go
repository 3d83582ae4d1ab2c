package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ratelab/report"
	"ratelab/results"
	"ratelab/scenarios"
	"ratelab/studies/tradeoff"
)

// regionsSweepOptions are the flags of `ratelab regions`.
type regionsSweepOptions struct {
	periods  string
	duration time.Duration
	out      string
	output   *outputFlag
}

// newRegionsCmd is `ratelab regions`: the multi-region designs on one trace.
func newRegionsCmd() *cobra.Command {
	var o regionsSweepOptions
	cmd := &cobra.Command{
		Use:   "regions [NAME|FILE]",
		Short: "Run the multi-region designs (global, split, rebalance at each period T) on one trace: what each costs in tail latency and in limit errors",
		Long: `Run the scenario (default ` + tradeoff.DefaultRegionsScenario + `) once with each regions design: global
(one cluster in the home region, the others pay the round trip), split (each region's cluster
holds a fixed share of every tenant's quota) and rebalance (the shares follow demand every
period T) at each --periods T. Every run has the scenario's seed and load, so the rows differ by
design and T only. Writes sweep.json, sweep.csv, sweep.md (per row: overspend and false-deny
ratios against the global envelope, worst-region and mean p99, availability, cross-region
calls/s), tradeoff.png/svg (worst-region p99 against overspend + false denies per allowed
request) and index.html, with every run's directory and report under runs/. A run that fails
is a row saying so; an interrupt keeps the rows measured so far.`,
		Example: "  ratelab regions\n  ratelab regions --periods 500ms,2s --duration 10s --out out/regions",
		Args:    cobra.MaximumNArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runRegionsSweep(cmd, args, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.periods, "periods", periodsFlag(tradeoff.DefaultPeriods), "the rebalance periods T to run, comma-separated")
	f.DurationVar(&o.duration, "duration", 0, "length of every run (default the scenario's, or twice the longest period when that is longer)")
	f.StringVar(&o.out, "out", "", "directory of the sweep (default out/regions-sweep-<time>)")
	o.output = addOutputFlag(cmd, "md prints sweep.md, json sweep.json", outputJSON, outputMD)
	return cmd
}

// periodsFlag writes periods as --periods reads them.
func periodsFlag(periods []time.Duration) string {
	parts := make([]string, len(periods))
	for i, p := range periods {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// runRegionsSweep sweeps the scenario args name (default the built-in), writes the table and
// the plot, and prints them.
func runRegionsSweep(cmd *cobra.Command, args []string, o regionsSweepOptions) error {
	spec, err := resolveOr(args, tradeoff.DefaultRegionsScenario)
	if err != nil {
		return err
	}
	periods, err := tradeoff.ParsePeriods(o.periods)
	if err != nil {
		return err
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	runs, dir, err := tradeoff.RegionsSweep(ctx, spec, tradeoff.RegionsOptions{
		Periods: periods, Duration: o.duration, Out: o.out, Version: version, Logf: stderrLogf(cmd),
	})
	if dir == "" {
		return err
	}
	rows, werr := report.WriteRegionsSweep(dir, reportRuns(runs, stderrLogf(cmd)))
	if werr != nil {
		return fmt.Errorf("writing the sweep's table and plot: %w", werr)
	}
	if perr := printTradeoff(cmd.OutOrStdout(), o.output.value, dir, report.RegionsSweepStem, func(w io.Writer) {
		for _, r := range rows {
			fmt.Fprintf(w, "%-22s worst p99 %10s ms  (overspend + false denies)/allowed %9.5f  availability %6.2f%%  cross-region %8.1f/s  %s\n",
				r.Label, r.WorstP99Ms, r.ErrorsPerAllowed, 100*r.Availability, r.CrossRegionCallsPerS, r.Error)
		}
	}); perr != nil {
		return perr
	}
	return interruptedErr(ctx, tradeoffVerdict(err, runs, dir))
}

// resolveOr resolves the scenario named in args, or the built-in def when args is empty.
func resolveOr(args []string, def string) (*scenarios.Spec, error) {
	if len(args) == 0 {
		return scenarios.Builtin(def)
	}
	return scenarios.Resolve(args[0])
}

// stderrLogf prints progress to cmd's stderr.
func stderrLogf(cmd *cobra.Command) func(string, ...any) {
	stderr := cmd.ErrOrStderr()
	return func(format string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+format+"\n", a...) }
}

// reportRuns writes each run's report (a failure to is logged: the table does not need it)
// and hands the runs on to the report's tables.
func reportRuns(runs []results.StudyRun, logf func(string, ...any)) []results.StudyRun {
	for _, r := range runs {
		if r.Summary != nil {
			if err := report.Generate(r.Dir); err != nil {
				logf("%s: its report: %v", r.Dir, err)
			}
		}
	}
	return runs
}

// printTradeoff prints a driver's result in the form format: text (text, then where the index
// is), json (<stem>.json as written) or md (<stem>.md as written).
func printTradeoff(w io.Writer, format, dir, stem string, text func(io.Writer)) error {
	switch format {
	case outputJSON:
		return printFile(w, filepath.Join(dir, stem+".json"), nil)
	case outputMD:
		return printFile(w, filepath.Join(dir, stem+".md"), nil)
	}
	text(w)
	fmt.Fprintf(w, "open %s\n", filepath.Join(dir, report.TradeoffIndex))
	return nil
}

// tradeoffVerdict is a driver's exit error: err when it stopped it, else an error naming the
// runs that failed (their rows say why), nil when every run ran.
func tradeoffVerdict(err error, runs []results.StudyRun, dir string) error {
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range runs {
		if r.Err != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed; their rows in %s say why", failed, len(runs), dir)
	}
	return nil
}
