package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/results/compare"
	"ratelab/studies/gate"
)

// perfCheckOptions are the flags of `ratelab perf-check`.
type perfCheckOptions struct {
	opts       gate.Options
	thresholds []string
	output     *outputFlag
	quiet      bool
}

func newPerfCheckCmd() *cobra.Command {
	var o perfCheckOptions
	cmd := &cobra.Command{
		Use:   "perf-check",
		Short: "Performance gate: build the base and the head, alternate their runs on one local cluster, compare (exit 3 on a regression)",
		Long: `Compare this build with its base, not with another day. perf-check builds the base revision
(the merge base of HEAD with main, or --base REF) in a temporary git worktree and the head from
the working tree, starts one local Redis Cluster, and runs the two binaries alternately (base,
head, head, base, ...) with the same scenario (default ci-smoke), --repeat runs each, the cluster
emptied before every run. Then it compares the two sets as ` + "`ratelab compare`" + ` does, on the gate's
metrics: decision latency p50 and p99 from the intended start, achieved rate, overspend,
false-deny and error ratios, and the generator's CPU per decision. A metric regresses when the
U test finds the sets different (p < --alpha) and the head's median is worse beyond the
metric's threshold (p50 +5%, p99 +10%, achieved rate -2%, generator CPU +3%, the ratios
+0.001/+0.002/+0.001 absolute; --threshold overrides).

--against DIR compares the head's runs with summaries committed earlier instead (for a runner
that cannot build the base): that compares days, not builds, and its output says so; its
thresholds are the old gate's wide ones (p50 +30%, p99 +50%, p99.9 +100%).

--head-delay D checks the gate on this runner: every node runs behind a latency proxy and,
during the head's runs only, every primary's proxy delays each chunk by D each way (the latency
fault). The gate should then fail, naming the latency metrics.

The runs are in OUT/base/rep-NN and OUT/head/rep-NN (each a run directory with report.md), the
comparison in OUT/compare.md.

Exit code: 0 no regression, 3 a regression (the metrics are named), 1 an error or too few runs
for a verdict.`,
		Example: `  ratelab perf-check
  ratelab perf-check --base v0.4.0 --repeat 10
  ratelab perf-check --against results/baselines/ci-smoke
  ratelab perf-check --head-delay 100us --out out/perf-check-selftest`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPerfCheck(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.opts.Base, "base", "", "base revision to build (default: the merge base of HEAD with "+gate.DefaultMainBranch+", or origin/"+gate.DefaultMainBranch+")")
	f.StringVar(&o.opts.Against, "against", "", "compare with the committed summaries in `DIR` (rep-*/summary.json) instead of building the base: compares days, not builds")
	f.StringVar(&o.opts.Scenario, "scenario", gate.DefaultScenario, "scenario both sides run: a built-in name or a YAML file, on a local cluster, without faults")
	f.IntVar(&o.opts.Repeat, "repeat", 0, fmt.Sprintf("measured runs per side (default %d; %d with --against)", gate.DefaultRepeat, gate.DefaultAgainstRepeat))
	f.IntVar(&o.opts.Warmup, "warmup", 0, fmt.Sprintf("unmeasured runs before them (default %d; -1 for none)", gate.DefaultWarmup))
	f.StringVar(&o.opts.Out, "out", gate.DefaultOut, "directory of the runs and compare.md; must not exist or be empty")
	f.StringVar(&o.opts.Repo, "repo", ".", "the git checkout whose working tree is the head")
	f.StringVar(&o.opts.Go, "go", "go", "the go command that builds both sides")
	f.Float64Var(&o.opts.Alpha, "alpha", gate.DefaultAlpha, "significance level of the U test")
	f.StringArrayVar(&o.thresholds, "threshold", nil, "override a metric's threshold, key=value as in ratelab compare (p50_ms=10%, error_ratio=0.002); repeatable")
	f.DurationVar(&o.opts.HeadDelay, "head-delay", 0, "inject this delay each way into every primary's traffic during the head's runs (a self-test of the gate)")
	f.StringArrayVar(&o.opts.RunArgs, "run-arg", nil, "extra flag for every 'ratelab run' of both sides, e.g. --run-arg=--duration=3s; repeatable")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	o.output = addOutputFlag(cmd, "text the headline and the comparison table, md the same as Markdown (what OUT/compare.md holds)", outputMD)
	return cmd
}

func runPerfCheck(cmd *cobra.Command, o perfCheckOptions) error {
	o.opts.Thresholds = map[string]compare.Threshold{}
	for _, kv := range o.thresholds {
		key, t, err := compare.ParseThreshold(kv)
		if err != nil {
			return err
		}
		o.opts.Thresholds[key] = t
	}
	if !o.quiet {
		stderr := cmd.ErrOrStderr()
		o.opts.Logf = func(f string, a ...any) { fmt.Fprintf(stderr, "perf-check: "+f+"\n", a...) }
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	res, err := gate.Run(ctx, o.opts)
	if err != nil {
		return interruptedErr(ctx, err)
	}
	w := cmd.OutOrStdout()
	if o.output.value == outputMD {
		err = res.WriteMarkdown(w)
	} else {
		err = res.WriteText(w)
	}
	if err != nil {
		return err
	}
	if regs := res.Report.Regressions(); len(regs) > 0 {
		return &exitError{code: exitRegression, err: fmt.Errorf("perf-check: regression in %s (%s)", strings.Join(regs, ", "), res.Mode)}
	}
	if res.Report.NoVerdict {
		return fmt.Errorf("perf-check: no verdict possible with %d runs per side at alpha %g; the U test needs at least %d (--repeat)",
			len(res.Report.New.Runs), o.opts.Alpha, res.Report.MinRuns)
	}
	return nil
}
