package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ratelab/scenarios"
)

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "scenarios", Short: "List and show the built-in scenarios"}
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
