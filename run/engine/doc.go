// Package engine runs a scenario. Open builds everything a run needs from its Spec — the run
// directory, the cluster (started, attached to or external), the Redis client with its
// per-node counters, the limiter of any kind behind every gateway, tariffs, fail policies,
// the overspend checker and the fault runner. Drive then follows the open-loop schedule:
// a pacer fixes each request's intended start, workers decide it and hand one Record per
// decision to the run's consumers (the per-second recorder, the per-key tally), and a
// collector writes timeseries.csv as the run goes. Finish writes the summary, the SLO verdict
// and the rest of the run directory. Run is the three in a row; the HTTP driver (package
// run/attack) shares Open and Finish.
//
// Latency counts from each request's intended start, so a stall is not hidden (no coordinated
// omission); a request the generator could not send is counted as dropped, never skipped.
//
// It never draws plots (package report) and never parses command lines (cmd/ratelab).
package engine
