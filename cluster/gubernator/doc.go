// Package gubernator owns the gubernator clusters ratelab measures: N daemons of
// gubernator-io/gubernator (bin/gubernatord, built by `make gubernator` from the module
// pinned in tools/gubernatord) on 127.0.0.1, started and stopped like the Redis nodes of package
// cluster — forked by its locked spawner thread with Pdeathsig, in their own process groups, so
// that no daemon outlives ratelab, on Close, on SIGINT (the CLI's context ends and the engine
// closes the run) or when ratelab is killed.
//
// The daemons know each other from a static peer list (no gossip, no etcd): every daemon is on
// the hash ring under its own gRPC address, and dials each peer through a Forwarder of its own
// (one per ordered pair of daemons). Clients reach each daemon's HTTP gateway directly. The
// fault primitives are Kill, Pause and Resume (signals to the daemon), Restart (same ports, an
// empty cache) and Partition, which cuts every forwarder into and out of one daemon: it loses
// its peers both ways while clients still reach it. Heal restores them.
//
// The package never imports gubernator's module (ratelab's binary stays without it), never
// decides a request and never sends traffic anywhere but 127.0.0.1.
package gubernator
