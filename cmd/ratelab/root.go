package main

import "github.com/spf13/cobra"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ratelab",
		Short:         "Load-test and size distributed rate limiters on Redis Cluster",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newScenariosCmd(), newReportCmd(), newClusterCmd(), newGatewayCmd(), newCompareCmd(), newAttackCmd(), newTraceCmd(), newBenchCmd(), newCapacityCmd(), newSimulateCmd(), newDemoCmd(), newMergeCmd(), newVersionCmd())
	return root
}
