package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"ratelab/scenarios"
	"ratelab/studies/simulate"
)

// The methods of `ratelab simulate validate`.
const (
	methodHoldout = "holdout"
	methodGap     = "gap"
)

// validateOptions are the flags of `ratelab simulate validate`: the method, and each method's
// options.
type validateOptions struct {
	method  string
	holdout simulate.HoldoutOptions
	gap     simulate.ValidateOptions
	output  *outputFlag
}

// The flags only one method reads.
var (
	holdoutOnlyFlags = []string{"primaries", "run-length", "step-length", "repeats"}
	gapOnlyFlags     = []string{"rounds", "share", "rate", "low-share", "high-share", "host-law"}
)

func newSimulateValidateCmd() *cobra.Command {
	var o validateOptions
	cmd := &cobra.Command{
		Use:   "validate [NAME|FILE]",
		Short: "Judge the model's predictions against runs on local clusters it was not calibrated on",
		Long: `--method holdout (the default): calibrate the co-located model on a one-primary local cluster
(a saturation probe from --probe-rate, doubled until the machine drops, then gap runs at 25% and
35% of its answer), then measure what it never saw: the knee (the highest offered rate with p99
<= 25 ms and >= 99% achieved, by capacity's step-and-bisect search, --step-length steps) of 1 and
--primaries primaries, and on a --primaries cluster the p99 at 40/60/80% of that knee (--repeats
runs each, their median) and each primary's share of the script calls (INFO commandstats) under
Zipf 0.99 and 1.2, and which primary's main thread is busiest at 80%. The model and a naive
baseline from the calibration runs alone (equal shares; p99 on the gap runs' straight line; the
probe's answer, and N times it, as the knees; the primary holding the most tenants) predict each;
a quantity is validated only when the model is within tolerance (2 points, 25%, 20%, exact) and
nearer than the baseline. See docs/capacity.md, "Validation".

--method gap: the older check on one primary between two gap runs: --rounds rounds of a low gap
run (--low-share of the first probe), a measured run (--share or --rate), a high gap run
(--high-share) and a probe; the model, calibrated from the gap runs and probes, is compared
with the measured runs' median throughput and p99 (the host's share of time off carried by
--host-law). It interpolates between its calibration points, so a straight line does as well.
A flag only gap reads (--rounds, --share, --rate, --low-share, --high-share, --host-law), given
without --method, selects it.

The scenario (default: 1,000 tenants, Zipf 0.99, 32 workers, at most 512 in flight) gives
tenants, workers and max_inflight; rates and durations are set per run.`,
		Example: "  ratelab simulate validate\n" +
			"  ratelab simulate validate -o json --out out/validate-runs > validate.json\n" +
			"  ratelab simulate validate --method gap --rounds 5 --share 0.3",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runValidate(cmd, args, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.method, "method", methodHoldout, `"holdout" (predict runs the model was not calibrated on) or "gap" (the co-located model between two gap runs)`)
	fl.Float64Var(&o.holdout.ProbeRate, "probe-rate", simulate.DefaultProbeRate, "rate of the saturation probes (far above capacity; doubled until the machine drops)")
	fl.IntVar(&o.holdout.Primaries, "primaries", simulate.DefaultHoldoutPrimaries, "holdout: primaries of the cluster the model predicts")
	fl.DurationVar(&o.holdout.RunLength, "run-length", simulate.DefaultHoldoutRunLength, "holdout: length of the calibration's gap runs and of the measured runs")
	fl.DurationVar(&o.holdout.StepLength, "step-length", simulate.DefaultKneeStepLength, "holdout: length of each knee step")
	fl.IntVar(&o.holdout.Repeats, "repeats", simulate.DefaultHoldoutRepeats, "holdout: runs at each p99 level (their median p99 is compared)")
	fl.IntVar(&o.gap.Rounds, "rounds", simulate.DefaultValidateRounds, "gap: rounds of gap runs, measured run and probe")
	fl.Float64Var(&o.gap.Share, "share", simulate.DefaultValidateShare, "gap: measured rate as a share of the first probe's capacity")
	fl.Float64Var(&o.gap.Rate, "rate", 0, "gap: measured rate (overrides --share)")
	fl.Float64Var(&o.gap.LowShare, "low-share", simulate.DefaultLowShare, "gap: rate of the low gap runs as a share of the first probe's capacity")
	fl.Float64Var(&o.gap.HighShare, "high-share", simulate.DefaultHighShare, "gap: rate of the high gap runs as a share of the first probe's capacity")
	fl.StringVar(&o.gap.HostLaw, "host-law", simulate.DefaultHostLaw, `gap: how the host's share of time off goes from the gap runs to the measured rate: "floor", "erlang-c" or "proportional"`)
	fl.StringVar(&o.holdout.Out, "out", "", "keep the runs' directories in `DIR` (default a temp dir, removed)")
	o.output = addOutputFlag(cmd, "json is the validation's result (holdout: every check with its measured, model and baseline values)", outputJSON)
	return cmd
}

// runValidate runs the validation o.method names on the scenario args name (default
// simulate.ValidateScenario) and prints it.
func runValidate(cmd *cobra.Command, args []string, o validateOptions) error {
	method, err := validateMethod(cmd.Flags(), o.method)
	if err != nil {
		return err
	}
	spec, err := validateSpec(args)
	if err != nil {
		return err
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stderr := cmd.ErrOrStderr()
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) }
	var res interface{ Text() string }
	if method == methodGap {
		o.gap.ProbeRate, o.gap.Out, o.gap.Logf = o.holdout.ProbeRate, o.holdout.Out, logf
		res, err = simulate.ValidateLocal(ctx, spec, o.gap)
	} else {
		o.holdout.Logf = logf
		res, err = simulate.HoldoutLocal(ctx, spec, o.holdout)
	}
	if err != nil {
		return interruptedErr(ctx, err)
	}
	if o.output.value == outputJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	_, err = fmt.Fprint(cmd.OutOrStdout(), res.Text())
	return err
}

// validateMethod is the method to run: --method, or gap when --method is not given and a flag
// only gap reads is (the command's flags before the held-out method was added keep their
// meaning). It rejects an unknown method and flags of the method not run.
func validateMethod(fl *pflag.FlagSet, method string) (string, error) {
	gapFlags, holdoutFlags := changed(fl, gapOnlyFlags), changed(fl, holdoutOnlyFlags)
	if !fl.Changed("method") && len(gapFlags) > 0 {
		method = methodGap
	}
	switch {
	case method != methodHoldout && method != methodGap:
		return "", fmt.Errorf("--method %q: want %q or %q", method, methodHoldout, methodGap)
	case method == methodHoldout && len(gapFlags) > 0:
		return "", fmt.Errorf("%s: only --method gap reads it; drop it, or use --method gap", strings.Join(gapFlags, ", "))
	case method == methodGap && len(holdoutFlags) > 0:
		return "", fmt.Errorf("%s: only --method holdout reads it; drop it, or use --method holdout", strings.Join(holdoutFlags, ", "))
	}
	return method, nil
}

// changed is the names of the flags given on the command line, as --name.
func changed(fl *pflag.FlagSet, names []string) []string {
	var out []string
	for _, n := range names {
		if fl.Changed(n) {
			out = append(out, "--"+n)
		}
	}
	return out
}

// validateSpec is the named scenario, or the validation's own default.
func validateSpec(args []string) (*scenarios.Spec, error) {
	if len(args) == 1 {
		return scenarios.Resolve(args[0])
	}
	return scenarios.Parse("simulate-validate", []byte(simulate.ValidateScenario))
}
