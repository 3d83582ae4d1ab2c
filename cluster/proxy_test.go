package cluster_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
)

// plainClient is a non-cluster client on one address that follows no redirect and retries
// nothing, closed when the test ends.
func plainClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 3 * time.Second, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// pingTimes returns the sorted round-trip times of n PINGs.
func pingTimes(t *testing.T, c *redis.Client, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, n)
	for i := range out {
		began := time.Now()
		if err := c.Ping(t.Context()).Err(); err != nil {
			t.Fatalf("PING %s: %v", c.Options().Addr, err)
		}
		out[i] = time.Since(began)
	}
	slices.Sort(out)
	return out
}

// TestProxyLatency1x0: a single primary behind its proxy announces the proxy; SetLatency(5ms)
// makes every PING through the proxy take at least 2 x 5 ms (both directions are delayed) while
// the real address stays fast; SetLatency(0) brings the proxy back under a millisecond. A killed
// node's proxy keeps listening but its connections fail; Restart serves through the same port.
func TestProxyLatency1x0(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Proxy: true})
	n := l.Nodes()[0]
	if n.Addr == n.RealAddr || n.Addr != "127.0.0.1:"+strconv.Itoa(n.Port) || n.RealAddr != "127.0.0.1:"+strconv.Itoa(n.RealPort) {
		t.Fatalf("node = %+v: want Addr (proxy) != RealAddr, each matching its port", n)
	}
	if have := l.Addrs(); !slices.Equal(have, []string{n.Addr}) {
		t.Errorf("Addrs() = %v, want the proxy [%s]", have, n.Addr)
	}
	pc, rc := plainClient(t, n.Addr), plainClient(t, n.RealAddr)
	slots, err := pc.ClusterSlots(t.Context()).Result()
	if err != nil || len(slots) != 1 || slots[0].Nodes[0].Addr != n.Addr {
		t.Fatalf("CLUSTER SLOTS through the proxy = %+v, %v; want one range announced at %s", slots, err, n.Addr)
	}

	const delay = 5 * time.Millisecond
	tests := []struct {
		name     string
		delay    time.Duration
		c        *redis.Client
		min, p50 time.Duration // bounds on the fastest and the median PING
	}{
		// Without the fault a median PING stays below one delay, with room for a loaded
		// machine, and far from the 2 x delay the fault imposes on every PING.
		{"proxy, no fault", 0, pc, 0, delay},
		{"proxy, 5ms", delay, pc, 2 * delay, 2*delay + 5*time.Millisecond},
		{"real address during the fault", delay, rc, 0, delay},
		{"proxy, fault lifted", 0, pc, 0, delay},
	}
	for _, tt := range tests {
		if err := l.SetLatency(n.Addr, tt.delay, 0); err != nil {
			t.Fatalf("%s: SetLatency: %v", tt.name, err)
		}
		ts := pingTimes(t, tt.c, 21)
		t.Logf("%s: PING min %v p50 %v max %v", tt.name, ts[0], ts[10], ts[20])
		if have := ts[0]; have < tt.min {
			t.Errorf("%s: fastest PING %v, want >= %v", tt.name, have, tt.min)
		}
		if have := ts[10]; have > tt.p50 {
			t.Errorf("%s: median PING %v, want <= %v", tt.name, have, tt.p50)
		}
	}

	// The real address works too, and errors name what is wrong.
	if err := l.SetLatency(n.RealAddr, 0, 0); err != nil {
		t.Errorf("SetLatency by the real address: %v", err)
	}
	if err := l.SetLatency("127.0.0.1:1", delay, 0); !errors.Is(err, cluster.ErrUnknownNode) {
		t.Errorf("SetLatency on an unknown address: err = %v, want ErrUnknownNode", err)
	}
	if err := l.SetLatency(n.Addr, -delay, 0); err == nil {
		t.Errorf("SetLatency with a negative delay: want an error")
	}

	// Pause by the proxy address, Resume by the real one.
	if err := l.Pause(n.Addr); err != nil {
		t.Fatal(err)
	}
	short := redis.NewClient(&redis.Options{Addr: n.RealAddr, MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	defer short.Close()
	if err := short.Ping(t.Context()).Err(); err == nil {
		t.Errorf("PING of a paused node answered")
	}
	if err := l.Resume(n.RealAddr); err != nil {
		t.Fatal(err)
	}
	if err := rc.Ping(t.Context()).Err(); err != nil {
		t.Errorf("PING after Resume: %v", err)
	}

	// The state file records both addresses; an attached handle finds the node by either, and
	// has no proxy of its own to delay.
	stateFile := t.TempDir() + "/state.json"
	if err := l.SaveState(stateFile); err != nil {
		t.Fatal(err)
	}
	at, err := cluster.Attach(t.Context(), stateFile)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer at.Close()
	if have := at.Nodes()[0]; have.Addr != n.Addr || have.RealAddr != n.RealAddr {
		t.Errorf("attached node = %+v, want Addr %s and RealAddr %s", have, n.Addr, n.RealAddr)
	}
	if st := at.Status(t.Context()); !st.Healthy() {
		t.Errorf("attached Status = %+v, want healthy", st)
	}
	if err := at.SetLatency(n.RealAddr, delay, 0); !errors.Is(err, cluster.ErrNoProxy) {
		t.Errorf("SetLatency on an attached handle: err = %v, want ErrNoProxy", err)
	}
	if err := at.Signal(n.Addr, syscall.Signal(0)); err != nil {
		t.Errorf("Signal(0) by the proxy address through an attached handle: %v", err)
	}

	// Kill by the real address: the proxy still accepts, but the connection fails.
	if err := l.Kill(n.RealAddr); err != nil {
		t.Fatalf("Kill(%s): %v", n.RealAddr, err)
	}
	fresh := plainClient(t, n.Addr)
	if err := fresh.Ping(t.Context()).Err(); err == nil {
		t.Fatalf("PING through the proxy of a killed node answered")
	}
	if c, err := net.Dial("tcp", n.Addr); err != nil {
		t.Errorf("the proxy of a killed node stopped listening: %v", err)
	} else {
		_ = c.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := l.Restart(ctx, n.Addr); err != nil {
		t.Fatalf("Restart(%s): %v", n.Addr, err)
	}
	if err := l.WaitHealthy(ctx); err != nil {
		t.Fatalf("WaitHealthy after Restart: %v", err)
	}
	if err := plainClient(t, n.Addr).Ping(ctx).Err(); err != nil {
		t.Errorf("PING through the proxy after Restart: %v", err)
	}
}

// TestSetLatencyWithoutProxy: a cluster without Options.Proxy has nothing to delay.
func TestSetLatencyWithoutProxy(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	n := l.Nodes()[0]
	if n.Addr != n.RealAddr || n.Port != n.RealPort {
		t.Errorf("node without a proxy = %+v: want Addr == RealAddr", n)
	}
	if err := l.SetLatency(n.Addr, time.Millisecond, 0); !errors.Is(err, cluster.ErrNoProxy) {
		t.Errorf("SetLatency without a proxy: err = %v, want ErrNoProxy", err)
	}
}

// TestProxyCluster2x1: a 2x1 cluster forms behind proxies (every address it announces is a
// proxy), a ClusterClient works through them, a latency fault on one primary's proxy slows only
// that primary's keys, and replication flows through the primary's proxy: with 200 ms on it, a
// write made on the real address reaches the replica no sooner than 200 ms later, and WAIT (a
// GETACK there and an ACK back) takes at least 400 ms. A killed replica's proxy keeps its port
// and Restart serves through it again.
func TestProxyCluster2x1(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 1, Proxy: true})
	ctx := t.Context()
	nodes := l.Nodes()
	proxies := map[string]bool{}
	for _, n := range nodes {
		if n.Addr == n.RealAddr {
			t.Fatalf("node %+v: want a proxy address distinct from the real one", n)
		}
		proxies[n.Addr] = true
	}
	cc := clustertest.Client(t, l)
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		for _, sn := range s.Nodes {
			if !proxies[sn.Addr] {
				t.Errorf("CLUSTER SLOTS %d-%d names %s, which is not a proxy (%v)", s.Start, s.End, sn.Addr, proxies)
			}
		}
	}
	p0, p1 := l.Primaries()[0], l.Primaries()[1]
	k0, k1 := keyInRange(t, 0, 8191), keyInRange(t, 8192, 16383)
	for _, k := range []string{k0, k1} {
		if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s through the proxies: %v", k, err)
		}
	}
	if have, err := l.PrimaryFor(cluster.KeySlot(k0)); err != nil || have.ID != p0.ID {
		t.Fatalf("PrimaryFor(slot of %s) = %+v, %v; want %s", k0, have, err, p0.Addr)
	}
	reps := l.ReplicasOf(p0.Addr)
	if len(reps) != 1 || reps[0].PrimaryID != p0.ID {
		t.Fatalf("ReplicasOf(%s) = %+v, want one replica of %s", p0.Addr, reps, p0.ID)
	}
	replica := reps[0]

	// A fault on p0's proxy: GETs of p0's key pay two delayed hops, p1's key does not.
	const fault = 20 * time.Millisecond
	if err := l.SetLatency(p0.Addr, fault, 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key      string
		min, max time.Duration
	}{{k0, 2 * fault, time.Hour}, {k1, 0, fault}} {
		began := time.Now()
		have, err := cc.Get(ctx, tt.key).Result()
		took := time.Since(began)
		if err != nil || have != tt.key {
			t.Fatalf("GET %s = %q, %v", tt.key, have, err)
		}
		if took < tt.min || took > tt.max {
			t.Errorf("GET %s (slot %d) took %v with %v on %s; want %v..%v", tt.key, cluster.KeySlot(tt.key), took, fault, p0.Addr, tt.min, tt.max)
		}
	}

	// Replication through the proxy. The write goes to the real address: only the replication
	// link is delayed.
	const lag = 200 * time.Millisecond
	if err := l.SetLatency(p0.Addr, lag, 0); err != nil {
		t.Fatal(err)
	}
	rc := plainClient(t, p0.RealAddr)
	if err := rc.Set(ctx, k0, "after", 0).Err(); err != nil {
		t.Fatal(err)
	}
	written, offs, err := l.ReplOffsets(ctx, p0.Addr)
	if err != nil {
		t.Fatalf("ReplOffsets: %v", err)
	}
	if have, ok := offs[replica.Addr]; !ok || have >= written {
		t.Errorf("ReplOffsets right after a write = primary %d, replicas %v; want %s behind %d", written, offs, replica.Addr, written)
	}
	began := time.Now()
	acked, err := rc.Wait(ctx, 1, 5000).Result()
	took := time.Since(began)
	if err != nil || acked != 1 {
		t.Fatalf("WAIT 1 5000 = %d, %v; want 1", acked, err)
	}
	t.Logf("WAIT 1 with %v on the primary's proxy took %v", lag, took)
	if took < 2*lag {
		t.Errorf("WAIT took %v with %v on the replication link; want >= %v (GETACK and ACK both cross the proxy)", took, lag, 2*lag)
	}
	if _, offs, err = l.ReplOffsets(ctx, p0.RealAddr); err != nil || offs[replica.Addr] < written {
		t.Errorf("ReplOffsets after WAIT = %v, %v; want %s at >= %d", offs, err, replica.Addr, written)
	}
	if _, _, err := l.ReplOffsets(ctx, replica.Addr); err == nil {
		t.Errorf("ReplOffsets of a replica: want an error")
	}
	if err := l.SetLatency(p0.Addr, 0, 0); err != nil {
		t.Fatal(err)
	}

	// A migration through the proxies: MIGRATE connects to the announced (proxy) address.
	res, err := l.MigrateSlots(ctx, 0, p0.Addr, p1.Addr, cluster.WithSlotRange(cluster.SlotRange{Start: cluster.KeySlot(k0), End: cluster.KeySlot(k0)}))
	if err != nil || res.Keys != 1 {
		t.Fatalf("MigrateSlots of %s's slot = %+v, %v; want 1 key moved", k0, res, err)
	}
	if _, err := l.MigrateSlots(ctx, 1, replica.Addr, p1.Addr); err == nil {
		t.Errorf("MigrateSlots from a replica: want an error")
	}

	// Kill the replica: its proxy keeps the port, connections through it fail; Restart is
	// reachable through the same proxy again.
	if err := l.Kill(replica.Addr); err != nil {
		t.Fatal(err)
	}
	if err := plainClient(t, replica.Addr).Ping(ctx).Err(); err == nil {
		t.Errorf("PING through a killed replica's proxy answered")
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := l.Restart(wctx, replica.Addr); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitHealthy(wctx); err != nil {
		t.Fatalf("WaitHealthy after restarting the replica: %v", err)
	}
	if err := plainClient(t, replica.Addr).Ping(ctx).Err(); err != nil {
		t.Errorf("PING through the restarted replica's proxy: %v", err)
	}
	if have, err := cc.Get(ctx, k0).Result(); err != nil || have != "after" {
		t.Errorf("GET %s after the migration = %q, %v; want %q", k0, have, err, "after")
	}
}

