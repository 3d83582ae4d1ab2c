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
//     envelope. A key's burst excess stays within the most tokens outstanding in its leases
//     at any moment (KeyOutstandingMax); OutstandingMax is the most over all keys at once.
//     Every grant itself conforms: allowed + Outstanding + LostTokens <= burst + rate*elapsed.
//   - False denies: leased tokens expire after the lease TTL (WithLeaseTTL, default
//     DefaultLeaseTTL, measured on the requests' clock) and are lost when the gateway dies
//     (Drop); the central bucket never gets them back.
//
// Time is the gateway's: r.Now in Unix ms is passed to the script, dates the lease and is every
// decision's Decision.At, whether the lease or the central bucket paid it. At most one fetch per
// key is in flight: other requests on the key that the lease cannot pay wait for it (or their
// context), then spend from the refilled lease; if that fetch was refused (the central bucket
// is empty) they are denied with its answer, and if it failed they get its error.
// The fetch runs under its own deadline (WithLeaseTimeout, default DefaultTimeout) derived from
// the fetching request's context; like RedisTokenBucket it never retries except one EVAL after
// NOSCRIPT. Build the client as RedisTokenBucket's doc says. With a client that can pipeline,
// concurrent fetches travel together, one pipeline per primary (WithLeaseBatching, on by default).
// A grant that drains the central bucket (less than one whole token left) also tells the gateway
// how long the bucket stays empty at least; requests the lease cannot pay meanwhile are denied
// locally, without a refused round trip each.
//
// A decision from the lease allocates nothing; a key's entry (72 bytes plus the key and map
// overhead) is kept for the limiter's life, like TokenBucket's. It is safe for concurrent use. The zero value is
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
	book     heldBook     // the tokens held in leases and their most (OutstandingMax)
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
	refreshing   sync.WaitGroup // fetches running in the background: refreshes, parked requests
	// slots bounds the background fetches sent at once (WithLeaseMaxFetches); the others wait
	// for a slot before their timeout starts.
	slots   chan struct{}
	onWait  func()         // test hook (lease_test.go): a request starts waiting for a fetch in flight
	batch   *scriptBatcher // fetches in pipelines (WithLeaseBatching); nil: one call each
	stripes [numStripes]leaseStripe
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
	// counted: tokens are in the limiter's held count (heldBook); queued: the expiry of the
	// newest heap entry for this lease; most: the most tokens the lease held in the count at
	// once (KeyOutstandingMax).
	counted bool
	queued  int64
	most    int64
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
	// waiters are the requests parked on this fetch by AllowAsync, woken by wake after settle;
	// owner is the one whose fetch it is (nil for Allow's and refresh-ahead's). Guarded by the
	// stripe's lock.
	waiters []*leaseWaiter
	owner   *leaseWaiter
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
	cfg := leaseConfig{ttl: DefaultLeaseTTL, timeout: DefaultTimeout, batching: canPipeline, maxFetches: DefaultLeaseMaxFetches}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.ttl < time.Millisecond {
		return nil, fmt.Errorf("%w: lease TTL %v: must be >= 1ms", ErrBadConfig, cfg.ttl)
	}
	if cfg.timeout < 0 {
		return nil, fmt.Errorf("%w: lease timeout %v: must be >= 0 (0 leaves only the caller's context deadline)", ErrBadConfig, cfg.timeout)
	}
	if cfg.maxFetches < 1 {
		return nil, fmt.Errorf("%w: lease max fetches %d: must be >= 1", ErrBadConfig, cfg.maxFetches)
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
		slots:   make(chan struct{}, cfg.maxFetches),
	}
	l.book.init()
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
		// No linger by default: a lease fetch holds every request on its key that the lease
		// cannot pay, so waiting to fill its pipeline would hold them all.
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
// time seen: what this gateway holds now (OutstandingMax is the most it held). It locks every
// stripe in turn.
func (l *LeaseLimiter) Outstanding() int64 { return l.OutstandingAt(l.lastMs.Load()) }

