package limiter_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/lua"
)

// TestIsDecisionCommand: a run of each of the limiter's scripts, by SHA or body, is a decision
// command; other scripts, other commands and odd shapes are not; and it allocates nothing (not
// parallel: other goroutines' allocations would count).
func TestIsDecisionCommand(t *testing.T) {
	ctx := context.Background()
	scripts := map[string]string{
		"token bucket": lua.TokenBucket, "lease": lua.Lease, "fixed window": lua.FixedWindow, "gcra": lua.GCRA,
		"sliding window": lua.SlidingWindow, "sliding log": lua.SlidingLog, "two tier": lua.TwoTier,
	}
	for name, src := range scripts {
		sha := redis.NewScript(src).Hash()
		for _, cmd := range []*redis.Cmd{
			redis.NewCmd(ctx, "evalsha", sha, 1, "rl:{t}:ep", int64(1)),
			redis.NewCmd(ctx, "EVALSHA", sha, 1, "rl:{t}:ep"),
			redis.NewCmd(ctx, "eval", src, 1, "rl:{t}:ep", int64(1)),
		} {
			if !limiter.IsDecisionCommand(cmd) {
				t.Errorf("%s: IsDecisionCommand(%s) = false, want true", name, shortArgs(cmd))
			}
		}
	}
	other := "return 1"
	for _, cmd := range []redis.Cmder{
		redis.NewCmd(ctx, "evalsha", redis.NewScript(other).Hash(), 0),
		redis.NewCmd(ctx, "eval", other, 0),
		redis.NewCmd(ctx, "script", "load", lua.TokenBucket),
		redis.NewCmd(ctx, "evalsha", []byte(redis.NewScript(lua.TokenBucket).Hash()), 1, "k"),
		redis.NewCmd(ctx, "evalsha"),
		redis.NewCmd(ctx),
		redis.NewStatusCmd(ctx, "asking"),
		redis.NewStatusCmd(ctx, "ping"),
		redis.NewStringCmd(ctx, "get", redis.NewScript(lua.TokenBucket).Hash()),
		redis.NewSliceCmd(ctx, "cluster", "slots"),
	} {
		if limiter.IsDecisionCommand(cmd) {
			t.Errorf("IsDecisionCommand(%s) = true, want false", shortArgs(cmd))
		}
	}
	cmd := redis.NewCmd(ctx, "evalsha", redis.NewScript(lua.TwoTier).Hash(), 2, "a", "b")
	if n := testing.AllocsPerRun(100, func() { limiter.IsDecisionCommand(cmd) }); n != 0 {
		t.Errorf("IsDecisionCommand: %v allocs per call, want 0", n)
	}
}

// shortArgs prints cmd's arguments, a script body cut short.
func shortArgs(cmd redis.Cmder) string {
	s := fmt.Sprint(cmd.Args())
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// cmdRecorder is a hook on every node client: it counts the commands IsDecisionCommand
// recognises and keeps the others' names, as the engine's counters would see them.
type cmdRecorder struct {
	mu        sync.Mutex
	decisions int
	other     map[string]int // "name first-argument" of the other commands
}

func (r *cmdRecorder) record(cmd redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if limiter.IsDecisionCommand(cmd) {
		r.decisions++
		return
	}
	name := cmd.Name()
	if args := cmd.Args(); len(args) > 1 {
		name += " " + fmt.Sprint(args[1])
	}
	r.other[name]++
}

func (r *cmdRecorder) count() (int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	other := make(map[string]int, len(r.other))
	for k, v := range r.other {
		other[k] = v
	}
	return r.decisions, other
}

func (r *cmdRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *cmdRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.record(cmd)
		return err
	}
}

func (r *cmdRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			r.record(cmd)
		}
		return err
	}
}

