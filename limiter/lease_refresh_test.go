package limiter_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/workload"
)

// TestLeaseRefreshAhead: a key requested steadily waits for Redis once, for its first lease;
// afterwards refresh-ahead tops the lease up before it runs out or expires, and the lease never
// holds more than size tokens. Without refresh the same stream waits at every lease. Every
// refresh is waited for before the next request (an instant round trip), so the counts are exact.
func TestLeaseRefreshAhead(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 1000, Burst: 1000}
	for _, tt := range []struct {
		name            string
		refresh         float64
		every, n        int64 // a request every ms, n of them
		wantWaited      int64
		wantCentralOnly bool
	}{
		// 10-token leases, TTL 500 ms, a request every 10 ms: a lease is spent in 100 ms.
		{"exhaustion, off", 0, 10, 1000, 100, true},
		{"exhaustion, on", 0.25, 10, 1000, 1, false},
		// A request every 100 ms: 5 tokens of a lease are spent before it expires.
		{"expiry, off", 0, 100, 100, 20, true},
		{"expiry, on", 0.25, 100, 100, 1, false},
		// A request every 600 ms, longer than the TTL: every request finds its lease expired.
		// That wait is the cold path, which no refresh can avoid.
		{"cold, on", 0.25, 600, 20, 20, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLease(t, c, p, 10, limiter.WithLeaseTTL(500*time.Millisecond), limiter.WithLeaseRefresh(tt.refresh))
			tenant := uniqueTenant(t)
			var central, maxOut int64
			for i := range tt.n {
				now := t0 + i*tt.every
				d, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(now)})
				if err != nil || !d.Allowed {
					t.Fatalf("request %d: %+v, %v; want allowed", i, d, err)
				}
				if d.Source == limiter.Central {
					central++
				}
				l.WaitRefreshes()
				maxOut = max(maxOut, l.OutstandingAt(now))
			}
			if have := l.Waited(); have != tt.wantWaited || central != tt.wantWaited {
				t.Errorf("Waited %d, central decisions %d; want %d", have, central, tt.wantWaited)
			}
			if maxOut > 10 {
				t.Errorf("Outstanding reached %d tokens, above the lease size 10: the overspend bound would grow", maxOut)
			}
			if refreshes := l.Refreshes(); (refreshes == 0) != tt.wantCentralOnly || l.RefreshErrors() != 0 {
				t.Errorf("Refreshes %d, RefreshErrors %d", refreshes, l.RefreshErrors())
			}
			t.Logf("%s: waited %d of %d, central calls %d (%d refreshes), lost %d tokens",
				tt.name, l.Waited(), tt.n, l.CentralCalls(), l.Refreshes(), l.LostTokens())
		})
	}
}

// TestLeaseRefreshEnvelope is TestLeaseEnvelope's check with refresh-ahead on and concurrent
// refreshes left running: every token ever granted still conforms to the central bucket,
// allowed + sum(Outstanding) + sum(LostTokens) <= burst + rate*elapsed, and no gateway's lease
// of the key exceeds size.
func TestLeaseRefreshEnvelope(t *testing.T) {
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 50}
	const g, size = 3, 10
	ls := make([]*limiter.LeaseLimiter, g)
	for i := range ls {
		ls[i] = newLease(t, c, p, size, limiter.WithLeaseTTL(300*time.Millisecond), limiter.WithLeaseRefresh(0.5))
	}
	tenant := uniqueTenant(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var allowed int64
	now := t0
	check := func(step int) {
		var out, lost int64
		for _, l := range ls {
			o := l.OutstandingAt(now)
			if o > size {
				t.Fatalf("step %d: a gateway holds %d tokens, above the lease size %d", step, o, size)
			}
			out += o
			lost += l.LostTokens()
		}
		envelope := p.Burst + int64(math.Floor(float64(now-t0)*p.PerMs()))
		if allowed+out+lost > envelope {
			t.Fatalf("step %d (t0%+d ms): allowed %d + outstanding %d + lost %d > envelope %d", step, now-t0, allowed, out, lost, envelope)
		}
	}
	for step := range 3000 {
		now += rng.Int64N(40)
		if rng.IntN(50) == 0 {
			now += 400
		}
		cost := 1 + rng.Int64N(3)
		d, err := ls[rng.IntN(g)].Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: cost, Now: time.UnixMilli(now)})
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if d.Allowed {
			allowed += cost
		}
		check(step)
	}
	var refreshes int64
	for _, l := range ls {
		l.WaitRefreshes()
		refreshes += l.Refreshes()
	}
	check(3000)
	if refreshes == 0 {
		t.Fatal("no refresh-ahead fetch ran: the test did not test it")
	}
}

