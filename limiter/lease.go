package limiter

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// DefaultLeaseTTL is how long leased tokens stay spendable after the fetch that took them.
const DefaultLeaseTTL = time.Second

// LeaseLimiter is one gateway instance's local token lease over a central token bucket in Redis
// (lua/lease.lua on rl:{tenant}:endpoint, the bucket of RedisTokenBucket). Per key it holds a
// lease of whole tokens and spends it in memory (Source Lease); only when the lease cannot pay a
// request does it run the script once for up to size tokens (Source Central for that request).
// Central operations drop by about the lease size.
//
// The price, which scenarios measure:
//   - Overspend: the central bucket debits tokens when they are leased, not when they are spent.
//     Tokens that sit in a lease while the central bucket refills are spent later on top of
//     what other gateways took meanwhile, so several gateways together can exceed the policy's
//     envelope; the bound is the sum of unused leases, Outstanding summed over the gateways.
//     Every grant itself conforms: allowed + Outstanding + LostTokens <= burst + rate*elapsed.
//   - False denies: leased tokens expire after the lease TTL (WithLeaseTTL, default
//     DefaultLeaseTTL, measured on the requests' clock) and are lost when the gateway dies
//     (Drop); the central bucket never gets them back.
//
// Time is the gateway's: r.Now in Unix ms is passed to the script and dates the lease. At most
// one fetch per key is in flight: other requests on the key that the lease cannot pay wait for
// it (or their context), then spend from the refilled lease; if that fetch was refused (the
// central bucket is empty) they are denied with its answer, and if it failed they get its error.
// The fetch runs under its own deadline (WithLeaseTimeout, default DefaultTimeout) derived from
// the fetching request's context; like RedisTokenBucket it never retries except one EVAL after
// NOSCRIPT. Build the client as RedisTokenBucket's doc says. With a client that can pipeline,
// concurrent fetches travel together, one pipeline per primary (WithLeaseBatching, on by default).
// A grant that drains the central bucket (less than one whole token left) also tells the gateway
// how long the bucket stays empty at least; requests the lease cannot pay meanwhile are denied
// locally, without a refused round trip each.
//
// A decision from the lease allocates nothing; a key's entry (about 100 bytes with the key) is
// kept for the limiter's life, like TokenBucket's. It is safe for concurrent use. The zero value is
// not usable: use NewLeaseLimiter.
type LeaseLimiter struct {
	c        redis.Scripter
	sha      string
	policy   BucketPolicy
	args     policyArgs
	size     int64
	ttlMs    int64
	timeout  time.Duration
	seed     maphash.Seed
	gen      atomic.Int64 // incremented by Drop; a fetch started before it loses its grant
	lastMs   atomic.Int64 // the latest request time seen, the clock of Outstanding
	calls    atomic.Int64
	noScript atomic.Int64
	lost     atomic.Int64
	waited   atomic.Int64 // decisions that waited for a fetch (their own or one in flight)
	// refresh-ahead (WithLeaseRefresh): a spend that leaves at most lowMark tokens, or happens
	// refreshMs or less before the lease expires, starts a top-up fetch in the background.
	refresh   bool
	lowMark   int64
	refreshMs int64
	// drainGraceMs: how long a drained key stays drained after it could pay again (see
	// markDrained): the time one token takes to refill.
	drainGraceMs int64
	refreshes    atomic.Int64
	refreshErrs  atomic.Int64
	refreshing   sync.WaitGroup // refresh fetches running
	onWait       func()         // test hook (lease_test.go): a request starts waiting for a fetch in flight
	batch        *scriptBatcher // fetches in pipelines (WithLeaseBatching); nil: one call each
	stripes      [numStripes]leaseStripe
}

// leaseStripe is one lock and its keys' leases, padded to a cache line as bucketStripe.
type leaseStripe struct {
	mu sync.Mutex
	m  map[string]*leaseEntry
	_  [64 - 16]byte
}

