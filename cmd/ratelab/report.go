package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"ratelab/report"
)

// reportOptions are the arguments of `ratelab report`.
type reportOptions struct {
	// dir is the run directory holding summary.json and timeseries.csv.
	dir string
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate the plots, report.html and report.md of a run directory",
		Long: `Read a run directory (summary.json, timeseries.csv, and scenario.yaml and latency.hdr.json
when present) and write latency, throughput, redirects, overspend and latency_hdr plots (PNG and SVG),
a self-contained report.html and a report.md into it. Prints the path of report.html.

A truncated timeseries.csv (an interrupted run) still gets a report: the rows before the
damage are plotted and the report says what was cut.`,
		Example: "  ratelab report out/hot-tenant-20250601-120000",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			if err := report.Generate(o.dir); err != nil {
				return err
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(o.dir, report.HTMLFile))
			return err
		},
	}
}
