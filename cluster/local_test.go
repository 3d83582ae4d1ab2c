package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// TestStartLocal3x1 checks the default topology end to end: state ok everywhere, full slot
// coverage, one replica per primary, keys in every slot range readable and writable through a
// ClusterClient; then Close leaves no process and no dir behind.
func TestStartLocal3x1(t *testing.T) {
	t.Parallel()
	began := time.Now()
	l, err := cluster.StartLocal(context.Background(), cluster.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("StartLocal: %v", err)
	}
	t.Logf("3x1 cluster started in %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { _ = l.Close() })
	ctx := t.Context()

	nodes := l.Nodes()
	if have, want := len(nodes), 6; have != want {
		t.Fatalf("len(Nodes()) = %d, want %d", have, want)
	}
	if have, want := len(l.Addrs()), 6; have != want {
		t.Fatalf("len(Addrs()) = %d, want %d", have, want)
	}
	if have := l.RedisVersion(); !strings.HasPrefix(have, "7.") {
		t.Errorf("RedisVersion() = %q, want 7.x", have)
	}
	replicasOf := map[string]int{}
	for _, n := range nodes {
		if n.Pid <= 0 || n.ID == "" || n.Addr != fmt.Sprintf("127.0.0.1:%d", n.Port) {
			t.Errorf("node %+v: want a pid, an ID and Addr 127.0.0.1:Port", n)
		}
		if n.Role == cluster.RoleReplica {
			replicasOf[n.PrimaryID]++
		}
	}
	prims := l.Primaries()
	if have, want := len(prims), 3; have != want {
		t.Fatalf("len(Primaries()) = %d, want %d", have, want)
	}
	for _, p := range prims {
		if have, want := replicasOf[p.ID], 1; have != want {
			t.Errorf("primary %s has %d replicas, want %d", p.Addr, have, want)
		}
	}
	for _, addr := range l.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.ClusterInfo(ctx).Result()
		_ = c.Close()
		if err != nil {
			t.Fatalf("CLUSTER INFO on %s: %v", addr, err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384", "cluster_known_nodes:6", "cluster_size:3"} {
			if !strings.Contains(info, want) {
				t.Errorf("CLUSTER INFO on %s lacks %q:\n%s", addr, want, info)
			}
		}
	}

	cc := clustertest.Client(t, l)
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	covered := 0
	for _, s := range slots {
		covered += s.End - s.Start + 1
		if have, want := len(s.Nodes), 2; have != want {
			t.Errorf("slots %d-%d served by %d nodes, want %d (primary + replica)", s.Start, s.End, have, want)
		}
	}
	if have, want := covered, cluster.TotalSlots; have != want {
		t.Errorf("slot coverage = %d, want %d", have, want)
	}
	// One key per slot range: a key whose slot lies in [Start, End] for each range.
	for _, s := range slots {
		key := keyInRange(t, s.Start, s.End)
		if err := cc.Set(ctx, key, key, 0).Err(); err != nil {
			t.Fatalf("SET %s (slot range %d-%d): %v", key, s.Start, s.End, err)
		}
		if have, err := cc.Get(ctx, key).Result(); err != nil || have != key {
			t.Fatalf("GET %s = %q, %v; want %q", key, have, err, key)
		}
	}

	// KeySlot agrees with the server.
	for _, key := range []string{"foo", "rl:{t1}:a", "{user1000}.following"} {
		want, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if have := cluster.KeySlot(key); int64(have) != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", key, have, want)
		}
	}

	// Fault handles: SIGKILL a primary, its replica takes over, the old primary comes back as a
	// replica.
	old := prims[0]
	if err := l.Kill(old.Addr); err != nil {
		t.Fatalf("Kill(%s): %v", old.Addr, err)
	}
	if cluster.ProcessAlive(old.Pid) {
		t.Fatalf("pid %d alive after Kill", old.Pid)
	}
	if err := l.Signal(old.Addr, os.Interrupt); err == nil {
		t.Errorf("Signal to a killed node: want an error")
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	began = time.Now()
	if err := l.WaitHealthy(wctx); err != nil {
		t.Fatalf("WaitHealthy after killing %s: %v", old.Addr, err)
	}
	t.Logf("failover of %s took %v (node timeout %v)", old.Addr, time.Since(began).Round(time.Millisecond), cluster.DefaultNodeTimeout)
	promoted := false
	for _, n := range l.Nodes() {
		if n.PrimaryID == "" && n.Role == cluster.RolePrimary && n.Addr != old.Addr && replicaOf(nodes, n.Addr) == old.ID {
			promoted = true
		}
	}
	if !promoted {
		t.Errorf("no replica of %s was promoted: %+v", old.Addr, l.Nodes())
	}
	if err := l.Restart(wctx, old.Addr); err != nil {
		t.Fatalf("Restart(%s): %v", old.Addr, err)
	}
	if err := l.WaitHealthy(wctx); err != nil {
		t.Fatalf("WaitHealthy after restart: %v", err)
	}
	back := nodeByAddr(l.Nodes(), old.Addr)
	if back.ID != old.ID || back.Role != cluster.RoleReplica || back.Pid == old.Pid || back.Pid == 0 {
		t.Errorf("restarted node = %+v, want the same ID %s as a replica with a new pid", back, old.ID)
	}
	if have, err := cc.Get(ctx, keyInRange(t, 0, 5460)).Result(); err != nil || have == "" {
		t.Errorf("GET after failover = %q, %v", have, err)
	}
	nodes = l.Nodes()

	// Pause makes a node answer nothing; Resume brings it back.
	paused := nodes[len(nodes)-1].Addr
	pc := redis.NewClient(&redis.Options{Addr: paused, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer pc.Close()
	if err := pc.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING %s before Pause: %v", paused, err)
	}
	if err := l.Pause(paused); err != nil {
		t.Fatal(err)
	}
	if err := pc.Ping(ctx).Err(); err == nil {
		t.Errorf("PING %s answered while paused", paused)
	}
	if err := l.Resume(paused); err != nil {
		t.Fatal(err)
	}
	pc2 := redis.NewClient(&redis.Options{Addr: paused, MaxRetries: -1})
	defer pc2.Close()
	if err := pc2.Ping(ctx).Err(); err != nil {
		t.Errorf("PING %s after Resume: %v", paused, err)
	}
	if err := l.Signal("127.0.0.1:1", os.Interrupt); !errors.Is(err, cluster.ErrUnknownNode) {
		t.Errorf("Signal to an unknown address: err = %v, want ErrUnknownNode", err)
	}

	dirs := []string{l.Dir()}
	for _, n := range nodes {
		dirs = append(dirs, n.Dir)
	}
	// Close from several goroutines at once: one stops everything, all return its result.
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- l.Close() }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	for _, n := range nodes {
		if cluster.ProcessAlive(n.Pid) {
			t.Errorf("node %s pid %d alive after Close", n.Addr, n.Pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("dir %s still exists after Close (stat err %v)", d, err)
		}
	}
}

// replicaOf returns the primary ID a node had in view, "" if it was a primary.
func replicaOf(view []cluster.Node, addr string) string {
	return nodeByAddr(view, addr).PrimaryID
}

func nodeByAddr(view []cluster.Node, addr string) cluster.Node {
	for _, n := range view {
		if n.Addr == addr {
			return n
		}
	}
	return cluster.Node{}
}

// keyInRange finds a key "k<i>" whose hash slot lies in [lo, hi].
func keyInRange(t *testing.T, lo, hi int) string {
	t.Helper()
	for i := range 100000 {
		k := fmt.Sprintf("k%d", i)
		s := cluster.KeySlot(k)
		if s >= lo && s <= hi {
			return k
		}
	}
	t.Fatalf("no key found for slots %d-%d", lo, hi)
	return ""
}
