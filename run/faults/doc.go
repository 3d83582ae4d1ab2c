// Package faults injects a scenario's faults — kills, pauses, failovers, latency, reshards,
// script flushes, restarts and partitions of Redis nodes, kills, pauses and partitions of a
// gubernator run's daemons (daemons.go), and clock skews, deaths and partitions of gateways —
// on schedule during a run, records each as an event with the overspend bound it
// implies, and measures from a run's per-second rows when each fault was detected and when the
// run recovered. A fault that takes a primary away (kill, failover, partition) is also recorded
// as a Loss: the slots whose debits it may return and the tokens the cluster's design lets it
// lose (the engine's tokens back).
//
// Each target resolves at injection against the cluster's roles and slot map of that moment
// (targets.go says what node:N names on each provider). A fault that cannot be carried out —
// its target names no such node, the cluster refuses it, a failover never promotes the replica
// — is recorded as failed with the reason (results.Fault.Failed, Error), never passed off as
// injected: the run did not test what its scenario asked.
//
// It reaches the run only through the interfaces it declares, Run, Gateways and Daemons (which
// slots are busiest, how the checker names a cause, which gateway to skew, which daemon to
// signal, where to book an injection); it never decides a request and never writes a run
// directory.
package faults
