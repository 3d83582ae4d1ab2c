// Package report turns a run directory into plots and a report: per-second latency (with the
// share of each second's offered requests the generator dropped in a panel below), throughput,
// redirects (stacked by kind) and cumulative overspend charts, each marking the run's injected
// faults, and an HDR percentile chart (PNG and SVG, drawn with gonum/plot); one self-contained
// report.html (SVGs and CSS inline, no network, no JavaScript beyond an inline self-check) and a
// report.md, both with the latency over offered and over served requests, overspend confirmed
// and possible, the burst excess against its bound, and a Faults table that reads each fault's
// detection, recovery and damage and marks failed faults.
//
// report.md is meant for CI job summaries (`cat report.md >> $GITHUB_STEP_SUMMARY`, GitLab's
// Markdown), which cannot reach the run directory and strip data: URIs but render Mermaid: it
// links no file and draws its charts (offered vs achieved requests/s, p99 latency, MOVED/ASK
// redirects and cumulative overspend when the run has them) as Mermaid xychart-beta blocks from
// timeseries.csv, with a bounded number of points a line (a long run's seconds aggregated, as
// each chart says) and the faults noted under each; it names the plot files as text.
//
// WriteText prints the same figures in short after `ratelab run`. A summary read from a v1 file
// is shown by its own (old) definitions and says so.
//
// It reads only the files a run left behind (through package results) and writes only into that
// directory. It never runs load, never talks to Redis and never decides pass/fail: the SLO
// verdicts it shows are the ones recorded in summary.json.
package report