// OutstandingMax returns the most tokens this limiter's leases held at any moment so far, over
// all keys: granted, and not yet spent, expired or dropped, on the clock of Outstanding (the
// tokens a crash of this gateway could lose at worst). It is tracked exactly as grants, spends,
// expiries and drops happen, and costs one atomic load. A key's burst excess is bounded by its
// own leases: see KeyOutstandingMax.
func (l *LeaseLimiter) OutstandingMax() int64 { return l.book.most.Load() }

// KeyOutstandingMax calls fn with each key this limiter has leased tokens for and the most
// tokens its lease on the key held at any moment, on the clock of OutstandingMax. A key's
// burst excess stays within the most tokens outstanding in its leases at once, over every
// gateway: with one gateway that is this figure exactly; the sum of the gateways' figures for
// a key bounds it (and equals it when they all held their most at once). It is kept at each
// grant, under the key's lock, so a decision from the lease pays nothing for it. It locks every
// stripe in turn; fn must not call the limiter.
func (l *LeaseLimiter) KeyOutstandingMax(fn func(key string, most int64)) {
	for i := range l.stripes {
		stripe := &l.stripes[i]
		stripe.mu.Lock()
		for k, e := range stripe.m {
			if e.most > 0 {
				fn(k, e.most)
			}
		}
		stripe.mu.Unlock()
	}
}

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
			l.book.writeOff(e)
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
	at := decidedAt(r, nowMs)
	l.observe(nowMs)
	var buf [maxStackKey]byte
	key := AppendKey(buf[:0], r.Tenant, r.Endpoint)
	stripe, e := l.entry(key)
	src := Lease
	waited := false
	for {
		// The path most decisions take, its decision built here: the lease pays.
		if l.pay(e, key, nowMs, r.Cost) {
			d := Decision{Allowed: true, Remaining: e.tokens, Source: src, At: at}
			stripe.mu.Unlock()
			return d, nil
		}
		d, step := l.unpaid(e, key, nowMs, r.Cost)
		if step == stepDecided {
			stripe.mu.Unlock()
			d.At = at
			return d, nil
		}
		if !waited {
			waited = true // counted once per decision, however many rounds it waits
			l.waited.Add(1)
		}
		if step == stepWait {
			f := e.fetch
			stripe.mu.Unlock()
			if d, done, err := l.await(ctx, f, key); done {
				return withAt(d, at, err)
			}
			stripe.mu.Lock()
			continue
		}
		d, done, err := l.fetchFor(ctx, stripe, e, key, nowMs, r.Cost)
		if done {
			stripe.mu.Unlock()
			return withAt(d, at, err)
		}
		// Requests spending from the lease meanwhile may have left it short again; then loop
		// and fetch again (each round spends or is refused, so the loop ends).
		src = Central
	}
}

// entry returns key's stripe, locked, and key's lease in it (a new, empty one on first use).
func (l *LeaseLimiter) entry(key []byte) (*leaseStripe, *leaseEntry) {
	stripe := &l.stripes[maphash.Bytes(l.seed, key)&(numStripes-1)]
	stripe.mu.Lock()
	e := stripe.m[string(key)] // no allocation: the compiler looks up without a string copy
	if e == nil {
		e = new(leaseEntry)
		stripe.m[string(key)] = e
	}
	return stripe, e
}

// withAt returns d made at at, or err.
func withAt(d Decision, at time.Time, err error) (Decision, error) {
	if err != nil {
		return Decision{}, err
	}
	d.At = at
	return d, nil
}

// observe advances the latest request time seen (the clock of Outstanding) to nowMs, and takes
// the leases that expire by then out of the held count. Called with no stripe locked.
func (l *LeaseLimiter) observe(nowMs int64) {
	for {
		last := l.lastMs.Load()
		if nowMs <= last {
			return
		}
		if l.lastMs.CompareAndSwap(last, nowMs) {
			l.book.expire(nowMs)
			return
		}
	}
}

