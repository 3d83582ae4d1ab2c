package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"ratelab/scenarios"
	"ratelab/studies/capacity"
)

// newCapacityCmd is `ratelab capacity sweep|plan`.
func newCapacityCmd() *cobra.Command {
	cmd := newGroupCmd(&cobra.Command{
		Use:   "capacity",
		Short: "Find the knee of a scenario on a local cluster, and size a cluster for a target rate",
	})
	cmd.AddCommand(newCapacitySweepCmd(), newCapacityPlanCmd())
	return cmd
}

// capacitySweepOptions are the flags of `ratelab capacity sweep`.
type capacitySweepOptions struct {
	opts        capacity.SweepOptions
	replicas    int
	concurrency int
	maxInflight int
	limiter     string
	limiters    []string
	slo         []string
	output      *outputFlag
}

func newCapacitySweepCmd() *cobra.Command {
	var o capacitySweepOptions
	cmd := &cobra.Command{
		Use:   "sweep NAME|FILE",
		Short: "Step the offered rate until the SLO breaks, for each cluster size; write capacity.json/.md and plots",
		Long: `Run the scenario (faults dropped) at growing offered rates — geometric steps, then bisection
between the last passing and the first failing rate — on a fresh local cluster per size in
--primaries. The knee is the highest rate that meets the SLO: the scenario's slo, --slo, or by
default p99_ms <= 25, achieved_ratio >= 0.95, error_ratio <= 0.01. With three or more sizes the
knees are fitted with the Universal Scalability Law. Writes capacity.json, capacity.md,
capacity.png/svg (and usl.png/svg) and every step's run directory under steps/.`,
		Example: "  ratelab capacity sweep hot-tenant --primaries 1,2,3 --replicas 0 --step 3s --start 2000\n" +
			"  ratelab capacity sweep hot-tenant --primaries 1,2 --limiters token-bucket,lease",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runCapacitySweep(cmd, args[0], o) },
	}
	o.addFlags(cmd)
	return cmd
}

// runCapacitySweep sweeps the scenario name (a built-in or a file) with the flags cmd was given
// applied to it, and prints each size's knee, the USL fits and where the report is.
func runCapacitySweep(cmd *cobra.Command, name string, o capacitySweepOptions) error {
	spec, err := scenarios.Resolve(name)
	if err != nil {
		return err
	}
	set := cmd.Flags().Changed
	if set("concurrency") {
		spec.Load.Concurrency = o.concurrency
	}
	if set("max-inflight") {
		spec.Load.MaxInflight = o.maxInflight
	}
	if set("limiter") {
		spec.Limiter.Kind = scenarios.LimiterKind(o.limiter)
	}
	o.opts.Limiters = kindsOf(o.limiters)
	for _, kv := range o.slo {
		if err := spec.SetSLO(kv); err != nil {
			return err
		}
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("scenario %s with flags: %w", spec.Name, err)
	}
	if set("replicas") {
		o.opts.Replicas = &o.replicas
	}
	stderr := cmd.ErrOrStderr()
	o.opts.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+format+"\n", a...) }
	o.opts.Version = version
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	res, err := capacity.Sweep(ctx, spec, o.opts)
	if res != nil {
		if perr := writeSweep(cmd.OutOrStdout(), o.output.value, res); perr != nil && err == nil {
			err = perr
		}
	}
	return interruptedErr(ctx, err)
}

// writeSweep prints res in the form format: text (printSweep), json (capacity.json as written)
// or md (capacity.md as written).
func writeSweep(w io.Writer, format string, res *capacity.SweepResult) error {
	switch format {
	case outputJSON:
		return printFile(w, filepath.Join(res.Dir, capacity.JSONFile), res)
	case outputMD:
		return printFile(w, filepath.Join(res.Dir, capacity.MarkdownFile), nil)
	}
	printSweep(w, res)
	return nil
}

// printSweep prints each series' knee, each limiter's USL fit and the path of capacity.md.
func printSweep(out io.Writer, res *capacity.SweepResult) {
	for _, s := range res.Series {
		if s.Knee == nil {
			fmt.Fprintf(out, "%d primaries, %s: no knee (%s)\n", s.Primaries, s.Limiter, s.Note)
			continue
		}
		fmt.Fprintf(out, "%d primaries, %s: knee %.0f/s offered, %.0f/s achieved, p99 %.3f ms %s\n",
			s.Primaries, s.Limiter, s.Knee.Offered, s.Knee.Achieved, s.Knee.P99Ms, s.Note)
	}
	for _, fit := range res.Fits {
		if u := fit.USL; u != nil {
			fmt.Fprintf(out, "USL (%s): lambda %.0f/s sigma %.4f kappa %.5f, R² %.4f, RMSE %.0f/s\n", fit.Limiter, u.Lambda, u.Sigma, u.Kappa, u.R2, u.RMSE)
		} else {
			fmt.Fprintf(out, "%s: %s\n", fit.Limiter, fit.Note)
		}
	}
	fmt.Fprintln(out, filepath.Join(res.Dir, capacity.MarkdownFile))
}

