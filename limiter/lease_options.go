package limiter

import "time"

// LeaseOption configures NewLeaseLimiter.
type LeaseOption func(*leaseConfig)

type leaseConfig struct {
	ttl, timeout time.Duration
	batching     bool
	batch        []CoalesceOption
	refresh      float64
	maxFetches   int
}

// DefaultLeaseMaxFetches is how many background fetches (refresh-ahead, and the fetches of
// requests parked by AllowAsync) one LeaseLimiter sends at once by default: two full pipelines'
// worth. A Redis that CPU contention slows to a few thousand scripts per second answers that
// many in flight well within a 50 ms timeout (in flight = rate x time), where four times as many
// would time out and fail every request parked long on them.
const DefaultLeaseMaxFetches = 2 * DefaultBatchSize

// DefaultLeaseFlushers is how many pipelines of lease fetches one node may have in flight. A
// fetch holds every request of its key that the lease cannot pay, so fetches are not held back
// for deeper pipelines as the coalescing bucket's decisions are (DefaultFlushers).
const DefaultLeaseFlushers = 4

// WithLeaseMaxFetches bounds the background fetches (refresh-ahead, and the fetches of requests
// parked by AllowAsync) that are sent at once to n (default DefaultLeaseMaxFetches); the others
// wait for one of them to answer, and their timeout starts when they are sent. Without a bound
// a cold start or a slow Redis would queue thousands of fetches in the pipelines, each one's
// timeout running while it waits its turn, and a fetch that times out fails every request
// parked on it: the bound keeps the queue in the gateway, where waiting fails nobody. Allow's own
// fetches are bounded by its callers, and are not counted.
func WithLeaseMaxFetches(n int) LeaseOption { return func(c *leaseConfig) { c.maxFetches = n } }

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
// A drained key (a hot one whose central bucket the last answer found with less than one token,
// including the top-up that spending the tokens of such an answer starts) is refreshed the same
// way and never makes a request wait: until the central bucket could pay
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
// defaults DefaultBatchSize, no window, DefaultLeaseFlushers). It is on by default when the client can
// pipeline (a *redis.ClusterClient or *redis.Client): a busy gateway over many keys makes many
// fetches at once, and a pipeline pays one round trip and one system call for all of them
// instead of one each. Each fetch keeps its own deadline; results, NOSCRIPT->EVAL and errors
// are those of a plain call.
func WithLeaseBatching(on bool, opts ...CoalesceOption) LeaseOption {
	return func(c *leaseConfig) { c.batching, c.batch = on, append(c.batch, opts...) }
}
