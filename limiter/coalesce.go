package limiter

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// Defaults of CoalescingBucket.
const (
	// DefaultBatchSize is the most decisions one pipeline carries.
	DefaultBatchSize = 64
	// DefaultBatchWindow is how long a flusher waits for a batch to fill once it has one
	// decision. 0: no wait. A batch is then whatever queued while the node's other pipelines
	// were on the wire, so an idle limiter adds no latency and a busy one batches by itself.
	DefaultBatchWindow = 0
	// DefaultFlushers is the number of pipelines one node may have in flight at once. Two, not
	// four: with fewer pipelines in flight each carries more decisions, so a primary reads more
	// script calls per system call and the client writes fewer; on hot-tenant that bought more
	// decisions per core and a lower p99 (results/studies/hot-tenant-central.md).
	DefaultFlushers = 2
	// DefaultBatchLinger is how long a flusher waits for its batch to fill while another of
	// the node's pipelines is in flight (WithBatchLinger). Without it a flusher whose pipeline
	// just came back sends whatever queued meanwhile, before the callers it just answered can
	// ask again, and its pipeline leaves part empty. `ratelab bench --linger` measures what the
	// wait buys. An idle limiter (at most one pipeline per node) never waits.
	DefaultBatchLinger = 100 * time.Microsecond
)

// PipelineScripter is the client CoalescingBucket needs: scripts plus pipelines. Both
// *redis.ClusterClient and *redis.Client are one. A client that also has
// MasterForKey(ctx, key) (*redis.Client, error), as *redis.ClusterClient does, gets one batch
// queue per primary; any other gets one queue.
type PipelineScripter interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
}

// masterResolver finds the primary that owns a key's slot (go-redis's own slot map).
type masterResolver interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
}

// CoalescingBucket is RedisTokenBucket with request coalescing: concurrent Allow calls are
// queued per primary (slot -> node, from the client's slot map) and sent as one pipeline of
// EVALSHAs, flushed when it holds WithBatchSize decisions or when WithBatchWindow has passed
// (0: at once). Each caller waits for its own reply, so decisions, Remaining, RetryAfter and
// errors are those of RedisTokenBucket: the same script, on the same key, with the same
// arguments. Only the transport differs: a pipeline pays one round trip and one system call
// for many decisions, which is where plain calls spend most of their time.
//
// Redirections: a batch runs as a pipeline of the cluster client, which follows MOVED and ASK
// per command (MaxRedirects) and reloads its slot map; the next decisions then queue at the new
// owner, because the queue is picked from the client's slot map on every call.
//
// NOSCRIPT: the commands of a batch that met NOSCRIPT are sent again as EVAL in one more
// pipeline (EVAL also caches the script on that node). That is the only retry, as in
// RedisTokenBucket; each counts in NoScriptFallbacks and calls WithOnNoScript's function, from
// the flushing goroutine.
//
// Deadlines: each call has its own (the caller's context, bounded by WithTimeout, default
// DefaultTimeout) and returns when it passes, whether or not its batch has been sent. A call
// whose deadline passed before its batch was flushed is not sent at all; a batch runs under the
// latest deadline of its members. Like RedisTokenBucket, a timed-out decision may still have
// run in Redis.
//
// go-redis v9.23 has its own automatic pipelining, (*redis.ClusterClient).AutoPipeline(): it
// returns an *AutoPipeliner, which is a redis.Scripter, so RedisTokenBucket over it is the
// "go-redis AutoPipeline" variant and needs no limiter of its own. It is experimental and
// hides redirections from per-node hooks in its full-duplex mode; CoalescingBucket keeps the
// limiter's deadline and NOSCRIPT semantics in ratelab's own code; `ratelab bench` measures
// both side by side (studies/bench).
//
// Build the client as RedisTokenBucket's doc says, with a pool of at least WithFlushers
// connections per node. CoalescingBucket is safe for concurrent use.
type CoalescingBucket struct {
	c         PipelineScripter
	src, sha  string
	policy    BucketPolicy
	args      policyArgs
	policyFor PolicyFunc
	timeout   time.Duration
	nargs     int
	audit     bool   // WithAudit: KEYS[2] is the audit counter
	auditRun  string // WithAudit's run: the counters' name (AuditKey)
	batch     *scriptBatcher
}

var _ Limiter = (*CoalescingBucket)(nil)

// CoalesceOption configures NewCoalescingBucket.
type CoalesceOption func(*coalesceConfig)

type coalesceConfig struct {
	batchSize, flushers int
	window, linger      time.Duration
	bucket              []Option
}

// check reports the first option out of range (CoalescingBucket's and the lease's batching).
func (cc coalesceConfig) check() error {
	switch {
	case cc.batchSize < 1:
		return fmt.Errorf("%w: batch size %d: must be >= 1 decisions per pipeline (default %d)", ErrBadConfig, cc.batchSize, DefaultBatchSize)
	case cc.window < 0:
		return fmt.Errorf("%w: batch window %v: must be >= 0 (0 flushes at once)", ErrBadConfig, cc.window)
	case cc.linger < 0:
		return fmt.Errorf("%w: batch linger %v: must be >= 0 (0 flushes at once; default %v)", ErrBadConfig, cc.linger, DefaultBatchLinger)
	case cc.flushers < 1:
		return fmt.Errorf("%w: flushers %d: must be >= 1 pipelines in flight per node (default %d)", ErrBadConfig, cc.flushers, DefaultFlushers)
	}
	return nil
}

