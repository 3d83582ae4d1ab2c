package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/limiter"
)

// waitTimeout is the WAIT timeout of these tests: long enough that a healthy replica always
// acknowledges within it on a loaded machine, short enough to wait for a paused one.
const waitTimeout = 200 * time.Millisecond

// replicated is a 1-primary, 1-replica cluster for the durability tests, with an admin client
// on its primary and the address of its replica.
type replicated struct {
	l       *cluster.Local
	c       *redis.ClusterClient
	admin   *redis.Client
	replica string
}

// startReplicated starts the cluster. A long node timeout keeps a replica paused for a moment
// from being reported failing.
func startReplicated(t testing.TB) replicated {
	t.Helper()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: 1, NodeTimeout: 10 * time.Second})
	r := replicated{l: l, c: newClusterClient(l.Addrs())}
	t.Cleanup(func() { _ = r.c.Close() })
	for _, n := range l.Nodes() {
		switch n.Role {
		case cluster.RolePrimary:
			r.admin = redis.NewClient(&redis.Options{Addr: n.Addr})
			t.Cleanup(func() { _ = r.admin.Close() })
		case cluster.RoleReplica:
			r.replica = n.Addr
		}
	}
	if r.admin == nil || r.replica == "" {
		t.Fatalf("cluster nodes %+v: want one primary and one replica", l.Nodes())
	}
	return r
}

// waits returns how many WAIT commands the primary has run (INFO commandstats).
func (r replicated) waits(t testing.TB) int64 {
	t.Helper()
	info, err := r.admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		return n
	}
	return 0 // no WAIT yet: Redis lists only the commands it ran
}

