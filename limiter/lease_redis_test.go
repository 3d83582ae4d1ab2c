package limiter_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/lua"
)

// newLease builds a lease limiter with a 5 s fetch deadline: these tests check decisions, not
// timeouts, and a loaded 2-core machine under -race can take longer than DefaultTimeout.
func newLease(t testing.TB, c redis.Scripter, p limiter.BucketPolicy, size int64, opts ...limiter.LeaseOption) *limiter.LeaseLimiter {
	t.Helper()
	opts = append([]limiter.LeaseOption{limiter.WithLeaseTimeout(5 * time.Second)}, opts...)
	l, err := limiter.NewLeaseLimiter(c, p, size, opts...)
	if err != nil {
		t.Fatalf("NewLeaseLimiter(%+v, %d): %v", p, size, err)
	}
	return l
}

// TestLeaseScript runs lease.lua directly: grant = min(want, floor(tokens)) when >= min, with the
// refill, clamp and rounding of token_bucket.lua (suitePolicy: 0.5 token/ms, burst 10).
func TestLeaseScript(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	ctx := context.Background()
	key := limiter.KeyFor(uniqueTenant(t), "ep")
	for i, st := range []struct {
		at, want, least int64
		reply           [4]int64 // granted, remaining, retry_after_ms, reset_after_ms
		tokens          float64  // stored after the call
	}{
		{0, 4, 1, [4]int64{4, 6, 0, 8}, 6},
		{0, 10, 1, [4]int64{6, 0, 0, 20}, 0},     // partial grant: all there is
		{1, 4, 1, [4]int64{0, 0, 1, 19}, 0.5},    // half a token: nothing to lease
		{3, 4, 2, [4]int64{0, 1, 1, 17}, 1.5},    // 1 whole token < min 2
		{5, 4, 2, [4]int64{2, 0, 0, 19}, 0.5},    // 2.5 tokens: 2 leased, the fraction stays
		{5, 11, 11, [4]int64{0, 0, -1, 19}, 0.5}, // min above the burst: never
		{1000, 20, 1, [4]int64{10, 0, 0, 20}, 0}, // refilled to the burst only
		{-5, 1, 1, [4]int64{0, 0, 2, 20}, 0},     // clock behind the stored time refills nothing
		{1002, 3, 1, [4]int64{1, 0, 0, 20}, 0},   // 2 ms after the stored time: 1 token
		{1010, 3, 3, [4]int64{3, 1, 0, 18}, 1},   // 4 tokens
	} {
		args := []any{t0 + st.at, "0.5", "10", st.want, st.least, "1000"}
		v, err := c.Eval(ctx, lua.Lease, []string{key}, args...).Result()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		arr, _ := v.([]any)
		var have [4]int64
		for j := range min(len(arr), 4) {
			have[j], _ = arr[j].(int64)
		}
		if len(arr) != 4 || have != st.reply {
			t.Fatalf("step %d (t0%+d ms, want %d, min %d): reply %v, want %v", i, st.at, st.want, st.least, v, st.reply)
		}
		if s, ok := redisState(t, c, key); !ok || s.Tokens != st.tokens {
			t.Fatalf("step %d: stored %+v (exists %v), want tokens %v", i, s, ok, st.tokens)
		}
		if d, err := c.PTTL(ctx, key).Result(); err != nil || d <= 0 || d > time.Second {
			t.Fatalf("step %d: PTTL %v, %v; want in (0, 1s]", i, d, err)
		}
	}
	if err := c.Eval(ctx, lua.Lease, []string{key}, t0, "0.5", "10", 1, 2, "1000").Err(); err == nil {
		t.Fatalf("want < min: no error; want the script's ERR reply")
	}
}

