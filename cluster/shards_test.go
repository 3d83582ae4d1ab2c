package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// addrsOf lists the nodes' addresses.
func addrsOf(ns []cluster.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Addr
	}
	return out
}

// shardPrimaries lists the shards' primaries' addresses.
func shardPrimaries(t *testing.T, cl cluster.Cluster) []string {
	t.Helper()
	shards, err := cl.Shards(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(shards))
	for i, sh := range shards {
		out[i] = sh.Primary.Addr
	}
	return out
}

// On a cluster ratelab formed, shard i's primary is the i-th node as started, and an external
// connection lists the nodes in the order they were started; after a failover, shard 0 is
// served by the promoted replica while node 0 keeps its place in Nodes.
func TestShardsFollowFailover(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{})
	started := addrsOf(l.Nodes())
	if have := shardPrimaries(t, l); !slices.Equal(have, started[:3]) {
		t.Errorf("shard primaries %v, want the first 3 nodes as started %v", have, started[:3])
	}
	shards, _ := l.Shards(t.Context())
	for i, sh := range shards {
		if sh.FirstSlot() != i*cluster.TotalSlots/3 || len(sh.Replicas) != 1 || sh.Replicas[0].Addr != started[3+i] {
			t.Errorf("shard %d: first slot %d, replicas %v; want first slot %d and replica %s", i, sh.FirstSlot(), addrsOf(sh.Replicas), i*cluster.TotalSlots/3, started[3+i])
		}
	}
	ext, err := cluster.ConnectExternal(t.Context(), cluster.ExternalConfig{Addrs: []string{started[4]}})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	if have := addrsOf(ext.Nodes()); !slices.Equal(have, started) {
		t.Errorf("external Nodes %v, want the order the nodes were started in %v", have, started)
	}

	c := redis.NewClient(&redis.Options{Addr: started[3]})
	defer c.Close()
	if err := c.Do(t.Context(), "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := l.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	for shardPrimaries(t, ext)[0] != started[3] {
		if ctx.Err() != nil {
			t.Fatalf("shard 0's primary is still %s after CLUSTER FAILOVER on %s", shardPrimaries(t, ext)[0], started[3])
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := []string{started[3], started[1], started[2]}
	for _, cl := range []cluster.Cluster{l, ext} {
		if have := shardPrimaries(t, cl); !slices.Equal(have, want) {
			t.Errorf("%T: shard primaries after the failover %v, want %v", cl, have, want)
		}
		shards, _ := cl.Shards(t.Context())
		if reps := addrsOf(shards[0].Replicas); !slices.Equal(reps, started[:1]) {
			t.Errorf("%T: shard 0's replicas after the failover %v, want the old primary %s", cl, reps, started[0])
		}
		if have := addrsOf(cl.Nodes()); !slices.Equal(have, started) {
			t.Errorf("%T: Nodes after the failover %v, want the order as started %v", cl, have, started)
		}
	}
}

// A cluster formed by redis-cli, reached as an external cluster: Nodes lists the primaries in
// slot order, then each one's replica in the same order, whatever order CLUSTER NODES used.
func TestExternalOrdersRedisCLICluster(t *testing.T) {
	t.Parallel()
	addrs := clustertest.StartRedisCLI(t, 3, 1)
	ext, err := cluster.ConnectExternal(t.Context(), cluster.ExternalConfig{Addrs: addrs[5:]})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	nodes := ext.Nodes()
	if len(nodes) != 6 {
		t.Fatalf("external Nodes %v, want 6", addrsOf(nodes))
	}
	shards, err := ext.Shards(t.Context())
	if err != nil || len(shards) != 3 {
		t.Fatalf("Shards = %v, %v; want 3", shards, err)
	}
	for i, sh := range shards {
		// redis-cli splits the slots its own way (0-5460, 5461-10922, 10923-16383).
		if i == 0 && sh.FirstSlot() != 0 || i > 0 && sh.FirstSlot() <= shards[i-1].FirstSlot() {
			t.Errorf("shard %d starts at slot %d: want slot order, from 0", i, sh.FirstSlot())
		}
		if p := nodes[i]; p.Role != cluster.RolePrimary || p.ID != sh.Primary.ID {
			t.Errorf("node %d = %s (%s), want shard %d's primary %s", i, p.Addr, p.Role, i, sh.Primary.Addr)
		}
		if r := nodes[3+i]; r.Role != cluster.RoleReplica || r.PrimaryID != sh.Primary.ID {
			t.Errorf("node %d = %s (%s of %s), want the replica of shard %d's primary %s", 3+i, r.Addr, r.Role, r.PrimaryID, i, sh.Primary.Addr)
		}
	}
}

// An external cluster that is healthy is seen as healthy: its nodes are not ours to look at,
// so every one counts as running.
func TestExternalWaitHealthy(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 0})
	ext, err := cluster.ConnectExternal(t.Context(), cluster.ExternalConfig{Addrs: l.Addrs()[:1]})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := ext.WaitHealthy(ctx); err != nil {
		t.Errorf("WaitHealthy of a healthy external cluster: %v", err)
	}
}
