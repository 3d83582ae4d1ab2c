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
		cc := coalesceConfig{batchSize: DefaultBatchSize, window: DefaultBatchWindow, flushers: DefaultLeaseFlushers}
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