// TestLeaseCentralCalls: at one instant, with a burst large enough for all, n decisions of cost 1
// cost ceil(n/size) script calls and all pass.
func TestLeaseCentralCalls(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 1000, Burst: 1000}
	for _, tt := range []struct {
		size, n   int64
		wantCalls int64
	}{
		{10, 1000, 100},
		{1, 50, 50},
		{100, 1000, 10},
		{7, 1000, 143}, // the last fetch gets the 6 tokens left
	} {
		l := newLease(t, c, p, tt.size)
		tenant := uniqueTenant(t)
		var allowed, central int64
		for range tt.n {
			d, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
			if err != nil {
				t.Fatalf("size %d: %v", tt.size, err)
			}
			if d.Allowed {
				allowed++
			}
			if d.Source == limiter.Central {
				central++
			}
		}
		if have := l.CentralCalls(); have != tt.wantCalls || central != tt.wantCalls || allowed != tt.n || l.Outstanding() != 0 {
			t.Errorf("size %d, %d decisions: CentralCalls %d, central decisions %d, allowed %d, Outstanding %d; want %d, %d, %d, 0",
				tt.size, tt.n, have, central, allowed, l.Outstanding(), tt.wantCalls, tt.wantCalls, tt.n)
		}
	}
}

// TestLeaseEnvelope drives G gateways on one key with a seeded random stream and checks at every
// step that every token ever granted conforms to the central bucket:
// allowed + sum(Outstanding) + sum(LostTokens) <= burst + rate*elapsed. It also replays the
// allowed stream through a virtual exact bucket (as the runs' overspend checker does) and logs
// the overspend that lease timing causes.
func TestLeaseEnvelope(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 50} // 0.1 token/ms
	for _, g := range []int{1, 4} {
		t.Run("gateways="+strconv.Itoa(g), func(t *testing.T) {
			t.Parallel()
			ls := make([]*limiter.LeaseLimiter, g)
			for i := range ls {
				ls[i] = newLease(t, c, p, 10, limiter.WithLeaseTTL(300*time.Millisecond))
			}
			tenant := uniqueTenant(t)
			rng := rand.New(rand.NewPCG(1, uint64(g)))
			var virt limiter.BucketState
			var allowed, overspend, maxOutstanding, leaseDecisions int64
			now := t0
			for step := range 4000 {
				// Demand averages 2 tokens per 20 ms, the refill rate, with a pause of 400 ms
				// (the lease TTL is 300 ms) after 2% of the requests: leases both serve and expire.
				now += rng.Int64N(40)
				if rng.IntN(50) == 0 {
					now += 400
				}
				cost := 1 + rng.Int64N(3)
				l := ls[rng.IntN(g)]
				d, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: cost, Now: time.UnixMilli(now)})
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if d.Source == limiter.Lease {
					leaseDecisions++
				}
				if d.Allowed {
					allowed += cost
					virt = p.Refill(virt, now)
					if virt.Tokens >= float64(cost) {
						virt.Tokens -= float64(cost)
					} else {
						overspend += cost
					}
				}
				var out, lost int64
				for _, l := range ls {
					out += l.OutstandingAt(now)
					lost += l.LostTokens()
				}
				maxOutstanding = max(maxOutstanding, out)
				envelope := p.Burst + int64(math.Floor(float64(now-t0)*p.PerMs()))
				if allowed+out+lost > envelope {
					t.Fatalf("step %d (t0%+d ms): allowed %d + outstanding %d + lost %d > envelope %d",
						step, now-t0, allowed, out, lost, envelope)
				}
			}
			if leaseDecisions == 0 || allowed == 0 {
				t.Fatalf("lease decisions %d, allowed tokens %d: the stream never used a lease", leaseDecisions, allowed)
			}
			t.Logf("%d gateways: allowed %d tokens, overspend %d tokens (virtual bucket), max outstanding %d, lease decisions %d",
				g, allowed, overspend, maxOutstanding, leaseDecisions)
		})
	}
}

