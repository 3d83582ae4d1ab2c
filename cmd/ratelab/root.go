package main

import "github.com/spf13/cobra"

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

Old spellings (--json, --format, --workers, --timeout, ...) still work and say their new name.`

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ratelab",
		Short:         "Load-test and size distributed rate limiters on Redis Cluster",
		Long:          "Load-test and size distributed rate limiters on Redis Cluster.\n\n" + vocabularyHelp + "\n\n" + exitCodesHelp,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newScenariosCmd(), newReportCmd(), newClusterCmd(), newGatewayCmd(), newCompareCmd(), newPerfCheckCmd(), newAttackCmd(), newTraceCmd(), newBenchCmd(), newCapacityCmd(), newRegionsCmd(), newDurabilityCmd(), newSimulateCmd(), newDemoCmd(), newMergeCmd(), newKubernetesCmd(), newVersionCmd(), newGenDocsCmd())
	return root
}
