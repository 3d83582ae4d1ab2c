package results

import (
	"fmt"
	"os"
	"path/filepath"
)

// File names inside a run directory. The engine writes them; the report reads them.
const (
	// SummaryFile holds the Summary as indented JSON.
	SummaryFile = "summary.json"
	// TimeseriesFile holds one Interval per row, written as the run goes.
	TimeseriesFile = "timeseries.csv"
	// HistogramFile holds the whole-run latency Histogram (see Histogram.WriteTo).
	HistogramFile = "latency.hdr.json"
	// ScenarioFile holds the resolved scenario spec as YAML.
	ScenarioFile = "scenario.yaml"
	// SecondsHistogramFile holds one latency histogram per second (see SecondsHistogramWriter),
	// written as the run goes: what a merge of parts needs for exact per-second percentiles.
	SecondsHistogramFile = "latency-seconds.hdr"
	// LedgerFile holds the per-key ledger (see KeyCount): decisions and overspend per key, what a
	// merge of parts needs for exact hot keys.
	LedgerFile = "keys.csv"
)

// WriteRunFiles writes the end of a run into dir: the whole-run histogram (HistogramFile) and then
// the summary (SummaryFile, atomically). Every kind of run (a scenario, an HTTP attack) ends here,
// so their directories hold the same files for the report to read.
func WriteRunFiles(dir string, sum *Summary, h *Histogram) error {
	f, err := os.Create(filepath.Join(dir, HistogramFile))
	if err != nil {
		return err
	}
	if _, err := h.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", HistogramFile, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return WriteSummary(filepath.Join(dir, SummaryFile), sum)
}