// TestLeaseOverspend is the lease's price, by hand: a lease that sits idle while the central
// bucket refills is spent on top of what another gateway took meanwhile. Policy 0.1 token/ms,
// burst 10, leases of 10.
func TestLeaseOverspend(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 10}
	a, b := newLease(t, c, p, 10), newLease(t, c, p, 10)
	tenant := uniqueTenant(t)
	var virt limiter.BucketState
	var allowed, overspend int64
	for i, st := range []struct {
		gw       *limiter.LeaseLimiter
		at, cost int64
		want     limiter.Decision
	}{
		{a, 0, 1, limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central}},   // central empty, A holds 9
		{b, 100, 1, limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central}}, // refilled 10: B takes them
		{b, 100, 9, limiter.Decision{Allowed: true, Remaining: 0, Source: limiter.Lease}},
		{a, 100, 9, limiter.Decision{Allowed: true, Remaining: 0, Source: limiter.Lease}}, // A's idle 9: overspend
		{a, 100, 1, limiter.Decision{Remaining: 0, RetryAfter: 10 * ms, ResetAfter: 100 * ms, Source: limiter.Central}},
	} {
		before := a.OutstandingAt(t0+st.at) + b.OutstandingAt(t0+st.at)
		have, err := st.gw.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)})
		want := st.want
		want.At = time.UnixMilli(t0 + st.at) // lease and central decisions alike: the request's Now
		if err != nil || have != want {
			t.Fatalf("step %d: have %+v, %v; want %+v", i, have, err, want)
		}
		if have.Allowed {
			allowed += st.cost
			virt = p.Refill(virt, t0+st.at)
			if virt.Tokens >= float64(st.cost) {
				virt.Tokens -= float64(st.cost)
			} else {
				overspend += st.cost
				if st.cost > before {
					t.Fatalf("step %d: overspend %d above the unused leases %d", i, st.cost, before)
				}
			}
		}
	}
	// 20 tokens in 100 ms fit the cumulative envelope 10 + 0.1*100, but 9 of them came at once
	// on top of a full bucket's 10.
	if allowed != 20 || overspend != 9 {
		t.Fatalf("allowed %d, overspend %d; want 20 and 9", allowed, overspend)
	}
}

// TestLeaseDrop: a dead gateway's lease is lost, which denies later requests that a central
// bucket (the in-memory twin) would allow: false denies, not overspend.
func TestLeaseDrop(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 10}
	l := newLease(t, c, p, 10)
	twin, err := limiter.NewTokenBucket(p)
	if err != nil {
		t.Fatal(err)
	}
	tenant := uniqueTenant(t)
	ctx := context.Background()
	r := limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
	if d, err := l.Allow(ctx, r); err != nil || !d.Allowed {
		t.Fatalf("first request: %+v, %v; want allowed", d, err)
	}
	_, _ = twin.Allow(ctx, r)
	if out := l.Outstanding(); out != 9 {
		t.Fatalf("Outstanding before Drop = %d, want 9", out)
	}
	l.Drop()
	if out, lost := l.Outstanding(), l.LostTokens(); out != 0 || lost != 9 {
		t.Fatalf("after Drop: Outstanding %d, LostTokens %d; want 0, 9", out, lost)
	}
	var falseDenies int
	for i, at := range []int64{1, 5, 9} {
		r.Now = time.UnixMilli(t0 + at)
		have, err := l.Allow(ctx, r)
		central, _ := twin.Allow(ctx, r)
		if err != nil || have.Allowed || !central.Allowed {
			t.Fatalf("request %d at t0+%d ms: lease %+v, %v; central %+v; want lease denied, central allowed", i, at, have, err, central)
		}
		falseDenies++
	}
	r.Now = time.UnixMilli(t0 + 10) // 1 token refilled centrally
	if d, err := l.Allow(ctx, r); err != nil || !d.Allowed || d.Source != limiter.Central {
		t.Fatalf("at t0+10 ms: %+v, %v; want allowed by a central fetch", d, err)
	}
	t.Logf("false denies after Drop: %d", falseDenies)
}