// pause stops the replica until the test (or the caller) resumes it.
func (r replicated) pause(t *testing.T) (resume func()) {
	t.Helper()
	if err := r.l.Pause(r.replica); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := r.l.Resume(r.replica); err != nil {
				t.Errorf("resume the replica: %v", err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

func waitOpt(mode limiter.DurabilityMode) limiter.Option {
	return limiter.WithDurability(limiter.Durability{Mode: mode, Replicas: 1, Timeout: waitTimeout})
}

// TestDurabilityWait runs the wait modes on a real primary with one replica: decisions succeed
// while the replica acknowledges, each paying one WAIT (wait) or each pipeline paying one
// (wait-pipeline); a paused replica makes them unreplicated errors after about the WAIT timeout,
// with the debit made on the primary; NOSCRIPT still falls back to EVAL and its own WAIT; a
// primary whose min-replicas-to-write its replicas cannot meet refuses the script with
// NOREPLICAS, the same kind. Subtests run in order: a pause stops the one replica they share.
func TestDurabilityWait(t *testing.T) {
	r := startReplicated(t)
	ctx := context.Background()
	t.Run("plain bucket: one WAIT per decision", func(t *testing.T) {
		b := newDurableBucket(t, r.c, waitOpt(limiter.DurabilityWait))
		twin, _ := limiter.NewTokenBucket(suitePolicy)
		tenant := uniqueTenant(t)
		before := r.waits(t)
		for i, cost := range []int64{3, 4, 5, 2} {
			req := limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: cost, Now: time.UnixMilli(t0)}
			have, err := b.Allow(ctx, req)
			want, _ := twin.Allow(ctx, req)
			want.Source = limiter.Central
			if err != nil || have != want {
				t.Fatalf("decision %d: have %+v, %v; want %+v", i, have, err, want)
			}
		}
		if n := r.waits(t) - before; n != 4 {
			t.Fatalf("primary ran %d WAITs for 4 decisions, want 4", n)
		}
	})
	t.Run("plain bucket: paused replica", func(t *testing.T) {
		b := newDurableBucket(t, r.c, waitOpt(limiter.DurabilityWait))
		twin, _ := limiter.NewTokenBucket(suitePolicy)
		req := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 4, Now: time.UnixMilli(t0)}
		resume := r.pause(t)
		start := time.Now()
		_, err := b.Allow(ctx, req)
		checkUnreplicated(t, err, time.Since(start))
		// A denial whose WAIT falls short debited nothing: it stays the script's denial,
		// marked unreplicated. 10 - 4 - 4 leaves 2 < 4.
		_, _ = twin.Allow(ctx, req)
		_, _ = twin.Allow(ctx, req)
		_, _ = b.Allow(ctx, req)
		start = time.Now()
		denied, err := b.Allow(ctx, req)
		took := time.Since(start)
		resume()
		want, _ := twin.Allow(ctx, req)
		want.Source, want.Unreplicated = limiter.Central, true
		if want.Allowed || err != nil || denied != want || took < waitTimeout {
			t.Fatalf("denial with the replica paused: %+v, %v after %v; want %+v, nil after the WAIT timeout", denied, err, took, want)
		}
		// The debits were made on the primary: the next decision sees them, as the twin does.
		have, err := b.Allow(ctx, req)
		want, _ = twin.Allow(ctx, req)
		want.Source = limiter.Central
		if err != nil || have != want {
			t.Fatalf("decision after the unreplicated ones: have %+v, %v; want %+v (their debits counted)", have, err, want)
		}
	})
	t.Run("plain bucket: NOSCRIPT falls back with its own WAIT", func(t *testing.T) {
		b := newDurableBucket(t, r.c, waitOpt(limiter.DurabilityWait))
		if err := r.admin.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		before := r.waits(t)
		d, err := b.Allow(ctx, limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 4, Now: time.UnixMilli(t0)})
		if err != nil || !d.Allowed || d.Remaining != 6 {
			t.Fatalf("decision after SCRIPT FLUSH = %+v, %v; want allowed, 6 remaining", d, err)
		}
		if n, w := b.NoScriptFallbacks(), r.waits(t)-before; n != 1 || w != 2 {
			t.Fatalf("NoScriptFallbacks = %d, WAITs = %d; want 1 and 2 (after EVALSHA and after EVAL)", n, w)
		}
	})
	t.Run("coalescing: WAIT per decision or per pipeline", func(t *testing.T) {
		for _, mode := range []limiter.DurabilityMode{limiter.DurabilityWait, limiter.DurabilityWaitPipeline} {
			b := newDurableCoalescing(t, r.c, mode)
			before := r.waits(t)
			const n = 48
			for a := range concurrentDecisions(b, uniqueTenant(t), n) {
				if a.err != nil || a.d.Unreplicated {
					t.Fatalf("%s: %+v, %v; want the script's answer, replicated", mode, a.d, a.err)
				}
			}
			waits, batches := r.waits(t)-before, b.Batches()
			switch mode {
			case limiter.DurabilityWait:
				if waits != n {
					t.Errorf("%s: %d WAITs for %d decisions in %d pipelines, want %d", mode, waits, n, batches, n)
				}
			case limiter.DurabilityWaitPipeline:
				if waits != batches || waits >= n {
					t.Errorf("%s: %d WAITs for %d decisions in %d pipelines, want one per pipeline, fewer than decisions", mode, waits, n, batches)
				}
			}
		}
	})
	t.Run("coalescing: paused replica", func(t *testing.T) {
		for _, mode := range []limiter.DurabilityMode{limiter.DurabilityWait, limiter.DurabilityWaitPipeline} {
			b := newDurableCoalescing(t, r.c, mode)
			resume := r.pause(t)
			start := time.Now()
			var answers []answer
			for a := range concurrentDecisions(b, uniqueTenant(t), 4) {
				answers = append(answers, a)
			}
			took := time.Since(start)
			resume()
			// Cost 4 on a burst of 10: two allowed, whose debits are not known replicated
			// (errors), and two denials, which debited nothing and stand.
			unrepl, denied := 0, 0
			for _, a := range answers {
				switch {
				case a.err != nil && limiter.ClassifyError(a.err) == limiter.KindUnreplicated && errors.Is(a.err, limiter.ErrUnreplicated):
					unrepl++
				case a.err == nil && !a.d.Allowed && a.d.Unreplicated:
					denied++
				default:
					t.Fatalf("%s: decision with the replica paused = %+v, %v; want an unreplicated error or a denial marked unreplicated", mode, a.d, a.err)
				}
			}
			if unrepl != 2 || denied != 2 {
				t.Fatalf("%s: %d unreplicated errors, %d denials of 4 requests of cost 4 on a burst of 10; want 2 and 2", mode, unrepl, denied)
			}
			if mode == limiter.DurabilityWaitPipeline && (took < waitTimeout || took > waitTimeout+2*time.Second) {
				t.Fatalf("%s: unreplicated decisions took %v, want about the WAIT timeout %v", mode, took, waitTimeout) // one WAIT: all return together
			}
		}
	})
	t.Run("NOREPLICAS", func(t *testing.T) {
		testNoReplicas(t, r)
	})
}

