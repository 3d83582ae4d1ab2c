// Package faults injects a scenario's faults — kills, pauses, failovers, latency, reshards,
// script flushes, restarts of Redis nodes, and clock skews and deaths of gateways — on schedule
// during a run, records each as an event with the overspend bound it implies, and measures from
// a run's per-second rows when each fault was detected and when the run recovered.
//
// It reaches the run only through Hooks (which gateway to skew, which slots are busiest, where
// to book an injection); it never decides a request and never writes a run directory.
package faults