// TestLeaseExpiry: leased tokens are spendable until fetch time + TTL on the requests' clock,
// then lost, and the next request fetches again.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	l := newLease(t, c, limiter.BucketPolicy{Rate: 100, Burst: 100}, 10, limiter.WithLeaseTTL(500*time.Millisecond))
	tenant := uniqueTenant(t)
	for i, st := range []struct {
		at                           int64
		want                         limiter.Decision
		wantCalls, wantOut, wantLost int64
	}{
		{0, limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central}, 1, 9, 0},
		{499, limiter.Decision{Allowed: true, Remaining: 8, Source: limiter.Lease}, 1, 8, 0},
		{500, limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central}, 2, 9, 8},
		{999, limiter.Decision{Allowed: true, Remaining: 8, Source: limiter.Lease}, 2, 8, 8},
	} {
		have, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0 + st.at)})
		want := st.want
		want.At = time.UnixMilli(t0 + st.at)
		if err != nil || have != want || l.CentralCalls() != st.wantCalls || l.Outstanding() != st.wantOut || l.LostTokens() != st.wantLost {
			t.Fatalf("step %d (t0%+d ms): have %+v, %v, calls %d, outstanding %d, lost %d; want %+v, calls %d, outstanding %d, lost %d",
				i, st.at, have, err, l.CentralCalls(), l.Outstanding(), l.LostTokens(), want, st.wantCalls, st.wantOut, st.wantLost)
		}
	}
	if have := l.OutstandingAt(t0 + 1000); have != 0 {
		t.Fatalf("OutstandingAt(t0+1000 ms) = %d, want 0 (the second lease expired)", have)
	}
}

// inflightScripter counts the script calls in flight per key and remembers the most at once.
type inflightScripter struct {
	redis.Scripter
	mu       sync.Mutex
	inflight map[string]int
	most     int
}

func (s *inflightScripter) enter(key string) {
	s.mu.Lock()
	s.inflight[key]++
	s.most = max(s.most, s.inflight[key])
	s.mu.Unlock()
}

func (s *inflightScripter) leave(key string) {
	s.mu.Lock()
	s.inflight[key]--
	s.mu.Unlock()
}

func (s *inflightScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	s.enter(keys[0])
	defer s.leave(keys[0])
	return s.Scripter.EvalSha(ctx, sha, keys, args...)
}

func (s *inflightScripter) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	s.enter(keys[0])
	defer s.leave(keys[0])
	return s.Scripter.Eval(ctx, src, keys, args...)
}

// TestLeaseConcurrent: 32 goroutines on two keys at one instant. Exactly one fetch per key is
// ever in flight, and every token of the burst is either spent or still leased.
func TestLeaseConcurrent(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	s := &inflightScripter{Scripter: c, inflight: map[string]int{}}
	p := limiter.BucketPolicy{Rate: 1, Burst: 1000}
	l := newLease(t, s, p, 10)
	tenant := uniqueTenant(t)
	const workers, perWorker = 32, 100
	var mu sync.Mutex
	allowed := map[string]int64{}
	var wg sync.WaitGroup
	for w := range workers {
		ep := []string{"a", "b"}[w%2]
		wg.Go(func() {
			var n int64
			for range perWorker {
				d, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: ep, Cost: 1, Now: time.UnixMilli(t0)})
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				if d.Allowed {
					n++
				}
			}
			mu.Lock()
			allowed[ep] += n
			mu.Unlock()
		})
	}
	wg.Wait()
	out := l.OutstandingAt(t0)
	if total := allowed["a"] + allowed["b"] + out; total != 2*p.Burst || s.most != 1 {
		t.Fatalf("allowed %v + outstanding %d = %d, most fetches in flight per key %d; want %d and 1",
			allowed, out, total, s.most, 2*p.Burst)
	}
	if allowed["a"] == 0 || allowed["b"] == 0 || l.CentralCalls() < 2*p.Burst/10 {
		t.Fatalf("allowed %v, CentralCalls %d; want both keys served with >= %d fetches", allowed, l.CentralCalls(), 2*p.Burst/10)
	}
}

