package results

import (
	"fmt"
	"io"
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
	// LatencyLogFile holds one latency histogram per second as an HdrHistogram interval log
	// (see LatencyLogWriter), written as the run goes: what a merge of parts needs for exact
	// per-second percentiles, and what HdrHistogram's log tools read.
	LatencyLogFile = "latency.hlog"
	// PercentilesFile holds the whole-run latency distribution in HdrHistogram's .hgrm text form
	// (see Histogram.WritePercentiles), in ms.
	PercentilesFile = "latency.hgrm"
	// SecondsHistogramFile held the per-second histograms in runs of an older ratelab (see
	// ReadSecondsHistograms); Merge still reads it from a run without LatencyLogFile.
	SecondsHistogramFile = "latency-seconds.hdr"
	// TallyFile holds the per-key tally (see KeyTally): decisions and overspend per key, what a
	// merge of parts needs for exact hot keys.
	TallyFile = "keys.csv"
)

// WriteRunFiles writes the end of a run into dir: the whole-run histogram (HistogramFile), its
// percentile distribution (PercentilesFile, with RunCounts beside it) and then the summary
// (SummaryFile, atomically). Every kind of run (a scenario, an HTTP attack, a merge) ends here,
// so their directories hold the same files for the report and HdrHistogram's tools to read.
func WriteRunFiles(dir string, sum *Summary, h *Histogram) error {
	if err := writeFile(dir, HistogramFile, func(w io.Writer) error { _, err := h.WriteTo(w); return err }); err != nil {
		return err
	}
	if err := writeFile(dir, PercentilesFile, func(w io.Writer) error { return h.WritePercentiles(w, RunCounts(sum, h)) }); err != nil {
		return err
	}
	return WriteSummary(filepath.Join(dir, SummaryFile), sum)
}

// writeFile creates dir/name and fills it.
func writeFile(dir, name string, fill func(w io.Writer) error) error {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return f.Close()
}