// TestIsDecisionCommandOnTheWire counts, with a hook on each node client, the commands that
// every path of the limiter sends: plain EVALSHA (token bucket, windows, two tier), the
// coalescing transport's pipelines, lease fetches batched and not, and the NOSCRIPT retries of
// each after a SCRIPT FLUSH. Exactly the decisions' script calls are recognised; SCRIPT LOAD,
// PING, SCRIPT FLUSH and a foreign script are not. Not parallel: the flush empties the script
// cache of the node every test shares.
func TestIsDecisionCommandOnTheWire(t *testing.T) {
	l, _ := sharedCluster(t)
	rec := &cmdRecorder{other: map[string]int{}}
	c := newClusterClient(l.Addrs())
	c.OnNewNode(func(n *redis.Client) { n.AddHook(rec) })
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	tenant := uniqueTenant(t)
	p := limiter.BucketPolicy{Rate: 1e6, Burst: 1e6}
	req := func(ep string) limiter.Request {
		return limiter.Request{Tenant: tenant, Endpoint: ep, Cost: 1, Now: time.UnixMilli(t0)}
	}
	plain, err := limiter.NewRedisTokenBucket(c, p, limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	coalescing := newCoalescing(t, c, p)
	batched := newLease(t, c, p, 10)
	unbatched := newLease(t, c, p, 10, limiter.WithLeaseBatching(false))
	for _, lim := range []interface{ Load(context.Context) error }{plain, coalescing, batched} {
		if err := lim.Load(ctx); err != nil {
			t.Fatalf("Load: %v", err)
		}
	}
	windows := windowLimiters(t, c)

	decided := 0
	step := func(name string, want int, run func()) {
		t.Helper()
		run()
		if have, other := rec.count(); have-decided != want {
			t.Fatalf("%s: %d decision commands, want %d (other commands so far: %v)", name, have-decided, want, other)
		}
		decided += want
	}
	allow := func(lim limiter.Limiter, r limiter.Request) {
		t.Helper()
		if d, err := lim.Allow(ctx, r); err != nil || !d.Allowed {
			t.Fatalf("%T: %+v, %v", lim, d, err)
		}
	}
	concurrently := func(n int, f func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { f(i) })
		}
		wg.Wait()
	}
	step("plain token bucket", 5, func() {
		for i := range 5 {
			allow(plain, req("plain-"+strconv.Itoa(i)))
		}
	})
	step("coalescing token bucket", 16, func() {
		concurrently(16, func(i int) { allow(coalescing, req("coalesce-"+strconv.Itoa(i))) })
	})
	step("batched lease fetches", 8, func() {
		concurrently(8, func(i int) { allow(batched, req("lease-"+strconv.Itoa(i))) })
		allow(batched, req("lease-0")) // paid by the lease: no command
	})
	step("plain lease fetches", 3, func() {
		for i := range 3 {
			allow(unbatched, req("plain-lease-"+strconv.Itoa(i)))
		}
	})
	step("window scripts and two tier", len(windows), func() {
		for _, lim := range windows {
			allow(lim, req("window"))
		}
	})
	flush := func() {
		t.Helper()
		if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() }); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
	}
	step("a foreign script and other commands", 0, func() {
		if err := c.Eval(ctx, "return 1", nil).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.EvalSha(ctx, redis.NewScript("return 1").Hash(), nil).Err(); err != nil {
			t.Fatal(err)
		}
		flush()
	})
	// After a flush a decision meets NOSCRIPT (a decision command) and runs EVAL (another), which
	// caches the script again: the next decision of the same script sends one EVALSHA.
	for _, tt := range []struct {
		name string
		lim  limiter.Limiter
	}{{"plain token bucket", plain}, {"coalescing token bucket", coalescing}, {"plain lease", unbatched}, {"batched lease", batched}} {
		step(tt.name+" after SCRIPT FLUSH", 2+1, func() {
			flush()
			allow(tt.lim, req(tt.name+" noscript"))
			allow(tt.lim, req(tt.name+" cached again"))
		})
	}
	if plain.NoScriptFallbacks() != 1 || coalescing.NoScriptFallbacks() != 1 || unbatched.NoScriptFallbacks() != 1 || batched.NoScriptFallbacks() != 1 {
		t.Fatalf("NOSCRIPT fallbacks: plain %d, coalescing %d, leases %d and %d; want 1 each",
			plain.NoScriptFallbacks(), coalescing.NoScriptFallbacks(), unbatched.NoScriptFallbacks(), batched.NoScriptFallbacks())
	}
	_, other := rec.count()
	for _, name := range []string{"ping", "script load", "eval return 1", "evalsha " + redis.NewScript("return 1").Hash(), "script flush"} {
		if other[name] == 0 {
			t.Errorf("no %q among the other commands %v: the hook did not see it, or took it for a decision", name, other)
		}
	}
}

// windowLimiters builds one Redis limiter of each window algorithm and a two-tier one on c, with
// their scripts loaded.
func windowLimiters(t *testing.T, c *redis.ClusterClient) []limiter.Limiter {
	t.Helper()
	opt := limiter.WithTimeout(5 * time.Second)
	var out []limiter.Limiter
	add := func(l limiter.Limiter, err error) {
		if err == nil {
			err = l.(interface{ Load(context.Context) error }).Load(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	add(limiter.NewRedisFixedWindow(c, limiter.FixedWindowPolicy{Window: time.Second, Limit: 100}, opt))
	add(limiter.NewRedisGCRA(c, limiter.GCRAPolicy{Rate: 100, Burst: 100}, opt))
	add(limiter.NewRedisSlidingWindow(c, limiter.SlidingWindowPolicy{Window: time.Second, Limit: 100}, opt))
	add(limiter.NewRedisSlidingLog(c, limiter.SlidingLogPolicy{Window: time.Second, Limit: 100}, opt))
	add(limiter.NewRedisTwoTier(c, limiter.TwoTierPolicy{Bucket: limiter.BucketPolicy{Rate: 100, Burst: 100}, Quota: 1000, QuotaWindow: time.Hour}, opt))
	return out
}

// BenchmarkIsDecisionCommand measures the check a per-node hook makes on every command: a
// decision's EVALSHA (the last of the scripts' SHAs compared) and a command that is not one.
func BenchmarkIsDecisionCommand(b *testing.B) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		cmd  redis.Cmder
	}{
		{"evalsha", redis.NewCmd(ctx, "evalsha", redis.NewScript(lua.TwoTier).Hash(), 2, "a", "b")},
		{"ping", redis.NewStatusCmd(ctx, "ping")},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				limiter.IsDecisionCommand(tt.cmd)
			}
		})
	}
}