// BenchmarkLeaseAllow measures decisions per second with leases of each size on one key at one
// instant (the central bucket never runs dry), serially and from parallel goroutines.
func BenchmarkLeaseAllow(b *testing.B) {
	_, c := sharedCluster(b)
	p := limiter.BucketPolicy{Rate: 1e12, Burst: 1 << 40}
	for _, size := range []int64{1, 10, 100, 1 << 20} {
		b.Run("size="+strconv.FormatInt(size, 10), func(b *testing.B) {
			l := newLease(b, c, p, size)
			if err := l.Load(context.Background()); err != nil {
				b.Fatal(err)
			}
			r := limiter.Request{Tenant: uniqueTenant(b), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
			ctx := context.Background()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if d, err := l.Allow(ctx, r); err != nil || !d.Allowed {
					b.Fatalf("%+v, %v", d, err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
			b.ReportMetric(float64(l.CentralCalls())/float64(b.N), "central/decision")
		})
	}
	b.Run("parallel/size=1048576", func(b *testing.B) {
		l := newLease(b, c, p, 1<<20)
		tenant := uniqueTenant(b)
		ctx := context.Background()
		b.ReportAllocs()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			r := limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
			for pb.Next() {
				if d, err := l.Allow(ctx, r); err != nil || !d.Allowed {
					b.Errorf("%+v, %v", d, err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		b.ReportMetric(float64(l.CentralCalls())/float64(b.N), "central/decision")
	})
}

// TestLeaseNoScriptFallback flushes the node's script cache: the next fetch runs EVAL once and
// still decides right. Not parallel: a flush would cost other parallel tests a fallback.
func TestLeaseNoScriptFallback(t *testing.T) {
	_, c := sharedCluster(t)
	ctx := context.Background()
	l := newLease(t, c, limiter.BucketPolicy{Rate: 100, Burst: 100}, 10)
	if err := l.Load(ctx); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() }); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	tenant := uniqueTenant(t)
	for i, st := range []struct {
		ep                       string
		want                     limiter.Decision
		wantCalls, wantFallbacks int64
	}{
		{"a", limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central}, 1, 1},
		{"a", limiter.Decision{Allowed: true, Remaining: 8, Source: limiter.Lease}, 1, 1},
		{"b", limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central}, 2, 1}, // EVAL cached it
	} {
		have, err := l.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: st.ep, Cost: 1, Now: time.UnixMilli(t0)})
		want := st.want
		want.At = time.UnixMilli(t0)
		if err != nil || have != want || l.CentralCalls() != st.wantCalls || l.NoScriptFallbacks() != st.wantFallbacks {
			t.Fatalf("step %d: have %+v, %v, calls %d, fallbacks %d; want %+v, calls %d, fallbacks %d",
				i, have, err, l.CentralCalls(), l.NoScriptFallbacks(), want, st.wantCalls, st.wantFallbacks)
		}
	}
}

// gateScripter holds each script call until the test releases it: a real Redis call, made at a
// moment the test chooses, so that a fetch is surely in flight.
type gateScripter struct {
	redis.Scripter
	entered chan struct{}
	release chan struct{}
}

func newGateScripter(c redis.Scripter) *gateScripter {
	return &gateScripter{Scripter: c, entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (s *gateScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	s.entered <- struct{}{}
	<-s.release
	return s.Scripter.EvalSha(ctx, sha, keys, args...)
}

func (s *gateScripter) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return s.Scripter.Eval(ctx, src, keys, args...)
}

// TestLeaseWaiters: while a fetch is in flight, a request whose context ends gives up with its
// context's error, and one that waits spends from the lease the fetch brought, with no call of
// its own.
func TestLeaseWaiters(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	s := newGateScripter(c)
	l := newLease(t, s, limiter.BucketPolicy{Rate: 100, Burst: 100}, 10)
	waiting := make(chan struct{}, 4)
	l.SetWaitHook(func() { waiting <- struct{}{} })
	r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
	type result struct {
		d   limiter.Decision
		err error
	}
	fetcher := make(chan result, 1)
	go func() {
		d, err := l.Allow(context.Background(), r)
		fetcher <- result{d, err}
	}()
	<-s.entered // the fetch is in flight

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, err := l.Allow(ctx, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter with a cancelled context: %+v, %v; want context.Canceled", d, err)
	}
	<-waiting
	waiter := make(chan result, 1)
	go func() {
		d, err := l.Allow(context.Background(), r)
		waiter <- result{d, err}
	}()
	<-waiting
	close(s.release)
	want := limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central, At: r.Now}
	if have := <-fetcher; have.err != nil || have.d != want {
		t.Fatalf("fetcher: %+v, %v; want %+v", have.d, have.err, want)
	}
	if have := <-waiter; have.err != nil || !have.d.Allowed || have.d.Source != limiter.Lease {
		t.Fatalf("waiter: %+v, %v; want allowed from the lease", have.d, have.err)
	}
	if calls, out := l.CentralCalls(), l.Outstanding(); calls != 1 || out != 8 {
		t.Fatalf("CentralCalls %d, Outstanding %d; want 1, 8", calls, out)
	}
}

