package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/results/compare"
)

// exitRegression is the exit code of a comparison that found a regression (the same 3 as a failed SLO).
const exitRegression = exitSLOFailed

// compareOptions are the flags of `ratelab compare`.
type compareOptions struct {
	format     string
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
achieved rate, overspend, false-deny and error ratios). BASE and NEW are each a directory of
repetitions (rep-*/summary.json, as ` + "`ratelab run --repeat N`" + ` writes), one run directory, or a
summary.json; give several with commas: BASE1,BASE2.

A metric regresses only when the Mann-Whitney U test finds the two sets different (p < alpha)
AND NEW's median is worse than BASE's by more than the metric's threshold. With alpha 0.05 a
verdict needs at least 4 runs per set (a 95% interval of the medians needs 6).

Exit code: 0 no regression, 3 a regression, 1 bad input or too few runs for any verdict.`,
		Example: `  ratelab compare results/baselines/ci-smoke out/ci-smoke
  ratelab compare --format md --threshold p99_ms=25% out/base out/new >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd, args[0], args[1], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output: text (aligned table) or md (Markdown)")
	f.StringArrayVar(&o.thresholds, "threshold", nil, "override a metric's regression threshold, key=value: p99_ms=15% (share of BASE's median) or overspend_ratio=0.002 (absolute); repeatable")
	f.Float64Var(&o.alpha, "alpha", compare.DefaultAlpha, "significance level of the U test")
	f.Float64Var(&o.confidence, "confidence", compare.DefaultConfidence, "confidence level of the medians' intervals")
	return cmd
}

func runCompare(cmd *cobra.Command, basePath, newPath string, o compareOptions) error {
	if o.format != "text" && o.format != "md" {
		return fmt.Errorf("--format %q: use text or md", o.format)
	}
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
	out := cmd.OutOrStdout()
	if o.format == "md" {
		err = rep.WriteMarkdown(out)
	} else {
		err = rep.WriteText(out)
	}
	if err != nil {
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
