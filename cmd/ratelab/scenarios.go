package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ratelab/results"
	"ratelab/run/engine"
	"ratelab/scenarios"
)

func newScenariosCmd() *cobra.Command {
	cmd := newGroupCmd(&cobra.Command{Use: "scenarios", Short: "List and show the built-in scenarios"})
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, name := range scenarios.BuiltinNames() {
				s, err := scenarios.Builtin(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\n", name, s.Description)
			}
			return tw.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a scenario as YAML with every default filled in",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := scenarios.Resolve(args[0])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(s.YAML())
			return err
		},
	})
	return cmd
}

// sideBySideOptions are the flags of `ratelab side-by-side`.
type sideBySideOptions struct {
	kinds     []string
	duration  time.Duration
	out       string
	cluster   string
	stateFile string
	output    *outputFlag
}

// algorithmJSON is one kind's run in `ratelab side-by-side -o json`.
type algorithmJSON struct {
	Kind           scenarios.LimiterKind `json:"kind"`
	Dir            string                `json:"dir"`
	OpsPerDecision float64               `json:"ops_per_decision"`
	Summary        *results.Summary      `json:"summary"`
}

func newSideBySideCmd() *cobra.Command {
	var o sideBySideOptions
	cmd := &cobra.Command{
		Use:   "side-by-side NAME|FILE",
		Short: "Run one scenario once per limiter algorithm on the same trace and tabulate the results",
		Long: `Run the scenario once per limiter kind with the same seed, load and policy, and print a
Markdown table per algorithm: allowed, overspend, false denies, Redis operations per decision,
p99 latency and achieved rate. The policy must be written as {limit: L, window: W} (the window
kinds read it as a limit per window, the bucket kinds as burst L refilled at L per W); see the
built-in algorithms-side-by-side. With a local cluster one cluster serves every run and is flushed
between them. Each run's full results go to OUT/<kind>.`,
		Example: `  ratelab side-by-side algorithms-side-by-side
  ratelab side-by-side algorithms-side-by-side --kinds token-bucket,gcra --duration 3s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSideBySide(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.kinds, "kinds", nil, "limiter kinds to run, comma-separated (default: all of "+
		fmt.Sprint(engine.AlgorithmKinds)+")")
	f.DurationVar(&o.duration, "duration", 0, "override the scenario's duration of each run (e.g. 3s)")
	f.StringVar(&o.out, "out", "", "`DIR` of the runs, one subdirectory per kind (default out/<scenario>-<time>)")
	f.StringVar(&o.cluster, "cluster", "", "cluster provider: local (start redis-server nodes) or running (the one from 'ratelab cluster up')")
	f.StringVar(&o.stateFile, "state", "", "state file of 'ratelab cluster up' (with --cluster running; default "+stateFileHelp+")")
	o.output = addOutputFlag(cmd, "text and md are the Markdown table, json an array of the kinds' runs with their summaries", outputJSON, outputMD)
	return cmd
}

func runSideBySide(cmd *cobra.Command, name string, o sideBySideOptions) error {
	spec, err := scenarios.Resolve(name)
	if err != nil {
		return err
	}
	set := cmd.Flags().Changed
	if set("duration") {
		if o.duration <= 0 {
			return fmt.Errorf("--duration %s: want a positive duration such as 3s", o.duration)
		}
		spec.Duration = scenarios.Duration(o.duration)
	}
	if set("cluster") {
		spec.Cluster.Provider = scenarios.ClusterProvider(o.cluster)
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stderr := cmd.ErrOrStderr()
	rows, err := engine.Algorithms(ctx, spec, kindsOf(o.kinds), engine.Options{
		Out:       o.out,
		Version:   version,
		StateFile: o.stateFile,
		Logf:      func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) },
	})
	// Print what was measured even when a later kind failed or the run was interrupted.
	if len(rows) > 0 {
		if werr := writeAlgorithms(cmd.OutOrStdout(), o.output.value, rows); werr != nil && err == nil {
			err = werr
		}
		for _, r := range rows {
			fmt.Fprintf(stderr, "ratelab: %s: %s\n", r.Kind, r.Dir)
		}
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %d algorithm runs written, the last one may be partial", len(rows))}
	}
	return nil
}

// writeAlgorithms prints the kinds' runs in the form format.
func writeAlgorithms(w io.Writer, format string, rows []engine.AlgorithmRun) error {
	if format != outputJSON {
		_, err := fmt.Fprint(w, engine.FormatAlgorithms(rows))
		return err
	}
	out := make([]algorithmJSON, len(rows))
	for i, r := range rows {
		out[i] = algorithmJSON{Kind: r.Kind, Dir: r.Dir, OpsPerDecision: r.OpsPerDecision(), Summary: r.Summary}
	}
	return printJSON(w, out)
}

// kindsOf reads limiter kinds from a flag's values; the spec's validation refuses unknown ones.
func kindsOf(names []string) []scenarios.LimiterKind {
	out := make([]scenarios.LimiterKind, len(names))
	for i, n := range names {
		out[i] = scenarios.LimiterKind(n)
	}
	return out
}