// TestLeaseSharedFailure: a fetch that fails hands its error to the request that waited for it
// (no second call); a Drop during a fetch loses the grant.
func TestLeaseSharedFailure(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 100}

	t.Run("failure is shared", func(t *testing.T) {
		t.Parallel()
		s := newGateScripter(c)
		l := newLease(t, s, p, 10)
		waiting := make(chan struct{}, 1)
		l.SetWaitHook(func() { waiting <- struct{}{} })
		r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		go func() {
			_, err := l.Allow(ctx, r) // the fetcher: its context ends while its call is held
			errs <- err
		}()
		<-s.entered
		go func() {
			_, err := l.Allow(context.Background(), r)
			errs <- err
		}()
		<-waiting
		cancel()
		close(s.release)
		for i := range 2 {
			if err := <-errs; !errors.Is(err, context.Canceled) {
				t.Fatalf("request %d: %v; want the fetch's context.Canceled", i, err)
			}
		}
		if calls := l.CentralCalls(); calls != 1 {
			t.Fatalf("CentralCalls %d, want 1", calls)
		}
	})

	t.Run("drop during a fetch", func(t *testing.T) {
		t.Parallel()
		s := newGateScripter(c)
		l := newLease(t, s, p, 10)
		r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)}
		done := make(chan limiter.Decision, 1)
		go func() {
			d, err := l.Allow(context.Background(), r)
			if err != nil {
				t.Errorf("fetch: %v", err)
			}
			done <- d
		}()
		<-s.entered
		l.Drop()
		close(s.release)
		want := limiter.Decision{RetryAfter: time.Millisecond, Source: limiter.Central, At: r.Now}
		if have := <-done; have != want {
			t.Fatalf("decision whose fetch outlived its gateway: %+v, want %+v", have, want)
		}
		if out, lost := l.Outstanding(), l.LostTokens(); out != 0 || lost != 10 {
			t.Fatalf("Outstanding %d, LostTokens %d; want 0, 10", out, lost)
		}
	})
}

// TestLeaseZeroAllocs: a decision paid from the lease allocates nothing (not parallel: other
// goroutines' allocations would count).
func TestLeaseZeroAllocs(t *testing.T) {
	_, c := sharedCluster(t)
	l := newLease(t, c, limiter.BucketPolicy{Rate: 1e6, Burst: 1 << 20}, 1<<20)
	r := limiter.Request{Tenant: uniqueTenant(t), Endpoint: "/v1/orders", Cost: 1, Now: time.UnixMilli(t0)}
	ctx := context.Background()
	if d, err := l.Allow(ctx, r); err != nil || d.Source != limiter.Central {
		t.Fatalf("first decision: %+v, %v; want a central fetch", d, err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if d, err := l.Allow(ctx, r); err != nil || d.Source != limiter.Lease {
			t.Fatalf("%+v, %v; want a lease decision", d, err)
		}
	}); n != 0 {
		t.Errorf("Allow from the lease: %v allocs per decision, want 0", n)
	}
}

