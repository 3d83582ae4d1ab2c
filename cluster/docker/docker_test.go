package docker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/cluster/docker"
)

// testImage is built from the installed redis-server (no registry needed) and kept between runs;
// the Docker build cache makes a rebuild nearly free.
const testImage = "ratelab/redis-local:test"

// localImage builds (or finds) testImage; without a Docker engine the test skips (fails where
// RATELAB_REQUIRE_DOCKER=1, as in CI).
func localImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	img, err := docker.BuildLocalImage(ctx, "", testImage)
	if errors.Is(err, docker.ErrNoDocker) {
		clustertest.SkipUnlessRequired(t, clustertest.RequireDocker, "docker provider test needs a Docker engine: "+err.Error())
	}
	if err != nil {
		t.Fatalf("build a redis image from the installed redis-server: %v", err)
	}
	return img
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	err := docker.Options{Cluster: cluster.Options{Detached: true, Primaries: -1}, Image: "redis 7"}.Validate()
	for _, want := range []string{"local-provider options", "Primaries = -1", `Image = "redis 7"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
	if err := (docker.Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	if err := (docker.Options{Cluster: cluster.Options{Proxy: true}}).Validate(); err != nil {
		t.Errorf("Proxy (latency proxies for docker nodes): %v", err)
	}
}

// medianRTT is the median of n timed PINGs of addr's node through cc (the cluster client's
// connection to it: the announced address, the proxy when there is one).
func medianRTT(ctx context.Context, t *testing.T, cc *redis.ClusterClient, key string, n int) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range n {
		start := time.Now()
		if err := cc.Get(ctx, key).Err(); err != nil && err != redis.Nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// TestDockerLatencyFault: with Proxy, docker nodes announce their proxy's port, so the cluster
// client and the replica's replication link both connect through it, and SetLatency slows a
// node's round trips by at least twice the delay (one delay each way), until it is removed.
func TestDockerLatencyFault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	img := localImage(ctx, t)
	c, err := docker.Start(ctx, docker.Options{Image: img, Cluster: cluster.Options{Primaries: 1, Replicas: 1, Proxy: true, Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	nodes := c.Nodes()
	if len(nodes) != 2 {
		t.Fatalf("nodes %+v: want a primary and its replica", nodes)
	}
	for _, n := range nodes {
		if n.Addr == n.RealAddr || n.RealAddr == "" {
			t.Errorf("node %+v: want it announced at its proxy, not at the container's own port", n)
		}
	}
	primary := c.Primaries()[0]
	// The replica replicates from the address its primary announces: the proxy.
	rc := redis.NewClient(&redis.Options{Addr: c.ReplicasOf(primary.Addr)[0].RealAddr})
	defer rc.Close()
	info, err := rc.Info(ctx, "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("master_port:%d", primary.Port); !strings.Contains(info, want) {
		t.Errorf("replica's INFO replication lacks %q (replication must go through the proxy):\n%s", want, info)
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, ReadTimeout: 5 * time.Second})
	defer cc.Close()
	base := medianRTT(ctx, t, cc, "k", 21)
	const delay = 15 * time.Millisecond
	if err := c.SetLatency(primary.Addr, delay, 0); err != nil {
		t.Fatal(err)
	}
	slow := medianRTT(ctx, t, cc, "k", 21)
	if err := c.SetLatency(primary.Addr, 0, 0); err != nil {
		t.Fatal(err)
	}
	healed := medianRTT(ctx, t, cc, "k", 21)
	t.Logf("median GET round trip: %v before, %v with %v latency, %v after", base, slow, delay, healed)
	// A proxy never delivers early: with the fault every round trip waits at least 2 x delay.
	if slow < 2*delay {
		t.Errorf("median round trip with %v latency each way: %v, want >= %v", delay, slow, 2*delay)
	}
	// Side by side: removing the fault takes the delay away again.
	if healed >= slow/2 {
		t.Errorf("median round trip after removing the latency: %v, with it %v: want it gone", healed, slow)
	}
	if err := c.SetLatency("127.0.0.1:1", delay, 0); !errors.Is(err, cluster.ErrUnknownNode) {
		t.Errorf("SetLatency on an unknown node = %v, want ErrUnknownNode", err)
	}
}
