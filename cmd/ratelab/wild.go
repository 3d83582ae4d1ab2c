package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"ratelab/run/engine"
	"ratelab/scenarios"
	"ratelab/studies/wild"
)

// wildOptions are the flags of `ratelab in-the-wild`.
type wildOptions struct {
	out      string
	duration time.Duration
	noFaults bool
	// daemonFault is the gubernator runs' fault of daemon 0: kill, pause or partition.
	daemonFault string
}

func newInTheWildCmd() *cobra.Command {
	var o wildOptions
	cmd := &cobra.Command{
		Use:   "in-the-wild [NAME|FILE]",
		Short: "Run one trace through ratelab's limiters, go-redis/redis_rate and a gubernator cluster, without and with a fault",
		Long: `Run the scenario (default the built-in in-the-wild) as token-bucket, gcra, redis-rate, gubernator
batching and gubernator global, each once without a fault and once with one (kill-primary of the
hottest tenant's primary for the Redis kinds; a gubernator daemon killed and restarted, or paused,
or cut off its peers, with --daemon-fault), and write
one Markdown table (table.md, also printed) and one plot (burst.png) to OUT, with each run's
directory under OUT/runs. Kind gubernator needs bin/gubernatord: make gubernator.`,
		Example: `  ratelab in-the-wild
  ratelab in-the-wild --no-faults --duration 6s
  ratelab in-the-wild --daemon-fault partition`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "in-the-wild"
			if len(args) == 1 {
				name = args[0]
			}
			return runInTheWild(cmd, name, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "`DIR` of the table, the plot and the runs (default out/<scenario>-<time>)")
	f.DurationVar(&o.duration, "duration", 0, "override the scenario's duration of each run (e.g. 6s)")
	f.BoolVar(&o.noFaults, "no-faults", false, "run each limiter without a fault only")
	f.StringVar(&o.daemonFault, "daemon-fault", string(scenarios.FaultKill), "the gubernator runs' fault of daemon 0, 2 s long: `kill` (restarted after), pause or partition (cut off its peers)")
	return cmd
}

func runInTheWild(cmd *cobra.Command, name string, o wildOptions) error {
	spec, err := scenarios.Resolve(name)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("duration") {
		if o.duration < 3*time.Second {
			return fmt.Errorf("--duration %s: want at least 3s (the fault starts a third of the way in)", o.duration)
		}
		spec.Duration = scenarios.Duration(o.duration)
	}
	switch scenarios.FaultKind(o.daemonFault) {
	case scenarios.FaultKill, scenarios.FaultPause, scenarios.FaultPartition:
	default:
		return fmt.Errorf("--daemon-fault %q: use kill, pause or partition", o.daemonFault)
	}
	if o.out == "" {
		o.out = engine.DefaultDir(spec.Name, time.Now())
	}
	ctx, stop := interruptContext(cmd.Context())
	defer stop()
	stderr := cmd.ErrOrStderr()
	rows, err := wild.Run(ctx, spec, wild.Options{Out: o.out, NoFaults: o.noFaults, Version: version, DaemonFault: scenarios.FaultKind(o.daemonFault),
		Logf: func(f string, a ...any) { fmt.Fprintf(stderr, "ratelab: "+f+"\n", a...) }})
	if len(rows) > 0 {
		fmt.Fprint(cmd.OutOrStdout(), wild.Table(rows))
		fmt.Fprintf(stderr, "ratelab: table and plot in %s\n", o.out)
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %d runs written, the last one may be partial", len(rows))}
	}
	return nil
}