// testNoReplicas asks the primary for 2 replicas to write (it has 1): the script is refused and
// both buckets, async, return the unreplicated kind, with nothing debited.
func testNoReplicas(t *testing.T, r replicated) {
	ctx := context.Background()
	if err := r.admin.ConfigSet(ctx, "min-replicas-to-write", "2").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.admin.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
			t.Errorf("reset min-replicas-to-write: %v", err)
		}
	})
	plain := newDurableBucket(t, r.c)
	coalescing := newDurableCoalescing(t, r.c, limiter.DurabilityAsync)
	for _, b := range []limiter.Limiter{plain, coalescing} {
		tenant := uniqueTenant(t)
		_, err := b.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
		if k := limiter.ClassifyError(err); err == nil || k != limiter.KindUnreplicated {
			t.Fatalf("%T with min-replicas-to-write 2 of 1: err %v (%v), want NOREPLICAS, unreplicated", b, err, k)
		}
		if n, err := r.c.Exists(ctx, limiter.KeyFor(tenant, "ep")).Result(); err != nil || n != 0 {
			t.Fatalf("%T: bucket key exists = %d, %v after a refused script; want 0", b, n, err)
		}
	}
}

// checkUnreplicated checks that err is an allowed decision's unreplicated error that took about
// the WAIT timeout.
func checkUnreplicated(t *testing.T, err error, took time.Duration) {
	t.Helper()
	if !errors.Is(err, limiter.ErrUnreplicated) || limiter.ClassifyError(err) != limiter.KindUnreplicated || !limiter.MayHaveDebited(err) {
		t.Fatalf("allowed decision with the replica paused: err %v (%v), want ErrUnreplicated, may have debited", err, limiter.ClassifyError(err))
	}
	if took < waitTimeout || took > waitTimeout+2*time.Second {
		t.Fatalf("unreplicated decision took %v, want about the WAIT timeout %v", took, waitTimeout)
	}
}

// answer is one decision and its error.
type answer struct {
	d   limiter.Decision
	err error
}

// concurrentDecisions runs n decisions of cost 4 on one key at the same instant and returns
// their answers.
func concurrentDecisions(b limiter.Limiter, tenant string, n int) chan answer {
	out := make(chan answer, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := b.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 4, Now: time.UnixMilli(t0)})
			out <- answer{d, err}
		}()
	}
	wg.Wait()
	close(out)
	return out
}