// BenchmarkProxyPing: PING of a real redis-server, straight and through its proxy, with and
// without a 1 ms latency fault (2 ms per round trip).
func BenchmarkProxyPing(b *testing.B) {
	l := clustertest.Start(b, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Proxy: true, Logf: func(string, ...any) {}})
	n := l.Nodes()[0]
	for _, bc := range []struct {
		name  string
		addr  string
		delay time.Duration
	}{{"direct", n.RealAddr, 0}, {"proxy", n.Addr, 0}, {"proxy-1ms", n.Addr, time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			if err := l.SetLatency(n.Addr, bc.delay, 0); err != nil {
				b.Fatal(err)
			}
			c := plainClient(b, bc.addr)
			ctx := context.Background()
			if err := c.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			began := time.Now()
			for b.Loop() {
				if err := c.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
			}
			took := time.Since(began)
			b.ReportMetric(float64(took.Microseconds())/float64(b.N), "µs/ping")
			b.ReportMetric(float64(b.N)/took.Seconds(), "pings/s")
		})
	}
}

// TestProxyReleasesClosedClientsOfPausedNode: a client that gives up on a paused node closes
// its connection and dials a new one, many times a second. The proxy must let each closed
// connection go at once, not hold it (four goroutines and two buffers) until the node resumes
// and answers: a soak's pause once doubled the generator's peak memory that way. The bytes a
// client sent before closing still reach the node: the PINGs run when it resumes.
func TestProxyReleasesClosedClientsOfPausedNode(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Proxy: true})
	n := l.Nodes()[0]
	base := cluster.ProxyLinks(l)
	if err := l.Pause(n.Addr); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = l.Resume(n.Addr)
		}
	}()
	rc := plainClient(t, n.RealAddr)
	const conns = 100
	for i := range conns {
		c, err := net.Dial("tcp", n.Addr)
		if err != nil {
			t.Fatalf("dial %d through the proxy: %v", i, err)
		}
		if _, err := c.Write([]byte("INCR proxy-closed-clients\r\n")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		_ = c.Close()
	}
	var open int
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if open = cluster.ProxyLinks(l) - base; open <= 0 {
			break
		}
	}
	if open > 0 {
		t.Errorf("%d of %d closed client connections still held by the proxy of a paused node after 3 s", open, conns)
	}
	if err := l.Resume(n.Addr); err != nil {
		t.Fatal(err)
	}
	resumed = true
	// Commands the clients wrote before closing were delivered before the link closed: the
	// node runs them when it resumes.
	var got int64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = rc.Get(t.Context(), "proxy-closed-clients").Int64(); got == conns {
			break
		}
	}
	if got != conns {
		t.Errorf("after Resume the node ran %d of the %d INCRs the closed clients sent", got, conns)
	}
}