// leaseEntry is one key's lease. Guarded by its stripe's lock.
type leaseEntry struct {
	tokens    int64      // unspent leased tokens
	expiresAt int64      // Unix ms; the tokens are lost at or after it
	fetch     *leaseCall // the fetch in flight, nil if none
	// refusedUntil (Unix ms): the central bucket refused a fetch and said when it could pay
	// refusedCost tokens; until then a request for as many tokens is denied locally. This is exact,
	// not a guess: refills are deterministic and other takers only lower the bucket.
	refusedUntil, refusedCost int64
	// drainedUntil (Unix ms, refresh-ahead only): the last answer found the central bucket with
	// less than one token; until this time, and while a refresh for the drained key is in flight,
	// requests the lease cannot pay are denied at once and never wait (see WithLeaseRefresh).
	drainedUntil int64
}

// leaseCall is one fetch in flight, shared by the requests that wait for it. Its fields are
// written before done is closed and read only after.
type leaseCall struct {
	done chan struct{}
	// drained: a refresh of a key whose central bucket was just found empty; requests the lease
	// cannot pay are denied at once instead of waiting for it (see WithLeaseRefresh).
	drained bool
	granted int64
	denial  Decision // the central answer when granted == 0
	err     error
}

// LeaseOption configures NewLeaseLimiter.
type LeaseOption func(*leaseConfig)

type leaseConfig struct {
	ttl, timeout time.Duration
	batching     bool
	batch        []CoalesceOption
	refresh      float64
}

// WithLeaseRefresh turns on refresh-ahead with fraction f (0 < f < 1; 0, the default, is off):
// a request spent from the lease that leaves at most f*size tokens in it, or that comes within
// f*TTL of the lease's expiry, starts a top-up fetch in the background of size - tokens left
// (at least 1 of them), so that the key's next requests find a fresh lease instead of waiting
// for Redis. The request itself returns at once, from the lease.
//
// The overspend bound is unchanged: a top-up never lets the key's lease hold more than size
// tokens, so the unused leases (Outstanding) stay at most size per key and gateway, and every
// grant is taken from the central bucket as before. What changes: a key requested at least
// once per (1-f)*TTL keeps a lease (a top-up dates the whole lease, leftovers included, from
// its own fetch, as every fetch does), so fewer tokens expire and idle leases live longer; and
// a lease runs about 1/(1-f) fetches where it ran one. A refresh that fails is counted in
// RefreshErrors; requests waiting for it get its error, as with any shared fetch.
//
// A drained key (a hot one whose central bucket the last answer found with less than one token)
// is refreshed the same way and never makes a request wait: until the central bucket could pay
// again the requests the lease cannot pay are denied locally, as without refresh; then, for the
// time one token takes to refill (counted from the later of that moment and when the answer
// came) and for as long as the refresh it starts is in flight, they are denied at once
// (RetryAfter 1 ms) while that one refresh collects the refill, instead of each waiting a round
// trip for a token or two that only one of them can have. A slow Redis therefore delays a hot
// key's tokens, never its requests. The tokens go to the requests after it; none is lost, and the
// bucket's tokens are still taken only by grants. The price is availability, counted as false
// denies: a request in that window that a waiting one would have won is denied, and a later
// one spends its token.
func WithLeaseRefresh(f float64) LeaseOption { return func(c *leaseConfig) { c.refresh = f } }

// WithLeaseTTL sets how long leased tokens stay spendable after their fetch, on the requests'
// clock (default DefaultLeaseTTL); must be >= 1 ms.
func WithLeaseTTL(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.ttl = d } }

// WithLeaseTimeout sets the deadline of one fetch, NOSCRIPT->EVAL included (default
// DefaultTimeout); 0 leaves only the caller's context deadline.
func WithLeaseTimeout(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.timeout = d } }