// addFlags defines the flags of `ratelab capacity sweep` on cmd.
func (o *capacitySweepOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntSliceVar(&o.opts.Primaries, "primaries", nil, "cluster sizes to sweep, e.g. 1,2,3 (default the scenario's cluster.primaries)")
	fl.StringSliceVar(&o.limiters, "limiters", nil, "limiter kinds to sweep each size with, e.g. token-bucket,lease (default the scenario's)")
	fl.IntVar(&o.replicas, "replicas", 0, "replicas per primary (default the scenario's)")
	fl.DurationVar(&o.opts.StepDuration, "step", capacity.DefaultStepDuration, "duration of each step")
	fl.Float64Var(&o.opts.Search.Start, "start", capacity.DefaultStartRate, "first offered rate, requests/s")
	fl.Float64Var(&o.opts.Search.Factor, "factor", capacity.DefaultFactor, "growth of the rate between geometric steps")
	fl.Float64Var(&o.opts.Search.Max, "max-rate", capacity.DefaultMaxRate, "highest rate to try")
	fl.IntVar(&o.opts.Search.Bisect, "bisect", capacity.DefaultBisect, "bisection steps after the first failure (-1: none)")
	fl.Float64Var(&o.opts.Search.Tolerance, "tolerance", capacity.DefaultTolerance, "stop bisecting when pass and fail rates are this close (relative)")
	fl.StringVar(&o.opts.Out, "out", "", "`DIR` of the sweep's results (default out/capacity-<scenario>-<time>)")
	fl.IntVar(&o.concurrency, "concurrency", 0, "override load.concurrency")
	fl.IntVar(&o.maxInflight, "max-inflight", 0, "override load.max_inflight")
	fl.StringVar(&o.limiter, "limiter", "", "override limiter.kind (e.g. lease to sweep with leases)")
	fl.StringArrayVar(&o.slo, "slo", nil, "SLO check key=value replacing the default's (p99_ms, achieved_ratio, error_ratio, ...); repeatable")
	o.output = addOutputFlag(cmd, "json is the sweep's result (every step, knee and fit), md capacity.md as written", outputJSON, outputMD)
}

// capacityPlanOptions are the flags of `ratelab capacity plan`.
type capacityPlanOptions struct {
	in     capacity.PlanInput
	from   string
	output *outputFlag
}

func newCapacityPlanCmd() *cobra.Command {
	var f capacityPlanOptions
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Primaries needed for a target rate with Zipf tenants: the limiting factor and what leases change",
		Long: `Size a Redis Cluster for --target-rps decisions/s over --tenants Zipf(--zipf) tenants, keeping
--headroom of each primary free. One primary's script rate is --per-primary-rps, or read from a
sweep (--from capacity.json), or by default 80,000 calls/s (the token-bucket EVALSHA measured
with redis-benchmark -P 16 on one primary; see docs/capacity.md). Tenants are hashed into slots
by CRC16 as Redis does and slots split evenly over primaries, so the busiest primary is known,
not guessed. Prints every step of the reasoning.`,
		Example: "  ratelab capacity plan --target-rps 5000000 --tenants 1000000 --zipf 0.99 --headroom 0.3 --lease 100",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set := cmd.Flags().Changed
			if set("from") && set("per-primary-rps") {
				return errors.New("--from and --per-primary-rps both set: give one source for a primary's rate")
			}
			f.in.PerPrimarySource = "--per-primary-rps"
			if !set("per-primary-rps") {
				f.in.PerPrimarySource = "default: token-bucket EVALSHA on one primary, redis-benchmark -P 16 -c 50, docs/capacity.md"
			}
			if f.from != "" {
				r, src, err := capacity.PerPrimaryFromSweep(f.from)
				if err != nil {
					return err
				}
				f.in.PerPrimaryRPS, f.in.PerPrimarySource = r, src
			}
			res, err := capacity.MakePlan(f.in)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.output.value == outputJSON {
				return printJSON(out, res)
			}
			for i, s := range res.Steps {
				fmt.Fprintf(out, "%d. %s\n", i+1, s)
			}
			fmt.Fprintf(out, "\n%s\n", planVerdict(res))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.in.TargetRPS, "target-rps", 0, "decisions per second to serve (required)")
	fl.IntVar(&f.in.Tenants, "tenants", 1_000_000, "number of tenants (keys' hash tags)")
	fl.Float64Var(&f.in.Theta, "zipf", 0.99, "Zipf exponent of tenant popularity (0: uniform)")
	fl.Float64Var(&f.in.Headroom, "headroom", capacity.DefaultHeadroom, "share of each primary kept free")
	fl.Float64Var(&f.in.PerPrimaryRPS, "per-primary-rps", capacity.DefaultPerPrimaryRPS, "one primary's script calls per second")
	fl.StringVar(&f.from, "from", "", "take the per-primary rate from a sweep's capacity.json")
	fl.Int64Var(&f.in.Lease, "lease", 0, "also plan with local leases of this many tokens")
	fl.IntVar(&f.in.Gateways, "gateways", capacity.DefaultGateways, "gateways holding leases")
	fl.DurationVar(&f.in.LeaseTTL, "lease-ttl", capacity.DefaultLeaseTTL, "lifetime of a lease")
	f.output = addOutputFlag(cmd, "json is the plan: its input, steps and sizings", outputJSON)
	_ = cmd.MarkFlagRequired("target-rps")
	return cmd
}

// planVerdict is the one-paragraph answer under the reasoning.
func planVerdict(res *capacity.PlanResult) string {
	line := func(s capacity.Sizing) string {
		if !s.Feasible {
			return fmt.Sprintf("%s: no primary count is enough (limited by the %s)", s.Mode, s.Limiting)
		}
		return fmt.Sprintf("%s: %d primaries (limited by %s; busiest primary %.1f%% of %.0f calls/s)",
			s.Mode, s.Primaries, s.Limiting, 100*s.HottestPrimaryShare, s.CentralRPS)
	}
	out := []string{"Recommendation for " + fmt.Sprintf("%.0f", res.Input.TargetRPS) + " decisions/s:", "  " + line(res.Central)}
	if res.Leased != nil {
		out = append(out, "  "+line(*res.Leased))
	}
	return strings.Join(out, "\n")
}
