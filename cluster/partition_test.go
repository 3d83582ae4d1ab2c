package cluster_test

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
)

// partitionNodeTimeout is cluster-node-timeout of the partition tests: a node that hears nothing
// from another for this long flags it fail?.
const partitionNodeTimeout = time.Second

// eventually polls check every 50 ms until it returns nil or bound has passed, then fails the
// test with what, the time waited and check's last answer.
func eventually(t *testing.T, bound time.Duration, what string, check func() error) {
	t.Helper()
	began := time.Now()
	for {
		err := check()
		if err == nil {
			t.Logf("%s after %v", what, time.Since(began).Round(time.Millisecond))
			return
		}
		if time.Since(began) > bound {
			t.Fatalf("%s: not within %v: %v", what, bound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// viewOf is CLUSTER NODES as the node on addr sees it, with the line of each node by address.
func viewOf(ctx context.Context, l *cluster.Local, addr string) (map[string]cluster.NodeView, error) {
	vs, err := l.NodesSeenBy(ctx, addr)
	if err != nil {
		return nil, err
	}
	out := map[string]cluster.NodeView{}
	for _, v := range vs {
		out[v.Addr] = v
	}
	return out, nil
}

// allConnected is nil when the node on addr lists every node of l connected and none fail? or
// fail.
func allConnected(ctx context.Context, l *cluster.Local, addr string) error {
	view, err := viewOf(ctx, l, addr)
	if err != nil {
		return err
	}
	var probs []string
	for _, n := range l.Nodes() {
		v, ok := view[n.Addr]
		switch {
		case !ok:
			probs = append(probs, n.Addr+" missing")
		case !v.Connected || v.Suspected() || v.Failed():
			probs = append(probs, fmt.Sprintf("%s connected=%v flags=%v", n.Addr, v.Connected, v.Flags))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s sees %s", addr, strings.Join(probs, "; "))
	}
	return nil
}

// clusterState is cluster_state of CLUSTER INFO on c.
func clusterState(ctx context.Context, c *redis.Client) string {
	s, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return err.Error()
	}
	for line := range strings.SplitSeq(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_state:"); ok {
			return v
		}
	}
	return "(no cluster_state)"
}

// TestPartitionIsolatesPrimary: on a partitionable 3x1 cluster every node connects from a
// source address of its own. A partition of nothing cuts nothing for twice the node timeout.
// Isolating one primary cuts its replication at once (its replica's link goes down) while a
// client on 127.0.0.1 still PINGs it and writes to it until the node timeout; after that the
// isolated node flags every other node fail? with its links disconnected and answers writes
// with CLUSTERDOWN, and the majority flags it fail and promotes its replica. Heal brings every
// link back: all nodes connected, none failing, the old primary a replica of the promoted one,
// cluster_state:ok everywhere.
func TestPartitionIsolatesPrimary(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Partitionable: true, NodeTimeout: partitionNodeTimeout})
	ctx := t.Context()
	sources := map[string]bool{}
	for _, n := range l.Nodes() {
		src, err := plainClient(t, n.RealAddr).ConfigGet(ctx, "bind-source-addr").Result()
		if err != nil || !strings.HasPrefix(src["bind-source-addr"], "127.") || src["bind-source-addr"] == "127.0.0.1" || sources[src["bind-source-addr"]] {
			t.Fatalf("node %s: bind-source-addr = %v, %v; want a loopback address of its own, not 127.0.0.1 (seen %v)", n.Addr, src, err, sources)
		}
		sources[src["bind-source-addr"]] = true
	}
	if err := l.Partition(ctx, []string{"127.0.0.1:1"}); !errors.Is(err, cluster.ErrUnknownNode) {
		t.Errorf("Partition of an unknown address = %v, want ErrUnknownNode", err)
	}

	// The control: a partition of nothing leaves every link up past the node timeout.
	if err := l.Partition(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(2 * partitionNodeTimeout); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, n := range l.Nodes() {
			if err := allConnected(ctx, l, n.Addr); err != nil {
				t.Fatalf("after Partition(nil): %v", err)
			}
		}
	}

	p := l.Primaries()[0]
	r := l.ReplicasOf(p.Addr)[0]
	var q cluster.Node // a primary of the majority
	for _, n := range l.Primaries() {
		if n.Addr != p.Addr {
			q = n
		}
	}
	pView, err := viewOf(ctx, l, p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	slots := pView[p.Addr].Slots
	key := keyInRange(t, slots[0].Start, slots[0].End)
	c := plainClient(t, p.Addr) // from 127.0.0.1, through p's proxy
	began := time.Now()
	if err := l.Partition(ctx, []string{p.Addr}); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING on the isolated primary through its proxy: %v", err)
	}
	err = c.Set(ctx, key, "before the node timeout", 0).Err()
	switch since := time.Since(began); {
	case since >= partitionNodeTimeout/2:
		t.Logf("SET on the isolated primary %v after the cut (%v): too late to judge the write before the node timeout", since, err)
	case err != nil:
		t.Errorf("SET on the isolated primary %v after the cut: %v, want it accepted before the node timeout", since, err)
	}
	rc := plainClient(t, r.RealAddr)
	eventually(t, partitionNodeTimeout/2, "the replica's link to the isolated primary down", func() error {
		info, err := rc.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:down") {
			return fmt.Errorf("INFO replication of %s = %v: %q", r.Addr, err, info)
		}
		return nil
	})

	eventually(t, 5*partitionNodeTimeout, "the isolated primary flags every other node fail?, links disconnected", func() error {
		view, err := viewOf(ctx, l, p.Addr)
		if err != nil {
			return err
		}
		for _, n := range l.Nodes() {
			if v := view[n.Addr]; n.Addr != p.Addr && (v.Connected || !(v.Suspected() || v.Failed())) {
				return fmt.Errorf("%s: connected=%v flags=%v", n.Addr, v.Connected, v.Flags)
			}
		}
		return nil
	})
	eventually(t, 10*partitionNodeTimeout, "the majority flags the isolated primary fail and promotes its replica", func() error {
		view, err := viewOf(ctx, l, q.Addr)
		if err != nil {
			return err
		}
		if v := view[p.Addr]; v.Connected || !v.Failed() {
			return fmt.Errorf("%s sees %s connected=%v flags=%v", q.Addr, p.Addr, v.Connected, v.Flags)
		}
		if v := view[r.Addr]; v.Role != cluster.RolePrimary || !slices.Equal(v.Slots, slots) {
			return fmt.Errorf("%s sees the replica %s as %s with slots %v, want the primary of %v", q.Addr, r.Addr, v.Role, v.Slots, slots)
		}
		return nil
	})
	eventually(t, 3*partitionNodeTimeout, "the isolated primary refuses writes with CLUSTERDOWN", func() error {
		if st := clusterState(ctx, c); st != "fail" {
			return fmt.Errorf("cluster_state:%s", st)
		}
		if err := c.Set(ctx, key, "after the node timeout", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			return fmt.Errorf("SET = %v, want CLUSTERDOWN", err)
		}
		return nil
	})
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING on the isolated primary after the node timeout: %v", err)
	}

	if err := l.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := l.WaitHealthy(wctx); err != nil {
		t.Fatalf("after Heal: %v", err)
	}
	for _, n := range l.Nodes() {
		eventually(t, 5*partitionNodeTimeout, n.Addr+" sees every node connected, none failing", func() error {
			return allConnected(ctx, l, n.Addr)
		})
		if st := clusterState(ctx, plainClient(t, n.Addr)); st != "ok" {
			t.Errorf("%s after Heal: cluster_state:%s, want ok", n.Addr, st)
		}
		view, err := viewOf(ctx, l, n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if v := view[p.Addr]; v.Role != cluster.RoleReplica || v.PrimaryID != r.ID {
			t.Errorf("%s sees the old primary %s as %s of %q, want a replica of the promoted %s (%s)", n.Addr, p.Addr, v.Role, v.PrimaryID, r.Addr, r.ID)
		}
	}
}