// WithLeaseBatching sets whether fetches travel in pipelines, one queue per primary, as
// CoalescingBucket sends its decisions (opts: WithBatchSize, WithBatchWindow, WithFlushers;
// defaults DefaultBatchSize, no window, DefaultFlushers). It is on by default when the client can
// pipeline (a *redis.ClusterClient or *redis.Client): at 100,000 decisions/s over tens of
// thousands of keys a gateway makes tens of thousands of fetches per second, and one round trip
// and one system call per fetch is what limited lease mode. Each fetch keeps its own deadline;
// results, NOSCRIPT->EVAL and errors are those of a plain call.
func WithLeaseBatching(on bool, opts ...CoalesceOption) LeaseOption {
	return func(c *leaseConfig) { c.batching, c.batch = on, append(c.batch, opts...) }
}

var _ Limiter = (*LeaseLimiter)(nil)

// NewLeaseLimiter returns a lease limiter over the central bucket with policy p in Redis through
// c (a *redis.ClusterClient or *redis.Client), fetching up to size tokens at a time (1 <= size <=
// p.Burst: a larger lease could never be granted whole). It sends nothing to Redis.
func NewLeaseLimiter(c redis.Scripter, p BucketPolicy, size int64, opts ...LeaseOption) (*LeaseLimiter, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: client is nil: pass a *redis.ClusterClient or *redis.Client", ErrBadConfig)
	}
	if err := checkPolicy(p); err != nil {
		return nil, err
	}
	if size < 1 || size > p.Burst {
		return nil, fmt.Errorf("%w: lease size %d: must be 1..%d tokens (the policy's burst)", ErrBadConfig, size, p.Burst)
	}
	_, canPipeline := c.(PipelineScripter)
	cfg := leaseConfig{ttl: DefaultLeaseTTL, timeout: DefaultTimeout, batching: canPipeline}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.ttl < time.Millisecond {
		return nil, fmt.Errorf("%w: lease TTL %v: must be >= 1ms", ErrBadConfig, cfg.ttl)
	}
	if cfg.timeout < 0 {
		return nil, fmt.Errorf("%w: lease timeout %v: must be >= 0 (0 leaves only the caller's context deadline)", ErrBadConfig, cfg.timeout)
	}
	if !(cfg.refresh >= 0 && cfg.refresh < 1) {
		return nil, fmt.Errorf("%w: lease refresh %v: must be 0 (off) or a fraction of the lease in (0, 1), e.g. 0.25", ErrBadConfig, cfg.refresh)
	}
	l := &LeaseLimiter{
		c:       c,
		sha:     redis.NewScript(lua.Lease).Hash(),
		policy:  p,
		args:    newPolicyArgs(p),
		size:    size,
		ttlMs:   cfg.ttl.Milliseconds(),
		timeout: cfg.timeout,
		seed:    maphash.MakeSeed(),
	}
	if cfg.refresh > 0 {
		l.refresh = true
		l.lowMark = int64(math.Floor(cfg.refresh * float64(size)))
		l.refreshMs = int64(math.Ceil(cfg.refresh * float64(l.ttlMs)))
		l.drainGraceMs = max(1, int64(math.Ceil(1/p.PerMs())))
	}
	for i := range l.stripes {
		l.stripes[i].m = make(map[string]*leaseEntry)
	}
	if cfg.batching {
		pc, ok := c.(PipelineScripter)
		if !ok {
			return nil, fmt.Errorf("%w: lease batching: client %T has no Pipeline(): pass a *redis.ClusterClient or *redis.Client, or WithLeaseBatching(false)", ErrBadConfig, c)
		}
		// No linger by default: it was measured for CoalescingBucket only, and a lease fetch
		// holds every request on its key that the lease cannot pay.
		cc := coalesceConfig{batchSize: DefaultBatchSize, window: DefaultBatchWindow, flushers: DefaultFlushers}
		for _, o := range cfg.batch {
			o(&cc)
		}
		if err := cc.check(); err != nil {
			return nil, fmt.Errorf("lease batching: %w", err)
		}
		l.batch = newScriptBatcher(pc, cc, func() { l.noScript.Add(1) })
	}
	return l, nil
}