// WithBatchSize sets the most decisions one pipeline carries (default DefaultBatchSize); a
// queue that reaches it is flushed without waiting for the window. Must be >= 1.
func WithBatchSize(n int) CoalesceOption { return func(c *coalesceConfig) { c.batchSize = n } }

// WithBatchWindow sets how long a flusher waits for its batch to fill (default
// DefaultBatchWindow, 0 = no wait). Must be >= 0.
func WithBatchWindow(d time.Duration) CoalesceOption {
	return func(c *coalesceConfig) { c.window = d }
}

// WithBatchLinger sets how long a flusher waits for a batch to fill while another pipeline of
// the same node is in flight (default DefaultBatchLinger for CoalescingBucket, 0 for lease
// fetches; 0 = no wait); a batch that fills is sent at once. Unlike WithBatchWindow it costs
// no latency when the node has a single pipeline going. Must be >= 0.
func WithBatchLinger(d time.Duration) CoalesceOption {
	return func(c *coalesceConfig) { c.linger = d }
}

// WithFlushers sets how many pipelines one node may have in flight (default DefaultFlushers).
// Must be >= 1.
func WithFlushers(n int) CoalesceOption { return func(c *coalesceConfig) { c.flushers = n } }

// WithBucketOptions passes RedisTokenBucket's options (WithTimeout, WithPolicyFunc,
// WithOnNoScript, WithRedisClock, WithDurability, WithAudit); they mean the same here, and
// WithDurability also takes DurabilityWaitPipeline.
func WithBucketOptions(opts ...Option) CoalesceOption {
	return func(c *coalesceConfig) { c.bucket = append(c.bucket, opts...) }
}

// NewCoalescingBucket returns a coalescing token bucket with policy p through c. It hashes the
// script once and sends nothing to Redis; call Load before a measurement.
func NewCoalescingBucket(c PipelineScripter, p BucketPolicy, opts ...CoalesceOption) (*CoalescingBucket, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: client is nil: pass a *redis.ClusterClient or *redis.Client", ErrBadConfig)
	}
	if err := checkPolicy(p); err != nil {
		return nil, err
	}
	cc := coalesceConfig{batchSize: DefaultBatchSize, window: DefaultBatchWindow, linger: DefaultBatchLinger, flushers: DefaultFlushers}
	for _, o := range opts {
		o(&cc)
	}
	if err := cc.check(); err != nil {
		return nil, err
	}
	cfg, err := newConfig(cc.bucket)
	if err != nil {
		return nil, err
	}
	b := &CoalescingBucket{
		c:         c,
		src:       lua.TokenBucket,
		sha:       redis.NewScript(lua.TokenBucket).Hash(),
		policy:    p,
		args:      newPolicyArgs(p),
		policyFor: cfg.policyFor,
		timeout:   cfg.timeout,
		nargs:     5,
		batch:     newScriptBatcher(c, cc, cfg.onNoScript),
	}
	if cfg.redisClock {
		b.nargs = 6
	}
	if b.batch.wait, err = cfg.durability.waiter(true); err != nil {
		return nil, err
	}
	if b.batch.wait != nil {
		if b.batch.nodes, err = newPrimaries(c); err != nil {
			return nil, err
		}
		b.timeout = b.batch.wait.extend(b.timeout)
	}
	b.audit, b.auditRun = cfg.audit, cfg.auditRun
	return b, nil
}

// Load sends SCRIPT LOAD (to every node through a ClusterClient) and checks the hash.
func (b *CoalescingBucket) Load(ctx context.Context) error {
	return loadScript(ctx, b.c, "coalescing token bucket", b.src, b.sha)
}

// Batches returns how many pipelines were sent (a NOSCRIPT retry pipeline counts too).
func (b *CoalescingBucket) Batches() int64 { return b.batch.batches.Load() }

// Sent returns how many decisions were sent to Redis in those pipelines (retries included).
func (b *CoalescingBucket) Sent() int64 { return b.batch.sent.Load() }

// NoScriptFallbacks returns how many decisions met NOSCRIPT and were sent again as EVAL.
func (b *CoalescingBucket) NoScriptFallbacks() int64 { return b.batch.noScript.Load() }

// Close waits for what is queued to be sent. Allow then fails with an error wrapping
// redis.ErrClosed. Close does not close the client. An idle CoalescingBucket holds no
// goroutine, so not calling Close leaks nothing.
func (b *CoalescingBucket) Close() error {
	b.batch.close()
	return nil
}

// Allow decides r at r.Now (time.Now when zero) with one script call on r's key, sent in the
// next pipeline to the key's primary. Errors are RedisTokenBucket's, plus the caller's context
// error when it ends before the reply.
func (b *CoalescingBucket) Allow(ctx context.Context, r Request) (Decision, error) {
	argv, at, err := bucketArgs(r, b.policy, &b.args, b.policyFor)
	if err != nil {
		return Decision{}, err
	}
	key, audit := KeyFor(r.Tenant, r.Endpoint), ""
	if b.audit {
		if err := checkAuditable(r); err != nil {
			return Decision{}, err
		}
		audit = AuditKey(r.Tenant, r.Endpoint, b.auditRun)
	}
	reply, short, err := b.batch.run(ctx, b.timeout, b.sha, b.src, key, audit, argv[:b.nargs])
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: coalescing token bucket %s: %w", key, err)
	}
	d, err := decodeBucketReply(reply, b.nargs, at)
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: coalescing token bucket %s: %w", key, err)
	}
	d.Source = Central
	if err := unreplicated(&d, !short, key, b.batch.wait); err != nil {
		return Decision{}, err
	}
	return d, nil
}
