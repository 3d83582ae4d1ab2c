// Package report turns a run directory into plots and a report: per-second latency, throughput,
// redirects (stacked by kind) and cumulative overspend charts, each marking the run's injected
// faults, and an HDR percentile chart (PNG and SVG, drawn with gonum/plot); one self-contained
// report.html (SVGs and CSS inline, no network, no JavaScript) and a report.md for CI job
// summaries, both with a Faults table that reads each fault's detection, recovery and damage.
//
// It reads only the files a run left behind (through package results) and writes only into that
// directory. It never runs load, never talks to Redis and never decides pass/fail: the SLO
// verdicts it shows are the ones recorded in summary.json.
package report
