// Package capacity answers "how much can this cluster carry, and how many primaries do I need":
// a rate sweep that finds the SLO knee on a real local cluster (Sweep), a Universal Scalability
// Law fit of throughput against primaries (FitUSL), the load skew of Zipf tenants hashed into
// Redis Cluster slots (Skew) and a sizing recommendation that names its limiting factor (Plan).
//
// It never models queueing over time: that is package simulate. It never starts traffic itself:
// a sweep step is one engine.Run.
package capacity