// Load sends SCRIPT LOAD of lease.lua (to every node through a ClusterClient) and checks the
// hash, so that fetches do not pay NOSCRIPT->EVAL.
func (l *LeaseLimiter) Load(ctx context.Context) error {
	return loadScript(ctx, l.c, "lease", lua.Lease, l.sha)
}

// CentralCalls returns how many fetches ran the script (a NOSCRIPT->EVAL pair counts once).
func (l *LeaseLimiter) CentralCalls() int64 { return l.calls.Load() }

// FetchPipelines returns how many pipelines carried the fetches (0 without WithLeaseBatching):
// CentralCalls / FetchPipelines is the average batch.
func (l *LeaseLimiter) FetchPipelines() int64 {
	if l.batch == nil {
		return 0
	}
	return l.batch.batches.Load()
}

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (l *LeaseLimiter) NoScriptFallbacks() int64 { return l.noScript.Load() }

// Waited returns how many decisions waited for Redis: they fetched, or waited for a fetch in
// flight on their key. The others were decided from the lease in memory.
func (l *LeaseLimiter) Waited() int64 { return l.waited.Load() }

// Refreshes returns how many top-up fetches refresh-ahead started (WithLeaseRefresh); they
// count in CentralCalls too.
func (l *LeaseLimiter) Refreshes() int64 { return l.refreshes.Load() }

// RefreshErrors returns how many of those fetches failed.
func (l *LeaseLimiter) RefreshErrors() int64 { return l.refreshErrs.Load() }

// LostTokens returns the leased tokens never spent: expired, or dropped by Drop.
func (l *LeaseLimiter) LostTokens() int64 { return l.lost.Load() }

// Outstanding returns the unspent, unexpired leased tokens of all keys at the latest request
// time seen: this gateway's share of the overspend bound. It locks every stripe in turn.
func (l *LeaseLimiter) Outstanding() int64 { return l.OutstandingAt(l.lastMs.Load()) }

// OutstandingAt is Outstanding at nowMs (Unix ms).
func (l *LeaseLimiter) OutstandingAt(nowMs int64) int64 {
	var n int64
	for i := range l.stripes {
		stripe := &l.stripes[i]
		stripe.mu.Lock()
		for _, e := range stripe.m {
			if nowMs < e.expiresAt {
				n += e.tokens
			}
		}
		stripe.mu.Unlock()
	}
	return n
}

// Drop simulates the death of the gateway: every lease is lost (counted in LostTokens), and a
// fetch in flight loses its grant too. The central bucket gets nothing back.
func (l *LeaseLimiter) Drop() {
	for i := range l.stripes {
		l.stripes[i].mu.Lock()
	}
	l.gen.Add(1)
	var n int64
	for i := range l.stripes {
		for _, e := range l.stripes[i].m {
			n += e.tokens
			e.tokens, e.expiresAt = 0, 0
		}
	}
	l.lost.Add(n)
	for i := range l.stripes {
		l.stripes[i].mu.Unlock()
	}
}

