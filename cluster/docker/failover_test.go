//go:build faults

package docker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/cluster/docker"
	"ratelab/limiter"
)

// load runs workers goroutines of token-bucket decisions on keys for d and counts allowed or
// denied decisions and timeouts.
func load(ctx context.Context, b *limiter.RedisTokenBucket, tenants []string, d time.Duration) (ok, timeouts, other int64) {
	var okN, toN, otherN atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; time.Now().Before(end) && ctx.Err() == nil; i++ {
				_, err := b.Allow(ctx, limiter.Request{Tenant: tenants[i%len(tenants)], Endpoint: "read", Cost: 1})
				switch {
				case err == nil:
					okN.Add(1)
				case limiter.ClassifyError(err) == limiter.KindTimeout:
					toN.Add(1)
				default:
					otherN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), toN.Load(), otherN.Load()
}

// TestDockerCluster starts 3 primaries x 1 replica in containers of a locally built image,
// drives the Lua token bucket through a ClusterClient, pauses the primary of one tenant (its
// decisions time out) and kills it (its replica takes over and decisions succeed again).
func TestDockerCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	clustertest.Watch(t)
	img := localImage(ctx, t)
	began := time.Now()
	// NodeTimeout 2 s: a pause shorter than that (plus the 1 s decision timeout) never fails the
	// node over, so the paused phase measures the pause alone.
	c, err := docker.Start(ctx, docker.Options{Image: img, Cluster: cluster.Options{NodeTimeout: 2 * time.Second, Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	t.Logf("3x1 docker cluster up in %v", time.Since(began).Round(time.Millisecond))
	nodes := c.Nodes()
	if len(nodes) != 6 || len(c.Primaries()) != 3 {
		t.Fatalf("have %d nodes, %d primaries; want 6 and 3", len(nodes), len(c.Primaries()))
	}
	for _, n := range nodes {
		if n.Pid == 0 || !strings.HasPrefix(n.Addr, "127.0.0.1:") {
			t.Errorf("node %+v: want a running container on 127.0.0.1", n)
		}
	}
	// Shard i's primary is node i as started, its replica node 3+i.
	shards, err := c.Shards(ctx)
	if err != nil || len(shards) != 3 {
		t.Fatalf("Shards() = %+v, %v; want 3", shards, err)
	}
	for i, sh := range shards {
		if sh.Primary.Addr != nodes[i].Addr || len(sh.Replicas) != 1 || sh.Replicas[0].Addr != nodes[3+i].Addr || sh.Primary.Pid == 0 {
			t.Errorf("shard %d = primary %+v, replicas %+v; want node %d (running) with node %d", i, sh.Primary, sh.Replicas, i, 3+i)
		}
	}
	if !strings.HasPrefix(c.RedisVersion(), "7.") {
		t.Errorf("RedisVersion() = %q, want 7.x", c.RedisVersion())
	}
	if err := c.SetLatency(nodes[0].Addr, time.Millisecond, 0); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("SetLatency without Proxy = %v, want ErrUnsupported", err)
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	defer cc.Close()
	b, err := limiter.NewRedisTokenBucket(cc, limiter.BucketPolicy{Rate: 1000, Burst: 1000}, limiter.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var tenants []string
	for i := range 32 {
		tenants = append(tenants, fmt.Sprintf("tenant-%d", i))
	}
	ok, timeouts, other := load(ctx, b, tenants, time.Second)
	t.Logf("healthy: %d decisions, %d timeouts, %d other errors", ok, timeouts, other)
	// Generous: a loaded CI machine under -race may time out a few decisions even when healthy.
	if ok < 20 || (timeouts+other)*2 > ok {
		t.Fatalf("healthy cluster: %d decisions, %d timeouts, %d errors in 1 s; want >= 20 and errors < half of them", ok, timeouts, other)
	}

	// Pause the primary of tenant-0 for well under cluster-node-timeout: its decisions time out.
	hot := []string{"tenant-0"}
	slot := cluster.KeySlot("rl:{tenant-0}:read")
	p, err := c.PrimaryFor(slot)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(p.Addr); err != nil {
		t.Fatal(err)
	}
	ok, timeouts, _ = load(ctx, b, hot, 300*time.Millisecond)
	if err := c.Resume(p.Addr); err != nil {
		t.Fatal(err)
	}
	t.Logf("paused %s: %d decisions, %d timeouts", p.Addr, ok, timeouts)
	if timeouts == 0 || ok*10 > timeouts {
		t.Errorf("paused primary: %d decisions, %d timeouts; want (almost) only timeouts", ok, timeouts)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}

	// Kill it: its replica is promoted and tenant-0's decisions succeed again.
	p, err = c.PrimaryFor(slot)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	if err := c.Kill(p.Addr); err != nil {
		t.Fatal(err)
	}
	var promoted, recovered time.Duration
	for time.Since(killedAt) < 30*time.Second && promoted == 0 {
		if np, err := c.PrimaryFor(slot); err == nil && np.Addr != p.Addr {
			promoted = time.Since(killedAt)
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if promoted == 0 {
		t.Fatalf("no replica of %s promoted within 30 s; nodes: %+v", p.Addr, c.Nodes())
	}
	// go-redis learns the new owner from a reload (a dead node sends no MOVED); the engine's
	// client does the same on connection errors.
	for time.Since(killedAt) < 40*time.Second && recovered == 0 {
		if _, err := b.Allow(ctx, limiter.Request{Tenant: "tenant-0", Endpoint: "read", Cost: 1}); err == nil {
			recovered = time.Since(killedAt)
		} else {
			cc.ReloadState(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}
	if recovered == 0 {
		t.Fatalf("tenant-0's decisions still fail 40 s after killing %s (replica promoted after %v)", p.Addr, promoted)
	}
	t.Logf("killed %s: replica promoted after %v, decisions succeed after %v", p.Addr, promoted.Round(time.Millisecond), recovered.Round(time.Millisecond))
	for _, n := range c.Nodes() {
		if n.Addr == p.Addr && n.Pid != 0 {
			t.Errorf("killed node %s still reports pid %d", n.Addr, n.Pid)
		}
	}
	if err := c.Restart(ctx, p.Addr); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatalf("after restarting %s: %v", p.Addr, err)
	}
	for _, n := range c.Nodes() {
		if n.Addr == p.Addr && n.Role != cluster.RoleReplica {
			t.Errorf("restarted node %s has role %q, want it back as a replica", n.Addr, n.Role)
		}
	}
	// The killed primary's shard is now served by its promoted replica, with it as a replica.
	if shards, err = c.Shards(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		if sh.FirstSlot() <= slot && slot <= sh.Slots[len(sh.Slots)-1].End &&
			(sh.Primary.Addr == p.Addr || len(sh.Replicas) != 1 || sh.Replicas[0].Addr != p.Addr || sh.Replicas[0].Pid == 0) {
			t.Errorf("shard of slot %d after the kill and restart of %s = primary %+v, replicas %+v; want its replica as primary and it as a running replica", slot, p.Addr, sh.Primary, sh.Replicas)
		}
	}
}
