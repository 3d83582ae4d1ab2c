// Package compare judges two sets of runs of one scenario — BASE and NEW, each usually the
// repetitions `ratelab run --repeat N` leaves in rep-NN/ directories — metric by metric: the
// medians with their confidence intervals, the delta, and a Mann-Whitney U test, the
// distribution-free test benchstat uses. A metric regresses only when the difference is
// significant (p < alpha) AND worse than the metric's threshold, so run-to-run noise on a busy
// machine does not fail a gate.
//
// Latency is compared over offered requests: a percentile that fell among the dropped requests
// is not measurable, worse than any finite one. Runs of different summary schemas (v1 against
// v2) are refused: their definitions differ.
//
// It reads summary.json files and writes tables; it never starts a run.
package compare