// Allow decides r at r.Now (time.Now when zero): from the key's lease when it holds r.Cost
// tokens, else after a fetch of max(size, missing) tokens, of which at least the missing ones
// must be granted. Remaining is the lease's unspent tokens (the central bucket's on a central
// denial); ResetAfter is 0 on lease decisions (the lease does not know the central bucket).
// A request whose fetch was still in flight when Drop ran is denied (RetryAfter 1 ms): its
// grant died with the gateway. Errors wrap the client's error (classify them with
// ClassifyError), ErrBadReply, ErrBadRequest or the waiting request's context error.
func (l *LeaseLimiter) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	for {
		last := l.lastMs.Load()
		if nowMs <= last || l.lastMs.CompareAndSwap(last, nowMs) {
			break
		}
	}
	var buf [maxStackKey]byte
	key := AppendKey(buf[:0], r.Tenant, r.Endpoint)
	stripe := &l.stripes[maphash.Bytes(l.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	e := stripe.m[string(key)] // no allocation: the compiler looks up without a string copy
	if e == nil {
		e = new(leaseEntry)
		stripe.m[string(key)] = e
	}
	src := Lease
	waited := false
	for {
		if e.tokens > 0 && nowMs >= e.expiresAt {
			l.lost.Add(e.tokens)
			e.tokens = 0
		}
		if e.tokens >= r.Cost {
			e.tokens -= r.Cost
			d := Decision{Allowed: true, Remaining: e.tokens, Source: src}
			if l.refresh && e.fetch == nil && e.tokens < l.size && nowMs >= e.refusedUntil &&
				(e.tokens <= l.lowMark || nowMs >= e.expiresAt-l.refreshMs) {
				l.startRefresh(e, string(key), nowMs)
			}
			stripe.mu.Unlock()
			return d, nil
		}
		if nowMs < e.refusedUntil && r.Cost >= e.refusedCost && e.fetch == nil {
			d := Decision{RetryAfter: time.Duration(e.refusedUntil-nowMs) * time.Millisecond, Remaining: e.tokens, Source: Lease}
			stripe.mu.Unlock()
			return d, nil
		}
		if l.refresh && (nowMs < e.drainedUntil || (e.fetch != nil && e.fetch.drained)) {
			// The last answer found the central bucket with less than one token: deny at once
			// and let one refresh collect what refilled for the requests after it, instead of
			// every request waiting a round trip for a token or two that only one of them can
			// have. However long that refresh takes (a loaded Redis, a failover), nobody waits.
			retry := time.Millisecond
			switch {
			case nowMs < e.refusedUntil:
				retry = time.Duration(e.refusedUntil-nowMs) * time.Millisecond
			case e.fetch == nil:
				l.startRefresh(e, string(key), nowMs).drained = true
			}
			d := Decision{RetryAfter: retry, Remaining: e.tokens, Source: Lease}
			stripe.mu.Unlock()
			return d, nil
		}
		if f := e.fetch; f != nil {
			stripe.mu.Unlock()
			if !waited {
				waited = true // counted once per decision, however many rounds it waits
				l.waited.Add(1)
			}
			if l.onWait != nil {
				l.onWait()
			}
			select {
			case <-f.done:
			case <-ctx.Done():
				return Decision{}, fmt.Errorf("limiter: lease %s: waiting for the fetch in flight: %w", string(key), ctx.Err())
			}
			if f.err != nil {
				return Decision{}, f.err
			}
			if f.granted == 0 {
				d := f.denial
				d.Source = Lease
				return d, nil
			}
			stripe.mu.Lock()
			continue
		}
		// This request fetches. need >= 1: the lease lacks need tokens for this request.
		if !waited {
			waited = true
			l.waited.Add(1)
		}
		need := r.Cost - e.tokens
		f := &leaseCall{done: make(chan struct{})}
		e.fetch = f
		gen := l.gen.Load()
		stripe.mu.Unlock()
		granted, denial, emptyMs, err := l.fetch(ctx, string(key), nowMs, max(l.size, need), need)
		stripe.mu.Lock()
		granted, denial = l.settle(e, f, gen, nowMs, need, granted, denial, emptyMs, err)
		if err != nil {
			stripe.mu.Unlock()
			return Decision{}, err
		}
		if granted == 0 {
			stripe.mu.Unlock()
			denial.Source = Central
			return denial, nil
		}
		// Requests spending from the lease meanwhile may have left it short again; then loop
		// and fetch again (each round spends or is refused, so the loop ends).
		src = Central
	}
}

// settle books the result of fetch f (started at generation gen by a request at nowMs that
// lacked need tokens) into e and wakes f's waiters. It returns the grant and the denial as the
// fetching request sees them: a grant that Drop overtook is lost. Called with e's stripe locked.
func (l *LeaseLimiter) settle(e *leaseEntry, f *leaseCall, gen, nowMs, need, granted int64, denial Decision, emptyMs int64, err error) (int64, Decision) {
	e.fetch = nil
	f.granted, f.denial, f.err = granted, denial, err
	if granted > 0 {
		if l.gen.Load() != gen {
			l.lost.Add(granted) // dropped while fetching: the grant is lost with the gateway
			granted, denial = 0, Decision{RetryAfter: time.Millisecond}
			f.granted, f.denial = granted, denial
		} else {
			// Leftover tokens join the new lease and live as long as it does.
			e.tokens += granted
			e.expiresAt = nowMs + l.ttlMs
			e.drainedUntil = 0
			if emptyMs >= 0 {
				// The central bucket is drained: once this lease is spent, deny locally
				// until it can hold a token again (RetryAfter says when).
				e.refusedUntil, e.refusedCost = nowMs+emptyMs, 1
				l.markDrained(e)
			}
		}
	} else if err == nil && denial.RetryAfter > 0 && denial.RetryAfter != RetryNever {
		e.refusedUntil, e.refusedCost = nowMs+denial.RetryAfter.Milliseconds(), need
		if need == 1 {
			l.markDrained(e) // less than one token: drained, as after a draining grant
		}
	}
	close(f.done)
	return granted, denial
}

// markDrained keeps e drained (refresh-ahead only) until one token's refill time after the
// later of refusedUntil and the latest request time seen: a fetch answers after its requests'
// clock has moved on, and the key's requests meanwhile must find it still drained. Called with
// e's stripe locked, after refusedUntil is set.
func (l *LeaseLimiter) markDrained(e *leaseEntry) {
	if l.refresh {
		e.drainedUntil = max(e.refusedUntil, l.lastMs.Load()) + l.drainGraceMs
	}
}

// startRefresh starts a top-up fetch of key's lease e in the background (refresh-ahead), dated
// nowMs: size - e.tokens tokens wanted, at least 1. Requests that the lease cannot pay
// meanwhile wait for it as for any fetch in flight. The fetch runs under the lease timeout
// only: no request's context owns it. Called with e's stripe locked.
func (l *LeaseLimiter) startRefresh(e *leaseEntry, key string, nowMs int64) *leaseCall {
	f := &leaseCall{done: make(chan struct{})}
	e.fetch = f
	gen := l.gen.Load()
	want := l.size - e.tokens
	l.refreshes.Add(1)
	stripe := &l.stripes[maphash.String(l.seed, key)&(numStripes-1)]
	l.refreshing.Add(1)
	go func() {
		defer l.refreshing.Done()
		ctx := context.Background()
		if l.timeout == 0 {
			// No request owns this fetch, so no caller's deadline bounds it.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
			defer cancel()
		}
		granted, denial, emptyMs, err := l.fetch(ctx, key, nowMs, want, 1)
		if err != nil {
			l.refreshErrs.Add(1)
		}
		stripe.mu.Lock()
		l.settle(e, f, gen, nowMs, 1, granted, denial, emptyMs, err)
		stripe.mu.Unlock()
	}()
	return f
}

// fetch runs lease.lua once for want tokens (at least least of them). It returns the grant, or 0
// and the central denial (Source unset). After a grant that drained the central bucket, emptyMs
// >= 0 is a lower bound on how long it stays without one whole token (see drainedForMs); it is
// -1 otherwise.
func (l *LeaseLimiter) fetch(ctx context.Context, key string, nowMs, want, least int64) (granted int64, d Decision, emptyMs int64, err error) {
	l.calls.Add(1)
	args := [...]any{nowMs, l.args.ratePerMs, l.args.capacity, want, least, l.args.ttlMs}
	var reply any
	if l.batch != nil {
		// The batcher applies the timeout itself; NOSCRIPT->EVAL happens inside the batch,
		// counted through its hook.
		reply, err = l.batch.run(ctx, l.timeout, l.sha, lua.Lease, key, args[:])
	} else {
		if l.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, l.timeout)
			defer cancel()
		}
		keys := []string{key}
		reply, err = l.c.EvalSha(ctx, l.sha, keys, args[:]...).Result()
		if err != nil && ClassifyError(err) == KindNoScript {
			// The one retry: EVAL runs the script and caches it on that node.
			l.noScript.Add(1)
			reply, err = l.c.Eval(ctx, lua.Lease, keys, args[:]...).Result()
		}
	}
	if err != nil {
		return 0, Decision{}, 0, fmt.Errorf("limiter: lease %s: %w", key, err)
	}
	granted, d, err = decodeLeaseReply(reply, want, least)
	if err != nil {
		return 0, Decision{}, 0, fmt.Errorf("limiter: lease %s: %w", key, err)
	}
	emptyMs = -1
	if granted > 0 {
		emptyMs = l.drainedForMs(reply)
	}
	return granted, d, emptyMs, nil
}

