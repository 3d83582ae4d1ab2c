package clustertest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
)

// redisCLIWait bounds how long a cluster formed by redis-cli takes to settle (every replica
// attached and in sync, every node agreeing on it).
const redisCLIWait = 30 * time.Second

// StartRedisCLI returns the addresses of a Redis Cluster of primaries x (1+replicas) nodes formed
// the way a user forms one: `redis-cli --cluster create ADDR... --cluster-replicas N`. So it has
// redis-cli's layout, not ratelab's — which nodes become primaries and which replica follows
// which is redis-cli's choice, and CLUSTER NODES lists them in no useful order — for tests of
// ratelab against an external cluster. The redis-server processes are those of a local cluster
// started for the test (so they die with it), emptied and made to forget that cluster (FLUSHALL,
// CLUSTER RESET HARD) before redis-cli forms the new one; it returns once every replica is in
// sync and every node reports cluster_state:ok. A missing redis-cli fails the test.
func StartRedisCLI(t testing.TB, primaries, replicas int) []string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("clustertest: redis-cli not found (%v): install it (Debian: apt-get install redis-tools)", err)
	}
	l := Start(t, cluster.Options{Primaries: primaries * (1 + replicas), Replicas: cluster.NoReplicas})
	addrs := l.Addrs()
	ctx, cancel := context.WithTimeout(context.Background(), redisCLIWait)
	defer cancel()
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		err := c.FlushAll(ctx).Err()
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "RESET", "HARD").Err()
		}
		c.Close()
		if err != nil {
			t.Fatalf("clustertest: emptying %s for redis-cli: %v", a, err)
		}
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("clustertest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := waitSettled(ctx, addrs, primaries*replicas); err != nil {
		t.Fatalf("clustertest: the cluster redis-cli formed: %v\nredis-cli said:\n%s", err, out)
	}
	return addrs
}

// waitSettled polls until every node reports cluster_state:ok and replicas replicas, and every
// replica's link to its primary is up.
func waitSettled(ctx context.Context, addrs []string, replicas int) error {
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
		defer clients[i].Close()
	}
	for {
		err := settled(ctx, clients, replicas)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func settled(ctx context.Context, clients []*redis.Client, replicas int) error {
	for _, c := range clients {
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: not cluster_state:ok", c.Options().Addr)
		}
		nodes, err := c.ClusterNodes(ctx).Result()
		if err != nil {
			return err
		}
		n := 0
		for line := range strings.Lines(nodes) {
			if f := strings.Fields(line); len(f) > 2 && strings.Contains(f[2], "slave") {
				n++
			}
		}
		if n != replicas {
			return fmt.Errorf("%s lists %d replicas, want %d:\n%s", c.Options().Addr, n, replicas, nodes)
		}
		repl, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Errorf("%s: replica not in sync with its primary yet", c.Options().Addr)
		}
	}
	return nil
}