// TestLeaseScriptContractText checks what lease.lua's text shows: the bucket storage of
// token_bucket.lua, one key, no key names built, no server clock.
func TestLeaseScriptContractText(t *testing.T) {
	t.Parallel()
	src := luaCode(lua.Lease)
	for _, tt := range []struct {
		name string
		have bool
	}{
		{"uses only KEYS[1]", len(regexp.MustCompile(`KEYS\[[^1]`).FindAllString(src, -1)) == 0},
		{"builds no key names", !strings.Contains(src, "rl:") && !regexp.MustCompile(`KEYS\[1\]\s*\.\.|\.\.\s*KEYS`).MatchString(src)},
		{"reads no server clock", !strings.Contains(src, "'TIME'") && !strings.Contains(src, `"TIME"`)},
		{"same stored value as token_bucket.lua", strings.Contains(src, "struct.pack('<dd', tokens, now)") &&
			strings.Contains(luaCode(lua.TokenBucket), "struct.pack('<dd', tokens, now)") &&
			strings.Contains(src, "tokens, last = struct.unpack('<dd', state)") &&
			strings.Contains(luaCode(lua.TokenBucket), "tokens, last = struct.unpack('<dd', state)")},
		{"writes the key with its TTL unconditionally, once", strings.Count(src, "'SET'") == 1 && !strings.Contains(src, "'PEXPIRE'") &&
			regexp.MustCompile(`(?m)^redis\.call\('SET', KEYS\[1\], struct\.pack\('<dd', tokens, now\), 'PX', ttl\)$`).MatchString(src)},
		{"reads ARGV 1 to 6 only", len(regexp.MustCompile(`ARGV\[[^1-6]`).FindAllString(src, -1)) == 0},
	} {
		if !tt.have {
			t.Errorf("lease.lua: %s: not so", tt.name)
		}
	}
}

// TestLeaseSharesTheBucket: lease.lua and token_bucket.lua decide one key's bucket together.
func TestLeaseSharesTheBucket(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	central, err := limiter.NewRedisTokenBucket(c, suitePolicy, limiter.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	l := newLease(t, c, suitePolicy, 4)
	tenant := uniqueTenant(t)
	ctx := context.Background()
	for i, st := range []struct {
		lim  limiter.Limiter
		at   int64
		cost int64
		want limiter.Decision
	}{
		{l, 0, 1, limiter.Decision{Allowed: true, Remaining: 3, Source: limiter.Central}}, // leases 4 of 10
		{central, 0, 6, limiter.Decision{Allowed: true, Remaining: 0, ResetAfter: 20 * ms, Source: limiter.Central}},
		{central, 0, 1, limiter.Decision{RetryAfter: 2 * ms, ResetAfter: 20 * ms, Source: limiter.Central}},
		{l, 0, 3, limiter.Decision{Allowed: true, Remaining: 0, Source: limiter.Lease}},
		{l, 1, 1, limiter.Decision{RetryAfter: 1 * ms, ResetAfter: 19 * ms, Source: limiter.Central}}, // 0.5 token
	} {
		have, err := st.lim.Allow(ctx, limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: st.cost, Now: time.UnixMilli(t0 + st.at)})
		want := st.want
		want.At = time.UnixMilli(t0 + st.at)
		if err != nil || have != want {
			t.Fatalf("step %d: have %+v, %v; want %+v", i, have, err, want)
		}
	}
}