// TestPartitionMinReplicas: with MinReplicasToWrite 1 the primary of a partitionable 1x1
// cluster accepts writes while its replica is connected, refuses them (NOREPLICAS) once a
// partition isolates the replica, also after the replica restarted, and accepts them again
// after Heal.
func TestPartitionMinReplicas(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: 1, Partitionable: true, MinReplicasToWrite: 1, MinReplicasMaxLag: 1})
	ctx := t.Context()
	p := l.Primaries()[0]
	r := l.ReplicasOf(p.Addr)[0]
	c := plainClient(t, p.Addr)
	conf, err := c.ConfigGet(ctx, "min-replicas-*").Result()
	if err != nil || conf["min-replicas-to-write"] != "1" || conf["min-replicas-max-lag"] != "1" {
		t.Fatalf("CONFIG GET min-replicas-* = %v, %v; want to-write 1, max-lag 1", conf, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET with the replica connected: %v", err)
	}
	if err := l.Partition(ctx, []string{r.Addr}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the primary refuses writes without its replica", func() error {
		if err := c.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
			return fmt.Errorf("SET = %v, want NOREPLICAS", err)
		}
		return nil
	})
	// A restarted replica stays on its side: it keeps its source address and proxies.
	if err := l.Restart(ctx, r.Addr); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := c.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") {
			t.Fatalf("SET after the isolated replica restarted = %v, want NOREPLICAS still", err)
		}
	}
	if err := l.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the primary accepts writes again", func() error {
		return c.Set(ctx, "k", "v", 0).Err()
	})
}

// TestPartitionUnsupported: a cluster started without Partitionable refuses Partition and Heal
// with ErrUnsupported and an error naming the option.
func TestPartitionUnsupported(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Proxy: true})
	for name, err := range map[string]error{
		"Partition": l.Partition(t.Context(), l.Addrs()),
		"Heal":      l.Heal(t.Context()),
	} {
		if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), "Options.Partitionable") {
			t.Errorf("%s without Partitionable = %v, want ErrUnsupported naming Options.Partitionable", name, err)
		}
	}
}
