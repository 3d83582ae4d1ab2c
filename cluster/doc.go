// Package cluster owns the Redis Clusters ratelab measures against. Its local provider starts
// redis-server child processes on 127.0.0.1 (one temp dir, redis.conf, nodes.conf and log per
// node), forms the cluster from Go (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE — no redis-cli), waits
// until every node reports cluster_state:ok and all agree on the slot map, and keeps one handle
// per node for fault injection (Signal, Kill, Pause, Resume, Restart, WaitHealthy).
//
//	l, err := cluster.StartLocal(ctx, cluster.Options{})      // 3 primaries x 1 replica
//	l, err := cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: 0}) // 1 primary, no replica
//	defer l.Close()
//
// Processes never outlive the program that started them, unless Options.Detached is set. Each
// node runs in its own process group, so a terminal Ctrl-C reaches only ratelab, which decides
// the order of shutdown (the CLI uses signal.NotifyContext and calls Close). On Linux each node
// also has Pdeathsig SIGKILL, so even a SIGKILL of ratelab takes the nodes down; the dir such a
// kill leaves behind is removed by the next StartLocal in the same parent dir. Pdeathsig fires
// when the parent *thread* exits, and Go moves goroutines between threads; therefore every node
// is forked by one process-wide spawner goroutine that locks its OS thread and never returns
// (spawner.go). Other Unix systems get process groups but no Pdeathsig.
//
// Detached clusters (`ratelab cluster up`) get their own session and no Pdeathsig, and are
// recorded in a state file: Up, Attach, ReadStatus, Down and Local.Stop work from any process.
//
// Fault primitives beyond the processes:
//
//   - Latency (proxy.go, link.go, waiter_*.go): with Options.Proxy every node sits behind an
//     in-process TCP proxy whose port it announces, so clients, MOVED/ASK redirects and
//     replication links all cross it. SetLatency delays each forwarded chunk by delay ± jitter
//     in both directions, in order, with sub-millisecond precision (a timerfd, not Go timers).
//     Node.Addr is the proxy, Node.RealAddr the redis-server; every method takes either.
//   - Partitions (partition.go): with Options.Partitionable every node also announces a proxy
//     in front of its cluster bus and connects from a loopback address of its own
//     (bind-source-addr), so Partition can cut the bus and replication between two sets of
//     nodes while clients still reach all of them; Heal restores the links and NodesSeenBy
//     shows what each node makes of it. Forwarder (forwarder.go) is the same forwarding for
//     any loopback target, delayed by SetLatency and lost by Cut: a link between regions.
//   - Resharding (reshard.go): MigrateSlots moves slots and their keys between primaries while
//     the cluster serves (SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT + MIGRATE, SETSLOT NODE),
//     so a load sees ASK during a slot's move and MOVED after it.
//   - Targets (targets.go, shards.go, replication.go): PrimaryFor(slot), Shards (primaries with
//     their slots and replicas, in slot order), ReplicasOf(primary) and ReplOffsets(primary)
//     resolve what a fault hits and how far replication lags. An external cluster lists its
//     nodes in the order ratelab starts a cluster of its shape (primaries by lowest slot, then
//     their replicas), not in CLUSTER NODES order.
//
// Observation (nodestats.go): ReadNodeStats reads nodes' INFO — script calls, CPU time and
// EVALSHA latency percentiles — so two readings bracket what a measurement cost the servers.
//
// Providers and secrets (see docs/clusters.md): Cluster is the interface the scenario engine
// needs; *Local, *External and the docker provider (package cluster/docker, which reuses the
// formation through Adopt) implement it, and a fault a provider cannot do wraps ErrUnsupported.
// Options.RequirePass gives every node a generated password (never logged; Local.Password,
// Local.PasswordFile), Options.TLS makes every node TLS-only (client port, bus, replication).
// ConnectExternal reaches a cluster someone else runs (ParseExternal, password from
// $RATELAB_REDIS_PASSWORD or a file, never from a URL), checks it read-only, refuses destructive
// faults without AllowFaults; KeyPrefix and CleanupPrefix confine a run's keys and remove them.
//
// The package never installs signal handlers, never sends traffic anywhere but 127.0.0.1, never
// generates load, never decides when a fault happens (the scenario engine does) and never
// writes run outputs.
package cluster
