package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// newTraceRecordCmd is `ratelab trace record NAME|FILE --file TRACE`: `run --record-trace TRACE`
// under the name the trace workflow uses. The run is a real one (results, report, exit codes).
func newTraceRecordCmd() *cobra.Command {
	var (
		o    runOptions
		file string
	)
	cmd := &cobra.Command{
		Use:   "record NAME|FILE --file TRACE",
		Short: "Run a scenario and record its schedule (every offered request) as a trace",
		Long: `Runs the scenario as 'ratelab run' does (results, report, exit codes; --out is the run's
directory) and writes its schedule to --file TRACE (or a second argument, TRACE): every offered request, sent or dropped, as (time offset, tenant, endpoint,
cost). With --clock schedule, 'ratelab trace replay TRACE --scenario NAME --clock schedule'
reproduces the run's allowed and denied counts exactly.`,
		Example: `  ratelab trace record smoke --file smoke.trace --clock schedule
  ratelab trace replay smoke.trace --scenario smoke --clock schedule --speed 2`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 2 && file != "" && file != args[1]:
				return fmt.Errorf("--file %s and the argument %s: name the trace once, with --file", file, args[1])
			case len(args) == 2:
				file = args[1]
			case file == "":
				return errors.New("--file: required; name the trace file to write, e.g. --file smoke.trace")
			}
			o.recordTrace = file
			return runScenario(cmd, args[0], o)
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVar(&file, "file", "", "trace `FILE` to write (required)")
	_ = cmd.Flags().MarkHidden("record-trace") // the second argument
	_ = cmd.Flags().MarkHidden("trace")
	return cmd
}

// DefaultReplayScenario is the scenario whose limiter, policy and cluster a replay uses when
// --scenario is not given.
const DefaultReplayScenario = "smoke"

// newTraceReplayCmd is `ratelab trace replay TRACE [--scenario NAME]`: `run NAME --trace TRACE`.
func newTraceReplayCmd() *cobra.Command {
	var o runOptions
	var scenario string
	cmd := &cobra.Command{
		Use:   "replay TRACE [--scenario NAME|FILE] [--speed 2]",
		Short: "Replay a trace in-process through a scenario's limiter and cluster",
		Long: `Replays TRACE with its original timing (scaled by --speed), keys and costs, each tenant's
requests decided in order, through the limiter, policy and cluster of --scenario (default
` + DefaultReplayScenario + `): the trace sets the duration, rate and tenants. Writes a run directory
as 'ratelab run' does; add --via http to replay it through ratelab's gateway, or use
'ratelab attack --trace' for any HTTP limiter.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.trace = args[0]
			return runScenario(cmd, scenario, o)
		},
	}
	o.addFlags(cmd)
	_ = cmd.Flags().MarkHidden("trace") // the argument
	_ = cmd.Flags().MarkHidden("record-trace")
	cmd.Flags().StringVar(&scenario, "scenario", DefaultReplayScenario, "scenario (built-in name or YAML file) whose limiter, policy and cluster the replay uses")
	return cmd
}
