package results

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
)
