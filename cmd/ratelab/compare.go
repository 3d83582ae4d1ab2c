package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/results/compare"
)

// exitRegression is the exit code of a comparison that found a regression (the same 3 as a failed SLO).
const exitRegression = exitSLOFailed

// compareOptions are the flags of `ratelab compare`.
type compareOptions struct {
	output     *outputFlag
	thresholds []string
	alpha      float64
	confidence float64
}

func newCompareCmd() *cobra.Command {
	var o compareOptions
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two sets of runs of one scenario: medians, delta, confidence interval, Mann-Whitney U test",
		Long: `Compare the runs in BASE with the runs in NEW, metric by metric (p50/p99/p99.9 latency,
achieved rate, overspend, false-deny and error ratios, the generator's CPU per decision; a
metric some run's summary lacks is not compared, and a note says so). BASE and NEW are each a directory of
repetitions (rep-*/summary.json, as ` + "`ratelab run --repeat N`" + ` writes), one run directory, or a
summary.json; give several with commas: BASE1,BASE2.

A metric regresses only when the Mann-Whitney U test finds the two sets different (p < alpha)
AND NEW's median is worse than BASE's by more than the metric's threshold. With alpha 0.05 a
verdict needs at least 4 runs per set (a 95% interval of the medians needs 6).

-o benchfmt writes every run of both sets instead, as Go benchmark format lines for benchstat:
one result line per run, its metrics in units (p50-sec, p99-sec, p999-sec, achieved-req/s,
overspend-ratio, false-deny-ratio, error-ratio, generator-cpu-sec/decision), and a "side: base" or "side: new"
configuration line before each set's runs, so that

  ratelab compare -o benchfmt BASE NEW > runs.txt && benchstat -col side runs.txt

puts the two sets side by side. A latency percentile that was not measurable is written as the
largest float64, so that run stays in benchstat's median as the slowest (a median among such
runs prints as +Inf). The exit code stays the comparison's.

Exit code: 0 no regression, 3 a regression, 1 bad input or too few runs for any verdict.`,
		Example: `  ratelab compare results/baselines/ci-smoke out/ci-smoke
  ratelab compare -o md --threshold p99_ms=25% out/base out/new >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd, args[0], args[1], o)
		},
	}
	f := cmd.Flags()
	o.output = addOutputFlag(cmd, "text an aligned table, json the comparison (its rows, medians, intervals, p-values, verdicts), "+
		"md a Markdown table, benchfmt every run as Go benchmark format lines: pipe them to a file for 'benchstat -col side FILE'",
		outputJSON, outputMD, outputBenchfmt)
	f.StringArrayVar(&o.thresholds, "threshold", nil, "override a metric's regression threshold, key=value: p99_ms=15% (share of BASE's median) or overspend_ratio=0.002 (absolute); repeatable")
	f.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "significance level of the U test")
	f.Float64Var(&o.confidence, "confidence", compare.DefaultConfidence, "confidence level of the medians' intervals")
	return cmd
}

func runCompare(cmd *cobra.Command, basePath, newPath string, o compareOptions) error {
	opts := compare.Options{Alpha: o.alpha, Confidence: o.confidence, Thresholds: map[string]compare.Threshold{}}
	for _, kv := range o.thresholds {
		key, t, err := compare.ParseThreshold(kv)
		if err != nil {
			return err
		}
		opts.Thresholds[key] = t
	}
	base, err := compare.Load(splitPaths(basePath)...)
	if err != nil {
		return fmt.Errorf("BASE: %w", err)
	}
	next, err := compare.Load(splitPaths(newPath)...)
	if err != nil {
		return fmt.Errorf("NEW: %w", err)
	}
	rep, err := compare.Compare(base, next, opts)
	if err != nil {
		return err
	}
	if err := writeComparison(cmd.OutOrStdout(), o.output.value, rep); err != nil {
		return err
	}
	if rep.Regressed() {
		return &exitError{code: exitRegression, err: fmt.Errorf("regression: %v", rep.Regressions())}
	}
	if rep.NoVerdict {
		return fmt.Errorf("no verdict possible: BASE has %d runs and NEW %d; at alpha %g the U test needs at least %d in one set (ratelab run --repeat 6)",
			len(base.Runs), len(next.Runs), opts.Alpha, rep.MinRuns)
	}
	return nil
}

// writeComparison prints rep in the form format.
func writeComparison(w io.Writer, format string, rep *compare.Report) error {
	switch format {
	case outputJSON:
		return rep.WriteJSON(w)
	case outputMD:
		return rep.WriteMarkdown(w)
	case outputBenchfmt:
		return compare.WriteBenchfmt(w, rep.Base, rep.New)
	}
	return rep.WriteText(w)
}

// splitPaths splits a comma-separated list of paths, skipping empty items.
func splitPaths(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
