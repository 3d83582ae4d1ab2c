package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"ratelab/report"
	"ratelab/scenarios"
	"ratelab/studies/tradeoff"
)

// durabilityOptions are the flags of `ratelab durability`.
type durabilityOptions struct {
	faults, settings []string
	duration         time.Duration
	out              string
	output           *outputFlag
}

// newDurabilityCmd is `ratelab durability`.
func newDurabilityCmd() *cobra.Command {
	var o durabilityOptions
	cmd := &cobra.Command{
		Use:   "durability [NAME|FILE]",
		Short: "Run each fault against each durability setting; rank what a fault returns against what waiting costs",
		Long: `Run the scenario (default ` + tradeoff.DefaultDurabilityScenario + `: a primary isolated from the rest of its cluster, then
healed) once per fault and durability setting. kill-primary replaces the partition with a
kill of the same primary at the same time and a restart at the heal. The settings are
limiter.durability async, wait and wait-pipeline (with the coalescing transport), and
min-replicas (async, every primary's min-replicas-to-write 1). Every run audits its buckets.
Writes durability.json, durability.csv, durability.md (per row: tokens back as a range and its
bound, decisions failed by kind and requests dropped, steady-state p50/p99 before the first fault,
availability in the fault window), durability.png/svg (steady p99 against the most tokens
back) and index.html, with every run's directory and report under runs/. A run that fails is
a row saying so; an interrupt keeps the rows measured so far.`,
		Example: "  ratelab durability\n  ratelab durability --faults partition --settings async,wait --duration 12s",
		Args:    cobra.MaximumNArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runDurability(cmd, args, o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.faults, "faults", tradeoff.DurabilityFaults, "the faults to run: kill-primary, partition")
	f.StringSliceVar(&o.settings, "settings", tradeoff.DurabilitySettings, "the durability settings to run: async, wait, wait-pipeline, min-replicas")
	f.DurationVar(&o.duration, "duration", 0, "length of every run, its fault schedule scaled to it (default the scenario's)")
	f.StringVar(&o.out, "out", "", "directory of the matrix (default out/durability-<time>)")
	o.output = addOutputFlag(cmd, "md prints durability.md, json durability.json", outputJSON, outputMD)
	return cmd
}

// runDurability runs the matrix on the scenario args name (default the built-in), writes the
// table and the plot, and prints them.
func runDurability(cmd *cobra.Command, args []string, o durabilityOptions) error {
	spec, err := resolveOr(args, tradeoff.DefaultDurabilityScenario)
	if err != nil {
		return err
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	runs, dir, err := tradeoff.Durability(ctx, spec, tradeoff.DurabilityOptions{
		Faults: o.faults, Settings: o.settings, Duration: o.duration, Out: o.out, Version: version, Logf: stderrLogf(cmd),
	})
	if dir == "" {
		return err
	}
	rows, werr := report.WriteDurability(dir, reportRuns(runs, stderrLogf(cmd)))
	if werr != nil {
		return fmt.Errorf("writing the durability table and plot: %w", werr)
	}
	if perr := printTradeoff(cmd.OutOrStdout(), o.output.value, dir, report.DurabilityStem, func(w io.Writer) {
		for _, r := range rows {
			tb := "not counted"
			if r.TokensBack != nil {
				tb = fmt.Sprintf("%d-%d (bound %.0f)", r.TokensBack.Min, r.TokensBack.Max, r.TokensBack.Bound)
			}
			fmt.Fprintf(w, "%2d %-13s %-14s tokens back %-22s failed %8d dropped %8d steady p99 %10s ms  %s\n",
				r.Rank, r.Fault, r.Setting, tb, r.Failed, r.Dropped, r.SteadyP99Ms, r.Error)
		}
	}); perr != nil {
		return perr
	}
	return interruptedErr(ctx, tradeoffVerdict(err, runs, dir))
}

// durabilityMinReplicas is --durability's fourth value: async debits on primaries that refuse
// writes without a replica acknowledging within the lag (cluster.min_replicas_to_write).
const durabilityMinReplicas = "min-replicas"

// addDurabilityFlags defines --durability, --durability-timeout and --audit.
func addDurabilityFlags(cmd *cobra.Command, o *runOptions) {
	f := cmd.Flags()
	f.StringVar(&o.durability, "durability", "", "override how debits are made durable: async (replication as Redis does it), "+
		"wait (WAIT after each decision), wait-pipeline (WAIT after each pipeline; needs --transport coalesce) or "+
		"min-replicas (async, on primaries with min-replicas-to-write 1 or the scenario's); sets limiter.durability and cluster.min_replicas_to_write together")
	f.BoolVar(&o.audit, "audit", false, "set limiter.audit: count each bucket's debits, so the summary's tokens_back counts the debits a fault returned (kind token-bucket)")
	f.DurationVar(&o.durabilityTimeout, "durability-timeout", 0, "override limiter.durability_timeout, WAIT's timeout (e.g. 50ms; with --durability wait or wait-pipeline)")
}

// applyDurabilityFlags puts --durability and --durability-timeout over the scenario: each value
// of --durability sets both the limiter's WAIT and the primaries' min-replicas, so a sweep over
// its values compares one setting at a time.
func applyDurabilityFlags(set func(string) bool, spec *scenarios.Spec, o runOptions) {
	if set("durability") {
		l, c := &spec.Limiter, &spec.Cluster
		switch o.durability {
		case durabilityMinReplicas:
			l.Durability, l.DurabilityReplicas, l.DurabilityTimeout = scenarios.DurabilityAsync, 0, 0
			c.MinReplicasToWrite = max(c.MinReplicasToWrite, 1)
			if c.MinReplicasMaxLag == 0 {
				c.MinReplicasMaxLag = scenarios.Duration(scenarios.DefaultMinReplicasMaxLag)
			}
		case scenarios.DurabilityAsync, "":
			l.Durability, l.DurabilityReplicas, l.DurabilityTimeout = scenarios.DurabilityAsync, 0, 0
			c.MinReplicasToWrite, c.MinReplicasMaxLag = 0, 0
		default: // wait, wait-pipeline, or a typo Validate names
			l.Durability = o.durability
			if l.DurabilityReplicas == 0 {
				l.DurabilityReplicas = scenarios.DefaultDurabilityReplicas
			}
			if l.DurabilityTimeout == 0 {
				l.DurabilityTimeout = scenarios.Duration(scenarios.DefaultDurabilityTimeout)
			}
			c.MinReplicasToWrite, c.MinReplicasMaxLag = 0, 0
		}
	}
	if set("audit") {
		spec.Limiter.Audit = o.audit
	}
	if set("durability-timeout") {
		spec.Limiter.DurabilityTimeout = scenarios.Duration(time.Duration(o.durabilityTimeout))
	}
}
