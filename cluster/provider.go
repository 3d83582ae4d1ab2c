package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is what the scenario engine and its fault runner need from a Redis Cluster, whoever
// started it: the local provider (*Local), the docker provider (package cluster/docker) or an
// external cluster (*External). Providers that cannot do a fault return an error wrapping
// ErrUnsupported (e.g. SetLatency without a proxy in front of the nodes); an external cluster
// refuses every destructive fault with ErrFaultsRefused unless the user passed --allow-faults.
type Cluster interface {
	// Addrs lists the addresses clients use, one per node.
	Addrs() []string
	// ClientOptions are go-redis options that reach the cluster: addresses and, where the
	// provider has them, credentials and TLS. The engine adds timeouts, pools and hooks.
	ClientOptions() *redis.ClusterOptions
	// Nodes is the current view of every node (roles follow failovers), in the provider's fixed
	// order: as started for a cluster ratelab started; in slot order as found at connect for an
	// external one (see External.Nodes). Fault targets node:N that need no primary index it.
	Nodes() []Node
	// Primaries are the nodes whose current role is RolePrimary.
	Primaries() []Node
	// RedisVersion is the nodes' Redis version, e.g. "7.0.15".
	RedisVersion() string
	// PrimaryFor returns the primary serving slot.
	PrimaryFor(slot int) (Node, error)
	// Shards returns the shards in slot order, from the current slot map: fault targets node:N
	// that need a primary (kill, failover, reshard) name the N-th shard as the run started.
	Shards(ctx context.Context) ([]Shard, error)
	// ReplicasOf returns the replicas of the primary on primaryAddr.
	ReplicasOf(primaryAddr string) []Node
	// ReplOffsets returns the primary's replication offset and each replica's acknowledged one.
	ReplOffsets(ctx context.Context, primaryAddr string) (int64, map[string]int64, error)
	// WaitHealthy returns once every running node agrees on a fully served slot map.
	WaitHealthy(ctx context.Context) error
	// Kill crashes the node on addr.
	Kill(addr string) error
	// Pause freezes the node on addr (it keeps its sockets and answers nothing).
	Pause(addr string) error
	// Resume undoes Pause.
	Resume(addr string) error
	// Restart brings a killed (or running) node back with its identity.
	Restart(ctx context.Context, addr string) error
	// SetLatency delays the traffic of the node on addr by delay ± jitter.
	SetLatency(addr string, delay, jitter time.Duration) error
	// Partition cuts every node-to-node link (cluster bus, replication) between the nodes on
	// isolated and the others, both ways; clients still reach every node. It replaces an
	// earlier partition.
	Partition(ctx context.Context, isolated []string) error
	// Heal restores every link Partition cut.
	Heal(ctx context.Context) error
	// NodesSeenBy is CLUSTER NODES as the node on addr sees the cluster.
	NodesSeenBy(ctx context.Context, addr string) ([]NodeView, error)
	// MigrateSlots moves n slots (or WithSlotRange) and their keys from one primary to another.
	MigrateSlots(ctx context.Context, n int, from, to string, opts ...MigrateOption) (MigrateResult, error)
	// Close releases what the handle holds and stops the nodes it owns.
	Close() error
}

var _ Cluster = (*Local)(nil)

// ErrUnsupported is wrapped when a provider cannot perform a fault at all (the docker provider
// has no latency proxy; an attached or adopted cluster has no processes to signal).
var ErrUnsupported = errors.New("fault not supported by this cluster provider")

// ErrFaultsRefused is wrapped when a destructive fault is asked of an external cluster whose
// configuration does not allow faults.
var ErrFaultsRefused = errors.New("destructive faults are refused on an external cluster unless --allow-faults is given")
