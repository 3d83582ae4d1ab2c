package docker

import (
	"context"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
)

// The read side delegates to the adopted control plane (Redis commands only); node Pids are the
// containers' current main processes.

// Addrs returns every node's address ("127.0.0.1:PORT"), primaries first as started.
func (c *Cluster) Addrs() []string { return c.ctl.Addrs() }

// Nodes returns the current view of every node; Pid is the container's main process as the
// engine reports it, 0 while the container is stopped.
func (c *Cluster) Nodes() []cluster.Node { return c.withPids(c.ctl.Nodes()) }

// Primaries returns the nodes whose current role is primary.
func (c *Cluster) Primaries() []cluster.Node { return c.withPids(c.ctl.Primaries()) }

// RedisVersion returns the nodes' Redis version (INFO server).
func (c *Cluster) RedisVersion() string { return c.ctl.RedisVersion() }

// PrimaryFor returns the primary that serves slot.
func (c *Cluster) PrimaryFor(slot int) (cluster.Node, error) {
	n, err := c.ctl.PrimaryFor(slot)
	if err != nil {
		return n, err
	}
	return c.withPids([]cluster.Node{n})[0], nil
}

// Shards returns the shards in slot order from the current slot map (see cluster.Local.Shards),
// with the containers' pids.
func (c *Cluster) Shards(ctx context.Context) ([]cluster.Shard, error) {
	shards, err := c.ctl.Shards(ctx)
	for i := range shards {
		shards[i].Primary = c.withPids([]cluster.Node{shards[i].Primary})[0]
		shards[i].Replicas = c.withPids(shards[i].Replicas)
	}
	return shards, err
}

// ReplicasOf returns the current replicas of the primary on primaryAddr.
func (c *Cluster) ReplicasOf(primaryAddr string) []cluster.Node {
	return c.withPids(c.ctl.ReplicasOf(primaryAddr))
}

// ReplOffsets reads INFO replication of the primary on primaryAddr.
func (c *Cluster) ReplOffsets(ctx context.Context, primaryAddr string) (int64, map[string]int64, error) {
	return c.ctl.ReplOffsets(ctx, primaryAddr)
}

// WaitHealthy polls until every node that is not Kill-ed agrees on a fully served slot map.
func (c *Cluster) WaitHealthy(ctx context.Context) error { return c.ctl.WaitHealthy(ctx) }

// MigrateSlots moves slots and their keys between primaries (see cluster.Local.MigrateSlots).
func (c *Cluster) MigrateSlots(ctx context.Context, n int, from, to string, opts ...cluster.MigrateOption) (cluster.MigrateResult, error) {
	return c.ctl.MigrateSlots(ctx, n, from, to, opts...)
}

// withPids sets each node's Pid from the containers' current state.
func (c *Cluster) withPids(ns []cluster.Node) []cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range ns {
		ns[i].Pid = 0
		for _, nd := range c.nodes {
			if nd != nil && nd.addr == ns[i].Addr && !nd.killed {
				ns[i].Pid = nd.pid
			}
		}
	}
	return ns
}

// ClientOptions returns go-redis cluster options with every node's address (the docker
// provider sets no password and no TLS).
func (c *Cluster) ClientOptions() *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: c.Addrs()}
}
