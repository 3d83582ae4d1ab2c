// Package live exposes a run's measurements as Prometheus metrics while the run goes: served on
// an HTTP address for Prometheus to scrape, pushed with Prometheus remote write for runs shorter
// than a scrape interval, or both, from one registry so that both say the same.
//
// It is fed by what a driver of runs already hands its caller: the per-second rows
// (results.Interval), the live snapshots (results.Progress) and, where the driver offers each
// decision, its latency. Finish sets every counter to the summary's total, so that the last
// value Prometheus stores equals summary.json; docs/metrics.md ("Live metrics") defines each
// metric. The package never drives a run, reads a run directory or imports the scenarios.
package live