func newDurableBucket(t *testing.T, c *redis.ClusterClient, opts ...limiter.Option) *limiter.RedisTokenBucket {
	t.Helper()
	b, err := limiter.NewRedisTokenBucket(c, suitePolicy, append([]limiter.Option{limiter.WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// newDurableCoalescing batches for up to 5 ms, so concurrent callers share pipelines.
func newDurableCoalescing(t *testing.T, c *redis.ClusterClient, mode limiter.DurabilityMode) *limiter.CoalescingBucket {
	t.Helper()
	b := newCoalescing(t, c, suitePolicy, limiter.WithBatchWindow(5*time.Millisecond), limiter.WithBucketOptions(waitOpt(mode)))
	if err := b.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDurabilityOptions: every bad durability setting is refused with ErrBadConfig; the twin
// ignores the option.
func TestDurabilityOptions(t *testing.T) {
	t.Parallel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	for _, tc := range []struct {
		name string
		c    redis.Scripter
		d    limiter.Durability
	}{
		{"wait-pipeline without pipelines", c, limiter.Durability{Mode: limiter.DurabilityWaitPipeline}},
		{"unknown mode", c, limiter.Durability{Mode: "sync"}},
		{"negative replicas", c, limiter.Durability{Mode: limiter.DurabilityWait, Replicas: -1}},
		{"negative timeout", c, limiter.Durability{Mode: limiter.DurabilityWait, Timeout: -time.Millisecond}},
		{"client without primaries", ring, limiter.Durability{Mode: limiter.DurabilityWait}},
	} {
		if _, err := limiter.NewRedisTokenBucket(tc.c, suitePolicy, limiter.WithDurability(tc.d)); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("%s: err = %v, want ErrBadConfig", tc.name, err)
		}
	}
	for _, d := range []limiter.Durability{{}, {Mode: limiter.DurabilityAsync}, {Mode: limiter.DurabilityWait}} {
		if _, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithDurability(d)); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
	if _, err := limiter.NewCoalescingBucket(c, suitePolicy, limiter.WithBucketOptions(waitOpt(limiter.DurabilityWaitPipeline))); err != nil {
		t.Errorf("coalescing wait-pipeline: %v", err)
	}
	if _, err := limiter.NewCoalescingBucket(ring, suitePolicy, limiter.WithBucketOptions(waitOpt(limiter.DurabilityWait))); !errors.Is(err, limiter.ErrBadConfig) {
		t.Errorf("coalescing over a ring: err = %v, want ErrBadConfig", err)
	}
	if _, err := limiter.NewTokenBucket(suitePolicy, waitOpt(limiter.DurabilityWaitPipeline), limiter.WithAudit("")); err != nil {
		t.Errorf("the twin refused options it ignores: %v", err)
	}
}

// BenchmarkDurability compares async decisions with wait's on a primary with one replica: what
// a WAIT after each decision costs, plain and coalesced (wait-pipeline: one per pipeline).
func BenchmarkDurability(b *testing.B) {
	r := startReplicated(b)
	policy := limiter.BucketPolicy{Rate: 1e6, Burst: 1e6}
	for _, mode := range []limiter.DurabilityMode{limiter.DurabilityAsync, limiter.DurabilityWait} {
		b.Run("plain/"+string(mode), func(b *testing.B) {
			lim, err := limiter.NewRedisTokenBucket(r.c, policy, limiter.WithTimeout(time.Second), waitOpt(mode))
			if err != nil {
				b.Fatal(err)
			}
			benchCentral(b, lim, 4)
		})
	}
	for _, mode := range []limiter.DurabilityMode{limiter.DurabilityAsync, limiter.DurabilityWait, limiter.DurabilityWaitPipeline} {
		b.Run("coalescing/"+string(mode), func(b *testing.B) {
			lim := newCoalescing(b, r.c, policy, limiter.WithBucketOptions(limiter.WithTimeout(time.Second), waitOpt(mode)))
			benchCentral(b, lim, 4)
		})
	}
}

// TestDurabilityWaitAfterMoved moves a key's slot to the other primary behind the client's back:
// the wait mode's node pipeline does not follow the MOVED, so that decision fails with it (kind
// moved, its script never ran), and the client, told to re-read its slot map, sends the next
// decisions to the new owner, with their WAIT.
func TestDurabilityWaitAfterMoved(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 2, Replicas: 1, NodeTimeout: 10 * time.Second})
	c := newClusterClient(l.Addrs())
	defer c.Close()
	ctx := context.Background()
	b := newDurableBucket(t, c, waitOpt(limiter.DurabilityWait))
	req := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
	if _, err := b.Allow(ctx, req); err != nil {
		t.Fatal(err)
	}
	key := limiter.KeyFor(req.Tenant, req.Endpoint)
	owner, err := c.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	from := owner.Options().Addr
	var to string
	for _, p := range l.Primaries() {
		if p.Addr != from {
			to = p.Addr
		}
	}
	slot := cluster.KeySlot(key)
	if _, err := l.MigrateSlots(ctx, 0, from, to, cluster.WithSlotRange(cluster.SlotRange{Start: slot, End: slot})); err != nil {
		t.Fatal(err)
	}
	_, err = b.Allow(ctx, req)
	if k := limiter.ClassifyError(err); k != limiter.KindMoved {
		t.Fatalf("first decision after the move: err %v (%v), want MOVED", err, k)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := b.Allow(ctx, req)
		if err == nil {
			if d.Remaining != suitePolicy.Burst-2 {
				t.Fatalf("decision at the new owner: %+v, want %d remaining (the moved key's state)", d, suitePolicy.Burst-2)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("decisions still fail 5 s after the move: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := c.MasterForKey(ctx, key); err != nil || n.Options().Addr != to {
		t.Fatalf("client's owner of the key after the move: %v, %v; want %s", n, err, to)
	}
}
