package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ratelab/report"
	"ratelab/results"
)

// Generate turns a run directory into charts and reports; here the run is an empty one.
func ExampleGenerate() {
	dir, err := os.MkdirTemp("", "ratelab-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s := results.NewSummary("smoke", 1, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	if err := results.WriteSummary(filepath.Join(dir, results.SummaryFile), s); err != nil {
		panic(err)
	}
	f, err := os.Create(filepath.Join(dir, results.TimeseriesFile))
	if err != nil {
		panic(err)
	}
	if _, err := results.NewTimeseriesWriter(f); err != nil {
		panic(err)
	}
	f.Close()

	if err := report.Generate(dir); err != nil {
		panic(err)
	}
	for _, name := range []string{report.HTMLFile, report.MarkdownFile, "latency.png", "throughput.svg"} {
		_, err := os.Stat(filepath.Join(dir, name))
		fmt.Println(name, err == nil)
	}
	// Output:
	// report.html true
	// report.md true
	// latency.png true
	// throughput.svg true
}
