// Package simulate is a discrete-event model of a rate limiter on a Redis Cluster, for rates one
// machine cannot generate (1M-10M decisions/s): N shards, each a single-threaded FIFO server with
// a calibrated service-time distribution; open-loop Poisson clients whose keys follow the
// scenarios' Zipf popularity and land on shards by their CRC16 slot; optional token leases; and a
// primary failover (outage for detection plus election, a lost replication window).
//
// It predicts per-shard utilisation, throughput, latency percentiles, central operations and the
// failover's overspend bound. It never talks to Redis: Calibrate turns a measured run into its
// inputs, and the limits of the model are in docs/capacity.md.
package simulate
