package limiter_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/limiter"
	"ratelab/lua"
)

// newCoalescing builds a CoalescingBucket closed when the test ends. Decisions get a 5 s
// deadline unless opts say otherwise: these tests check decisions and batching, and a loaded
// 2-core machine under -race can miss DefaultTimeout.
func newCoalescing(t testing.TB, c limiter.PipelineScripter, p limiter.BucketPolicy, opts ...limiter.CoalesceOption) *limiter.CoalescingBucket {
	t.Helper()
	opts = append([]limiter.CoalesceOption{limiter.WithBucketOptions(limiter.WithTimeout(5 * time.Second))}, opts...)
	b, err := limiter.NewCoalescingBucket(c, p, opts...)
	if err != nil {
		t.Fatalf("NewCoalescingBucket(%+v): %v", p, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newCoalescingSubject(t *testing.T, p limiter.BucketPolicy, opts ...limiter.Option) subject {
	s := newRedisSubject(t, p) // the probes of stored state; its limiter is replaced
	_, c := sharedCluster(t)
	s.lim = newCoalescing(t, c, p, limiter.WithBucketOptions(opts...))
	return s
}

// TestSuiteCoalescing runs the shared token-bucket suite (hand-computed decisions, the twin's
// arithmetic) over the coalescing transport: one decision at a time, each its own batch.
func TestSuiteCoalescing(t *testing.T) {
	t.Parallel()
	runSuite(t, newCoalescingSubject)
}

// TestCoalescingOptions: every bad setting is refused with ErrBadConfig.
func TestCoalescingOptions(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	for _, tc := range []struct {
		name string
		c    limiter.PipelineScripter
		p    limiter.BucketPolicy
		opt  limiter.CoalesceOption
	}{
		{"nil client", nil, suitePolicy, limiter.WithBatchSize(1)},
		{"bad policy", c, limiter.BucketPolicy{Rate: 0, Burst: 1}, limiter.WithBatchSize(1)},
		{"batch size 0", c, suitePolicy, limiter.WithBatchSize(0)},
		{"negative window", c, suitePolicy, limiter.WithBatchWindow(-time.Millisecond)},
		{"negative linger", c, suitePolicy, limiter.WithBatchLinger(-time.Millisecond)},
		{"no flushers", c, suitePolicy, limiter.WithFlushers(0)},
		{"negative timeout", c, suitePolicy, limiter.WithBucketOptions(limiter.WithTimeout(-time.Second))},
	} {
		if _, err := limiter.NewCoalescingBucket(tc.c, tc.p, tc.opt); !errors.Is(err, limiter.ErrBadConfig) {
			t.Errorf("%s: err = %v, want ErrBadConfig", tc.name, err)
		}
	}
}

// TestCoalescingOneKeyConcurrent sends 40 decisions on one key at the same instant, batched
// together: exactly the burst (10) is allowed, as RedisTokenBucket and the twin allow, and the
// 40 decisions took far fewer than 40 pipelines.
func TestCoalescingOneKeyConcurrent(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	// The window is long so that the callers, started together, land in one or a few batches;
	// a full batch (40) flushes at once.
	b := newCoalescing(t, c, suitePolicy, limiter.WithBatchSize(40), limiter.WithBatchWindow(2*time.Second))
	if err := b.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	tenant := uniqueTenant(t)
	const n = 40
	var (
		wg      sync.WaitGroup
		allowed atomic.Int64
		remain  [n]int64
		errs    = make(chan error, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := b.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
			if err != nil {
				errs <- err
				return
			}
			if d.Source != limiter.Central {
				errs <- errors.New("source " + d.Source.String() + ", want central")
			}
			if d.Allowed {
				allowed.Add(1)
				remain[i] = d.Remaining
			} else {
				remain[i] = -1
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("decision failed: %v", err)
	}
	if a := allowed.Load(); a != suitePolicy.Burst {
		t.Fatalf("allowed %d of %d simultaneous decisions, want the burst %d", a, n, suitePolicy.Burst)
	}
	// The allowed ones took the tokens one by one: remainders 9..0, each once.
	seen := map[int64]bool{}
	for _, r := range remain {
		if r >= 0 {
			seen[r] = true
		}
	}
	if len(seen) != int(suitePolicy.Burst) {
		t.Fatalf("remainders of the allowed decisions %v: want each of 0..9 once", remain)
	}
	if bt := b.Batches(); bt > n/4 || b.Sent() != n+b.NoScriptFallbacks() {
		t.Fatalf("%d decisions in %d pipelines (%d sent): want at most %d pipelines and %d sent", n, bt, b.Sent(), n/4, n)
	}
}

// pipelineCounter counts the script pipelines and commands one node's client executes (a new
// connection's HELLO / CLIENT SETINFO handshake is a pipeline too: not counted).
type pipelineCounter struct {
	pipelines, cmds atomic.Int64
}

func (h *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && (cmds[0].Name() == "evalsha" || cmds[0].Name() == "eval") {
			h.pipelines.Add(1)
			h.cmds.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// TestCoalescingBatchesPerNode drives 96 concurrent callers over keys on three primaries and
// counts, with hooks on the per-node clients, what reached each node: every batch went to one
// node (node pipelines == Batches), every decision was sent once, and batching happened
// (several decisions per pipeline on average). Decisions on fresh keys are all allowed.
func TestCoalescingBatchesPerNode(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 3, Replicas: cluster.NoReplicas})
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: l.Addrs(), MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true, PoolSize: 16,
	})
	defer c.Close()
	var (
		mu    sync.Mutex
		hooks = map[string]*pipelineCounter{}
	)
	c.OnNewNode(func(n *redis.Client) {
		h := &pipelineCounter{}
		mu.Lock()
		hooks[n.Options().Addr] = h
		mu.Unlock()
		n.AddHook(h)
	})
	ctx := context.Background()
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	b := newCoalescing(t, c, limiter.BucketPolicy{Rate: 1000, Burst: 1000},
		limiter.WithBatchSize(32), limiter.WithBatchWindow(20*time.Millisecond))
	if err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// Set-up (SCRIPT LOAD, slot map) may pipeline too: count from here.
	var beforePipes, beforeCmds int64
	mu.Lock()
	for _, h := range hooks {
		beforePipes += h.pipelines.Load()
		beforeCmds += h.cmds.Load()
	}
	mu.Unlock()

	const callers, each = 96, 10
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range each {
				d, err := b.Allow(ctx, limiter.Request{Tenant: "node-test-" + strconv.Itoa(i*each+j), Endpoint: "ep", Cost: 1})
				if err != nil || !d.Allowed {
					if failed.Add(1) == 1 {
						t.Errorf("decision on a fresh key = %+v, %v; want allowed", d, err)
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	const decisions = callers * each
	var pipes, cmds int64
	mu.Lock()
	nodes := 0
	for addr, h := range hooks {
		if h.cmds.Load() > 0 {
			nodes++
		}
		t.Logf("node %s: %d pipelines, %d commands", addr, h.pipelines.Load(), h.cmds.Load())
		pipes += h.pipelines.Load()
		cmds += h.cmds.Load()
	}
	mu.Unlock()
	pipes -= beforePipes
	cmds -= beforeCmds
	if failed.Load() > 0 {
		t.Fatalf("%d of %d decisions failed or were denied", failed.Load(), decisions)
	}
	if b.Sent() != decisions || cmds != decisions {
		t.Fatalf("sent %d, nodes executed %d pipelined commands; want %d each", b.Sent(), cmds, decisions)
	}
	if pipes != b.Batches() {
		t.Fatalf("nodes executed %d pipelines for %d batches: a batch was split over nodes", pipes, b.Batches())
	}
	if nodes != 3 {
		t.Fatalf("%d nodes got decisions, want all 3", nodes)
	}
	if avg := float64(decisions) / float64(b.Batches()); avg < 2 {
		t.Fatalf("%d decisions in %d pipelines (%.1f per pipeline): no batching", decisions, b.Batches(), avg)
	}
	t.Logf("%d decisions in %d pipelines (%.1f per pipeline)", decisions, b.Batches(), float64(decisions)/float64(b.Batches()))
}

// TestCoalescingLingerOnlyUnderLoad: a linger of a minute (with a batch size no test fills)
// never delays a call on a node with no other pipeline going: an idle limiter gains no latency.
// (What it buys under load is measured by `ratelab bench`, see DefaultBatchLinger.)
func TestCoalescingLingerOnlyUnderLoad(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	b, err := limiter.NewCoalescingBucket(c, suitePolicy, limiter.WithBatchSize(1000), limiter.WithBatchLinger(time.Minute),
		limiter.WithBucketOptions(limiter.WithTimeout(5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		start := time.Now()
		if _, err := b.Allow(context.Background(), limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1}); err != nil {
			t.Fatalf("call %d alone on its node with a 1-minute linger: %v; want an answer", i, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("call %d took %v: the linger delayed a lone call", i, took)
		}
	}
}

// TestCoalescingDeadline: a call whose batch waits longer than its deadline returns at its own
// deadline with a timeout error, and is never sent.
func TestCoalescingDeadline(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	b, err := limiter.NewCoalescingBucket(c, suitePolicy, limiter.WithBatchSize(1000), limiter.WithBatchWindow(time.Minute),
		limiter.WithBucketOptions(limiter.WithTimeout(100*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := b.Allow(context.Background(), limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1})
	took := time.Since(start)
	if err == nil || limiter.ClassifyError(err) != limiter.KindTimeout {
		t.Fatalf("Allow behind a 1-minute window = %+v, %v; want a timeout error", d, err)
	}
	if took > 5*time.Second {
		t.Fatalf("Allow took %v: the 100 ms deadline did not apply", took)
	}
	// A caller's own shorter deadline applies too.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := b.Allow(ctx, limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1}); limiter.ClassifyError(err) != limiter.KindTimeout {
		t.Fatalf("Allow with a 10 ms caller deadline: %v; want a timeout", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.Sent() != 0 || b.Batches() != 0 {
		t.Fatalf("Sent %d in %d batches after the callers gave up; want nothing sent", b.Sent(), b.Batches())
	}
	if _, err := b.Allow(context.Background(), limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1}); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("Allow after Close: %v; want redis.ErrClosed", err)
	}
}

// TestCoalescingNoScript flushes the script cache and sends a batch: every decision is still
// right (its EVALSHA met NOSCRIPT and was sent again as EVAL), each fallback is counted and
// reported, and the script is cached again. Not parallel: another test's EVAL would re-cache it.
func TestCoalescingNoScript(t *testing.T) {
	_, c := sharedCluster(t)
	ctx := context.Background()
	var hook atomic.Int64
	b := newCoalescing(t, c, suitePolicy, limiter.WithBatchSize(8), limiter.WithBatchWindow(time.Second),
		limiter.WithBucketOptions(limiter.WithOnNoScript(func() { hook.Add(1) })))
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() }); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	twin, err := limiter.NewTokenBucket(suitePolicy)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 4, Now: time.UnixMilli(t0)}
			have, err := b.Allow(ctx, r)
			want, _ := twin.Allow(ctx, r)
			want.Source = limiter.Central
			if err != nil || have != want {
				errs <- errors.New("after SCRIPT FLUSH: have " + strconv.FormatBool(have.Allowed) + " remaining " +
					strconv.FormatInt(have.Remaining, 10) + ", err " + errString(err))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := b.NoScriptFallbacks()
	if n < 1 || n > 8 || hook.Load() != n {
		t.Fatalf("NoScriptFallbacks = %d, WithOnNoScript calls = %d; want 1..8, equal", n, hook.Load())
	}
	sha := redis.NewScript(lua.TokenBucket).Hash()
	if exists, err := c.ScriptExists(ctx, sha).Result(); err != nil || !exists[0] {
		t.Fatalf("SCRIPT EXISTS after the fallback = %v, %v; want true (EVAL caches the script)", exists, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// BenchmarkCoalescingBucket measures central decisions per second through the coalescing
// transport on the single-primary cluster, with the same callers as BenchmarkRedisTokenBucket.
func BenchmarkCoalescingBucket(b *testing.B) {
	_, c := sharedCluster(b)
	for _, par := range []int{16, 64} {
		b.Run("parallelism="+strconv.Itoa(par), func(b *testing.B) {
			lim := newCoalescing(b, c, limiter.BucketPolicy{Rate: 1e6, Burst: 1e6}, limiter.WithBucketOptions(limiter.WithTimeout(time.Second)))
			benchCentral(b, lim, par)
			b.ReportMetric(float64(lim.Sent())/float64(max(lim.Batches(), 1)), "decisions/pipeline")
		})
	}
}
