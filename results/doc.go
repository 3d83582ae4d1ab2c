// Package results owns the record of a run: the summary (summary.json, schema
// "ratelab.summary/v4", whose figures docs/metrics.md defines; v3, v2 and v1 files are
// read too, and say so), the per-second intervals (timeseries.csv, written row by row as the
// run goes), HDR latency histograms with their file forms (latency.hdr.json; latency.hlog, an
// HdrHistogram interval log of the seconds; latency.hgrm, the whole run's percentile
// distribution; latency-seconds.hdr, read from older runs), the per-key tally (keys.csv), and
// the merge of the run directories of a split load's parts.
//
// It is a leaf: it imports nothing from ratelab, never talks to Redis, never generates load and
// never draws plots. It only defines, writes, reads and merges the files a run leaves behind.
package results
