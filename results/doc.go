// Package results owns the record of a run: the summary (summary.json, schema
// "ratelab.summary/v1"), the per-second intervals (timeseries.csv, written row by row as the run
// goes), and HDR latency histograms with their file form (latency.hdr.json).
//
// It is a leaf: it imports nothing from ratelab, never talks to Redis, never generates load and
// never draws plots. It only defines, writes and reads the files a run leaves behind.
package results
