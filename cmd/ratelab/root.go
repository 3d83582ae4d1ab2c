package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// vocabularyHelp is what a flag name means on every command that has it.
const vocabularyHelp = `Flags mean the same on every command:

    --out DIR                 directory of results (a run, a sweep, the runs of a validation)
    --file FILE               the one file a command writes (a trace, a calibration)
    -o, --output FORMAT       printed form of the result: text (default), json, md where there
                              is one; with json, stdout holds only the JSON document
    --rate R                  offered requests per second
    --policy rate=R,burst=B   the token bucket per tenant and endpoint
    --concurrency N           workers at the start
    --max-inflight N          most requests in flight
    --request-timeout D       deadline of one HTTP request
    --decision-timeout D      deadline of one limiter decision

An old spelling of a flag (--json, --format, --workers, --timeout, ...) or of a command that moved
(regions sweep, scenarios side-by-side, trace record, ...) fails with its new name.`

// The groups of commands, by what their users do.
var commandGroups = []*cobra.Group{
	{ID: "run", Title: "Run and read:"},
	{ID: "break", Title: "Break and compare:"},
	{ID: "size", Title: "Size and plan:"},
	{ID: "study", Title: "Studies of many runs:"},
	{ID: "serve", Title: "Servers and clusters:"},
}

// Each group lists its commands in the order a user meets them (run before report), not
// alphabetically. The setting is cobra's, for the process: set once, before any tree is built.
func init() { cobra.EnableCommandSorting = false }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ratelab",
		Short:         "Load-test and size distributed rate limiters on Redis Cluster",
		Long:          "Load-test and size distributed rate limiters on Redis Cluster.\n\n" + vocabularyHelp + "\n\n" + exitCodesHelp,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddGroup(commandGroups...)
	for _, g := range []struct {
		id   string
		cmds []*cobra.Command
	}{
		{"run", []*cobra.Command{newRunCmd(), newReportCmd(), newScenariosCmd(), newTraceCmd(), newMergeCmd(), newDemoCmd()}},
		{"break", []*cobra.Command{newAttackCmd(), newCompareCmd(), newPerfCheckCmd()}},
		{"size", []*cobra.Command{newCapacityCmd(), newSimulateCmd()}},
		{"study", []*cobra.Command{newBenchCmd(), newSideBySideCmd(), newInTheWildCmd(), newRegionsCmd(), newDurabilityCmd()}},
		{"serve", []*cobra.Command{newGatewayCmd(), newClusterCmd(), newKubernetesCmd()}},
	} {
		for _, c := range g.cmds {
			c.GroupID = g.id
			root.AddCommand(c)
		}
	}
	root.AddCommand(newVersionCmd(), newGenDocsCmd())
	addMovedCommands(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

// newGroupCmd makes cmd a group: without a subcommand it prints its help, and an unknown
// subcommand is an error naming it (cobra accepts one silently below the root otherwise).
func newGroupCmd(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return errors.New(msg)
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply
	return cmd
}