// TestLeaseRefreshZipf replays hot-tenant-lease's traffic shape (Zipf 0.99 over 1,000 tenants,
// 3 endpoints, 2 gateways, leases of 100 with a 5 s TTL, policy 100/s burst 200) for 1 s of
// request time at 100,000 decisions/s, with instant round trips, and counts the decisions that
// waited for Redis. Without refresh-ahead most are drained hot keys' fetches of a token or two;
// with it the cold path is left (a key's first request, or one after its lease expired).
//
// The two replays run in lockstep, each decision on both before the next: the bucket keys
// expire on Redis's clock (PEXPIRE, wall time) while the decisions run on request time, so two
// replays run one after the other would allow different counts as the machine's speed varies
// between them, whatever the limiter does.
func TestLeaseRefreshZipf(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 100,000 decisions against Redis")
	}
	t.Parallel()
	_, c := sharedCluster(t)
	p := limiter.BucketPolicy{Rate: 100, Burst: 200}
	const tenants, n, rate = 1000, 100_000, 100_000
	type replay struct {
		refresh float64
		prefix  string
		gw      [2]*limiter.LeaseLimiter
		allowed int64
	}
	replays := []*replay{{refresh: 0}, {refresh: 0.25}}
	for _, r := range replays {
		r.prefix = uniqueTenant(t) + "-" + strconv.FormatFloat(r.refresh, 'g', -1, 64) + "-"
		for i := range r.gw {
			r.gw[i] = newLease(t, c, p, 100, limiter.WithLeaseTTL(5*time.Second), limiter.WithLeaseRefresh(r.refresh))
		}
	}
	z, err := workload.NewZipf(tenants, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	eps := []string{"read", "write", "export"}
	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[string]bool{}
	for i := range int64(n) {
		ep := eps[0]
		switch u := rng.Float64(); {
		case u > 0.95:
			ep = eps[2]
		case u > 0.7:
			ep = eps[1]
		}
		tenant := strconv.FormatUint(z.Draw(rng), 10)
		seen[strconv.FormatInt(i%2, 10)+tenant+ep] = true
		for _, r := range replays {
			l := r.gw[i%2]
			d, err := l.Allow(context.Background(), limiter.Request{Tenant: r.prefix + tenant, Endpoint: ep, Cost: 1,
				Now: time.UnixMilli(t0 + i*1000/rate)})
			if err != nil {
				t.Fatalf("refresh %v, decision %d: %v", r.refresh, i, err)
			}
			if d.Allowed {
				r.allowed++
			}
			l.WaitRefreshes()
		}
	}
	firsts := int64(len(seen))
	waited := map[float64]int64{}
	for _, r := range replays {
		g := r.gw
		waited[r.refresh] = g[0].Waited() + g[1].Waited()
		t.Logf("refresh %v: %d of %d decisions (%.2f%%) waited for Redis, %d of them first requests of a key; %d allowed; %d central calls, %d refreshes, %d tokens lost",
			r.refresh, waited[r.refresh], n, 100*float64(waited[r.refresh])/n, firsts, r.allowed,
			g[0].CentralCalls()+g[1].CentralCalls(), g[0].Refreshes()+g[1].Refreshes(), g[0].LostTokens()+g[1].LostTokens())
	}
	// Most waits without refresh are drained hot keys' round trips for a token or two; the
	// first requests of the keys (cold fetches) are left. Availability must not pay for it.
	if on, off := waited[0.25]-firsts, waited[0]-firsts; on*3 > off {
		t.Errorf("beyond the %d first requests, %d decisions waited with refresh-ahead, %d without: want at most a third", firsts, on, off)
	}
	if without, with := replays[0].allowed, replays[1].allowed; with < without*95/100 {
		t.Errorf("refresh-ahead allowed %d decisions, without it %d: want at least 95%% as many", with, without)
	}
}

// holdScripter passes script calls through until hold is called; from then on each run waits,
// after announcing itself on entered, until the test calls let.
type holdScripter struct {
	redis.Scripter
	mu      sync.Mutex
	gate    chan struct{} // nil: pass
	entered chan struct{}
}

func (s *holdScripter) hold() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *holdScripter) let() {
	s.mu.Lock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	s.mu.Unlock()
}

func (s *holdScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		s.entered <- struct{}{}
		<-g
	}
	return s.Scripter.EvalSha(ctx, sha, keys, args...)
}

