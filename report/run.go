package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"ratelab/results"
)

// maxScenarioBytes bounds the scenario YAML shown in the report; a spec is a few KB.
const maxScenarioBytes = 1 << 20

// run is everything the report reads from a run directory.
type run struct {
	summary *results.Summary
	rows    []results.Interval
	// hist is the whole-run latency histogram; nil when latency.hdr.json is absent or unreadable.
	hist *results.Histogram
	// scenario is the resolved spec as YAML; "" when scenario.yaml is absent.
	scenario string
	// warnings are problems with the optional or partial inputs, shown in the report.
	warnings []string
}

// loadRun reads a run directory. summary.json is required: without it there is nothing to
// report. Everything else degrades to a warning: a truncated or corrupt timeseries.csv keeps the
// rows before the damage (an interrupted run still gets its report), a missing one means no data.
func loadRun(dir string) (*run, error) {
	s, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s: is %s a run directory written by ratelab run? %w", results.SummaryFile, dir, err)
	}
	if err != nil {
		return nil, err
	}
	r := &run{summary: s}
	r.rows, err = readTimeseries(filepath.Join(dir, results.TimeseriesFile))
	r.warn(results.TimeseriesFile, err)
	r.hist, err = readHistogram(filepath.Join(dir, results.HistogramFile))
	r.warn(results.HistogramFile, err)
	r.scenario, err = readScenario(filepath.Join(dir, results.ScenarioFile))
	r.warn(results.ScenarioFile, err)
	return r, nil
}

// warn records err about file, naming the file rather than its full path so the report reads
// the same wherever the run directory is.
func (r *run) warn(file string, err error) {
	if err == nil {
		return
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	r.warnings = append(r.warnings, file+": "+err.Error())
}

func readTimeseries(path string) ([]results.Interval, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("missing: the run recorded no intervals")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := results.ReadTimeseries(f)
	if err != nil {
		return rows, fmt.Errorf("%w (the report shows the %d rows before it)", err, len(rows))
	}
	return rows, nil
}

// readHistogram returns nil, nil when the optional histogram file does not exist.
func readHistogram(path string) (*results.Histogram, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := results.ReadHistogram(f)
	if err != nil {
		return nil, fmt.Errorf("%w (no percentile chart)", err)
	}
	return h, nil
}

// readScenario returns "" , nil when the optional scenario file does not exist.
func readScenario(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScenarioBytes+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxScenarioBytes {
		return "", fmt.Errorf("larger than %d bytes; not shown", maxScenarioBytes)
	}
	if !utf8.Valid(data) {
		return "", errors.New("not UTF-8 text; not shown")
	}
	return string(data), nil
}