// drainedForMs reads a checked grant reply {granted, remaining, 0, reset_after_ms}. When the grant
// left the bucket with less than one whole token (remaining 0), the next fetch would be refused
// until one token has refilled; it returns a lower bound on that time in ms (0 if none is known:
// the bucket is drained all the same), so that the requests meanwhile are denied locally instead
// of each paying a refused round trip. On a saturated key that halves the fetches. It returns -1
// when the bucket kept a whole token.
//
// The bound: reset = ceil((burst - t) / r) for the tokens t left, so t < burst - (reset-1)*r and
// one token takes (1 - t) / r > reset - 1 - (burst-1)/r ms. One more ms is taken off for the
// rounding of the division. Other gateways only lower the bucket, so the bound holds for them too.
func (l *LeaseLimiter) drainedForMs(reply any) int64 {
	arr := reply.([]any) // decodeLeaseReply checked the shape
	remaining, reset := arr[1].(int64), arr[3].(int64)
	if remaining != 0 {
		return -1
	}
	lb := math.Floor(float64(reset) - 2 - float64(l.policy.Burst-1)/l.policy.PerMs())
	if !(lb >= 1) {
		return 0
	}
	return int64(lb)
}

// decodeLeaseReply checks lease.lua's reply {granted, remaining, retry_after_ms, reset_after_ms}
// for a call with want and least (ARGV min). It returns the grant and, when it is 0, the denial.
func decodeLeaseReply(v any, want, least int64) (int64, Decision, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 4 {
		return 0, Decision{}, fmt.Errorf("%w: lease.lua replied %T %v, want an array of 4 integers", ErrBadReply, v, v)
	}
	var n [4]int64
	for i, e := range arr {
		x, ok := e.(int64)
		if !ok {
			return 0, Decision{}, fmt.Errorf("%w: lease.lua reply element %d is %T %v, want an integer", ErrBadReply, i, e, e)
		}
		n[i] = x
	}
	granted, remaining, retry, reset := n[0], n[1], n[2], n[3]
	switch {
	case granted != 0 && (granted < least || granted > want):
		return 0, Decision{}, fmt.Errorf("%w: granted = %d, want 0 or %d..%d", ErrBadReply, granted, least, want)
	case remaining < 0:
		return 0, Decision{}, fmt.Errorf("%w: remaining = %d, want >= 0", ErrBadReply, remaining)
	case granted > 0 && retry != 0:
		return 0, Decision{}, fmt.Errorf("%w: retry_after_ms = %d with a grant, want 0", ErrBadReply, retry)
	case granted == 0 && retry != -1 && (retry < 1 || retry > maxExactMs):
		return 0, Decision{}, fmt.Errorf("%w: retry_after_ms = %d without a grant, want -1 or 1..%d", ErrBadReply, retry, maxExactMs)
	case reset < 0 || reset > maxExactMs:
		return 0, Decision{}, fmt.Errorf("%w: reset_after_ms = %d, want 0..%d", ErrBadReply, reset, maxExactMs)
	}
	if granted > 0 {
		return granted, Decision{}, nil
	}
	return 0, Decision{Remaining: remaining, RetryAfter: msDuration(retry), ResetAfter: msDuration(reset)}, nil
}