// TestLeaseRefusalIsCachedUntilRetryAfter: once the central bucket refuses a fetch it says when
// it could pay; until then the gateway denies locally instead of asking again (a hot key over its
// limit would otherwise cost one Redis call per request), and asks again after. A gateway whose
// own grant drained the bucket knows as much without asking: its next requests are denied
// locally at once, with a RetryAfter no later than the central one.
func TestLeaseRefusalIsCachedUntilRetryAfter(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 10, Burst: 10} // one token per 100 ms
	l := newLease(t, c, p, 10)
	other := newLease(t, c, p, 10) // a second gateway on the same key
	tenant := uniqueTenant(t)
	atOn := func(l *limiter.LeaseLimiter, ms int64) limiter.Decision {
		d, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0 + ms)})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	at := func(ms int64) limiter.Decision { return atOn(l, ms) }
	for i := range 10 {
		if d := at(0); !d.Allowed {
			t.Fatalf("request %d of the burst denied: %+v", i, d)
		}
	}
	calls := l.CentralCalls()
	if d := at(0); d.Allowed || d.Source != limiter.Lease || d.RetryAfter <= 0 || d.RetryAfter > 100*time.Millisecond {
		t.Fatalf("11th request = %+v, want a local denial (the grant drained the bucket) with RetryAfter in (0, 100ms]", d)
	}
	// The other gateway learns it from Redis: a central denial, then local ones.
	if d := atOn(other, 0); d.Allowed || d.Source != limiter.Central || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("other gateway's first request = %+v, want a central denial with RetryAfter 100ms", d)
	}
	otherCalls := other.CentralCalls()
	for ms := int64(0); ms < 90; ms += 10 {
		if d := at(ms); d.Allowed || d.Source != limiter.Lease || d.RetryAfter <= 0 {
			t.Fatalf("at +%d ms: %+v, want a local denial", ms, d)
		}
		if d := atOn(other, ms); d.Allowed || d.Source != limiter.Lease || d.RetryAfter <= 0 {
			t.Fatalf("other gateway at +%d ms: %+v, want a local denial", ms, d)
		}
	}
	if got, gotOther := l.CentralCalls(), other.CentralCalls(); got != calls || gotOther != otherCalls {
		t.Errorf("central calls went from %d, %d to %d, %d during the refusal window, want none", calls, otherCalls, got, gotOther)
	}
	if d := at(100); !d.Allowed || l.CentralCalls() != calls+1 {
		t.Errorf("at +100 ms: %+v after %d calls, want a new fetch that pays", d, l.CentralCalls()-calls)
	}
}

// TestLeaseBatchedFetches: with a pipelining client, concurrent fetches on different keys travel
// together (fewer pipelines than fetches), each still decided as a plain call would be; without
// batching every fetch is its own call; a client that cannot pipeline cannot batch.
func TestLeaseBatchedFetches(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 100}
	run := func(l *limiter.LeaseLimiter) {
		t.Helper()
		const callers = 48
		var wg sync.WaitGroup
		prefix := uniqueTenant(t)
		for i := range callers {
			wg.Go(func() {
				d, err := l.Allow(context.Background(), limiter.Request{Tenant: prefix + "-" + strconv.Itoa(i), Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0)})
				if want := (limiter.Decision{Allowed: true, Remaining: 9, Source: limiter.Central, At: time.UnixMilli(t0)}); err != nil || d != want {
					t.Errorf("cold key %d: %+v, %v; want %+v", i, d, err, want)
				}
			})
		}
		wg.Wait()
		if calls := l.CentralCalls(); calls != callers {
			t.Fatalf("CentralCalls %d, want %d (one fetch per cold key)", calls, callers)
		}
	}
	batched := newLease(t, c, p, 10, limiter.WithLeaseBatching(true, limiter.WithBatchSize(48), limiter.WithBatchWindow(time.Second)))
	run(batched)
	if n := batched.FetchPipelines(); n < 1 || n > 12 {
		t.Fatalf("48 concurrent fetches in %d pipelines, want 1..12 (batched)", n)
	}
	plain := newLease(t, c, p, 10, limiter.WithLeaseBatching(false))
	run(plain)
	if n := plain.FetchPipelines(); n != 0 {
		t.Fatalf("FetchPipelines without batching = %d, want 0", n)
	}
	if _, err := limiter.NewLeaseLimiter(newGateScripter(c), p, 10, limiter.WithLeaseBatching(true)); !errors.Is(err, limiter.ErrBadConfig) {
		t.Fatalf("batching over a client without pipelines: %v, want ErrBadConfig", err)
	}
	if _, err := limiter.NewLeaseLimiter(c, p, 10, limiter.WithLeaseBatching(true, limiter.WithFlushers(0))); !errors.Is(err, limiter.ErrBadConfig) {
		t.Fatalf("batching with 0 flushers: %v, want ErrBadConfig", err)
	}
}
