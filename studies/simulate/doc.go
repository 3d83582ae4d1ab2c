// Package simulate is a discrete-event model of a rate limiter on a Redis Cluster, for rates one
// machine cannot generate (1M-10M decisions/s): N primaries, each a single-threaded FIFO server
// with a calibrated service-time distribution; open-loop Poisson clients whose keys follow the
// scenarios' Zipf popularity and land on primaries by their CRC16 slot; optional token leases; and
// a primary failover (outage for detection plus election, a lost replication window). Simulate runs
// it.
//
// Optionally (Config.Host) the clients and primaries share one machine's CPU, which the scheduler
// takes away in gaps: the co-located model of a one-machine run, used to validate the model on
// the machine it was calibrated on. Off by default: a real cluster's gateways and primaries have
// hosts of their own. HoldoutLocal calibrates it on one primary and judges its predictions
// (node shares, p99, knees, the busiest primary) against runs it never saw, each beside a naive
// baseline; ValidateCoLocated checks it between the two gap runs it is calibrated from.
//
// It predicts per-primary utilisation, throughput, latency percentiles, central operations, the
// gateways' CPU and the failover's overspend bound. The model itself never talks to Redis:
// Calibrate, Measure and CalibrateCoLocated turn measured runs (engine.Run, with the nodes' INFO
// read by cluster.ReadNodeStats around them) into its inputs, and the limits of the model are
// in docs/capacity.md.
package simulate