// TestLeaseDrainedKeyNeverWaits: with refresh-ahead a hot key whose central bucket is empty is
// denied locally while one refresh collects the refill, however long that refresh is held in
// Redis: past the time one token takes, and past any grace, no request waits for it. Once it
// answers, its token pays the next request from the lease.
func TestLeaseDrainedKeyNeverWaits(t *testing.T) {
	t.Parallel()
	s, l, waited, at := heldRefreshLease(t)
	for i := range 10 {
		if d := at(0); !d.Allowed {
			t.Fatalf("request %d of the burst: %+v, want allowed", i, d)
		}
	}
	if d := at(50); d.Allowed || d.Source != limiter.Lease || d.RetryAfter <= 0 {
		t.Fatalf("at +50 ms, bucket drained: %+v, want a local denial", d)
	}
	s.hold()
	// At +150 ms a token has refilled: this request starts the refresh that collects it and is
	// denied at once; the refresh is held in Redis from here on.
	if d := at(150); d.Allowed || d.Source != limiter.Lease {
		t.Fatalf("at +150 ms: %+v, want a local denial while a refresh collects the refill", d)
	}
	select {
	case <-s.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no refresh reached Redis after the drained key's first request past its refill")
	}
	for _, ms := range []int64{200, 300, 600, 2000} { // beyond one token's time, and far beyond
		if d := at(ms); d.Allowed || d.Source != limiter.Lease || d.RetryAfter != time.Millisecond {
			t.Fatalf("at +%d ms, refresh in flight: %+v, want a local denial with RetryAfter 1ms", ms, d)
		}
	}
	if n := waited.Load(); n != 0 {
		t.Fatalf("%d requests waited for the held refresh, want none", n)
	}
	s.let()
	l.WaitRefreshes()
	if d := at(2000); !d.Allowed || d.Source != limiter.Lease {
		t.Fatalf("at +2000 ms, after the refresh answered: %+v, want allowed from its token", d)
	}
	if calls := l.CentralCalls(); calls != 2 {
		t.Errorf("CentralCalls %d, want 2: the burst's fetch and one refresh", calls)
	}
}

// TestLeaseDrainingGrantsRefreshNeverWaits: the top-up that spending starts on tokens from a
// grant that drained the central bucket is a drained key's refresh: while it is held in Redis,
// the requests the lease can no longer pay are denied at once, none waits for it.
func TestLeaseDrainingGrantsRefreshNeverWaits(t *testing.T) {
	t.Parallel()
	s, l, waited, at := heldRefreshLease(t)
	// The first request takes the whole bucket (10 tokens), which drains it; 8 spends leave 2,
	// the low mark, before the bucket could pay again: no top-up yet.
	for i := range 8 {
		if d := at(0); !d.Allowed {
			t.Fatalf("request %d: %+v, want allowed", i, d)
		}
	}
	s.hold()
	// Past the drained time, this spend leaves 1 token and starts the top-up, held from here on.
	if d := at(150); !d.Allowed || d.Source != limiter.Lease {
		t.Fatalf("at +150 ms: %+v, want allowed from the lease", d)
	}
	select {
	case <-s.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no top-up reached Redis")
	}
	if d := at(160); !d.Allowed {
		t.Fatalf("at +160 ms: %+v, want the last leased token", d)
	}
	for _, ms := range []int64{170, 250, 400, 2000} {
		if d := at(ms); d.Allowed || d.Source != limiter.Lease || d.RetryAfter != time.Millisecond {
			t.Fatalf("at +%d ms, top-up in flight: %+v, want a local denial with RetryAfter 1ms", ms, d)
		}
	}
	if n := waited.Load(); n != 0 {
		t.Fatalf("%d requests waited for the held top-up, want none", n)
	}
	s.let()
	l.WaitRefreshes()
}

// heldRefreshLease is the held-refresh tests' lease: policy 10/s burst 10 (one token per 100
// ms), leases of 10 with refresh-ahead, over a scripter whose calls can be held in Redis. It
// counts the requests that wait for a fetch (and lets the held call go, so a waiting request
// does not hang the test), and at(ms) decides one request on a key of the test's own, ms after t0.
func heldRefreshLease(t *testing.T) (*holdScripter, *limiter.LeaseLimiter, *atomic.Int64, func(ms int64) limiter.Decision) {
	t.Helper()
	_, c := sharedCluster(t)
	s := &holdScripter{Scripter: c, entered: make(chan struct{}, 4)}
	p := limiter.BucketPolicy{Rate: 10, Burst: 10}
	l := newLease(t, s, p, 10, limiter.WithLeaseTTL(5*time.Second), limiter.WithLeaseRefresh(0.25))
	waited := new(atomic.Int64)
	l.SetWaitHook(func() {
		waited.Add(1)
		s.let()
	})
	tenant := uniqueTenant(t)
	at := func(ms int64) limiter.Decision {
		t.Helper()
		d, err := l.Allow(context.Background(), limiter.Request{Tenant: tenant, Endpoint: "ep", Cost: 1, Now: time.UnixMilli(t0 + ms)})
		if err != nil {
			t.Fatalf("at +%d ms: %v", ms, err)
		}
		return d
	}
	return s, l, waited, at
}
