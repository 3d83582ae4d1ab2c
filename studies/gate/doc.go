// Package gate is ratelab's performance gate, `ratelab perf-check`: it compares builds, not
// days. It builds the base revision (by default the merge base of HEAD with the main branch) in
// a temporary git worktree and the head from the working tree, starts one local Redis Cluster,
// runs the two binaries alternately (ABBA: base, head, head, base, ...) with the same scenario
// on that cluster, emptied before each run, and judges the two sets of runs with
// results/compare: a metric regresses when the Mann-Whitney U test finds the sets different
// and head's median is worse than base's beyond the metric's threshold.
//
// Alternating the runs puts a busy moment of a shared machine on both sides alike, which a
// baseline committed on another day cannot: there the machine's day is part of the difference.
// That mode stays (Options.Against) for users who cannot build the base, and says in its output
// that it compares days.
//
// For measuring the gate itself, Options.HeadDelay injects a regression without changing the
// build: every node runs behind the cluster package's latency proxy, and during the head's runs
// every primary's proxy delays each chunk of bytes by HeadDelay in each direction (the latency
// fault's primitive, cluster.Local.SetLatency).
//
// It runs ratelab binaries as child processes and reads their summary.json files; it never
// decides a request or computes a figure of a run itself.
package gate