// denyLocally denies, without a round trip, a request for cost tokens on key at nowMs that
// lease e cannot pay, when the central bucket is known not to pay it either: it refused as many
// tokens until refusedUntil, or it is drained (refresh-ahead). ok is false when the request must
// wait for a fetch or start one. Called with e's stripe locked.
func (l *LeaseLimiter) denyLocally(e *leaseEntry, key []byte, nowMs, cost int64) (d Decision, ok bool) {
	if nowMs < e.refusedUntil && cost >= e.refusedCost && e.fetch == nil {
		return Decision{RetryAfter: time.Duration(e.refusedUntil-nowMs) * time.Millisecond, Remaining: e.tokens, Source: Lease}, true
	}
	if !l.refresh || !(nowMs < e.drainedUntil || (e.fetch != nil && e.fetch.drained)) {
		return Decision{}, false
	}
	// The last answer found the central bucket with less than one token: deny at once and let
	// one refresh collect what refilled for the requests after it, instead of every request
	// waiting a round trip for a token or two that only one of them can have. However long that
	// refresh takes (a loaded Redis, a failover), nobody waits.
	retry := time.Millisecond
	switch {
	case nowMs < e.refusedUntil:
		retry = time.Duration(e.refusedUntil-nowMs) * time.Millisecond
	case e.fetch == nil:
		l.startRefresh(e, string(key), nowMs).drained = true
	}
	return Decision{RetryAfter: retry, Remaining: e.tokens, Source: Lease}, true
}

// await waits, with key's stripe unlocked, for fetch f in flight on key. done is true when f's
// outcome decides the request: f's error, f's denial (Source Lease), or ctx's end; otherwise f
// brought tokens and the request tries the lease again.
func (l *LeaseLimiter) await(ctx context.Context, f *leaseCall, key []byte) (d Decision, done bool, err error) {
	if l.onWait != nil {
		l.onWait()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return Decision{}, true, fmt.Errorf("limiter: lease %s: waiting for the fetch in flight: %w", string(key), ctx.Err())
	}
	if f.err != nil {
		return Decision{}, true, f.err
	}
	if f.granted == 0 {
		d := f.denial
		d.Source = Lease
		return d, true, nil
	}
	return Decision{}, false, nil
}

// fetchFor runs the fetch of a request for cost tokens on key at nowMs that lease e cannot pay:
// it lacks need = cost - e.tokens >= 1 tokens, so max(size, need) are wanted and at least need
// must be granted. Meanwhile the fetch is e's fetch in flight and stripe is unlocked; it is
// locked again when fetchFor returns. done is true when the fetch decides the request: its error
// or the central denial (Source Central); otherwise the grant joined the lease.
func (l *LeaseLimiter) fetchFor(ctx context.Context, stripe *leaseStripe, e *leaseEntry, key []byte, nowMs, cost int64) (d Decision, done bool, err error) {
	need := cost - e.tokens
	f := &leaseCall{done: make(chan struct{})}
	e.fetch = f
	gen := l.gen.Load()
	stripe.mu.Unlock()
	granted, denial, emptyMs, err := l.fetch(ctx, string(key), nowMs, max(l.size, need), need)
	stripe.mu.Lock()
	granted, denial = l.settle(stripe, e, f, gen, nowMs, need, granted, denial, emptyMs, err)
	if len(f.waiters) > 0 {
		// Requests that AllowAsync parked on this fetch: answered with the stripe unlocked,
		// then this request tries the lease again as usual.
		out := l.wake(stripe, e, f)
		stripe.mu.Unlock()
		deliver(out)
		stripe.mu.Lock()
	}
	if err != nil {
		return Decision{}, true, err
	}
	if granted == 0 {
		denial.Source = Central
		return denial, true, nil
	}
	return Decision{}, false, nil
}
