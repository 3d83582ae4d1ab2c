package limiter

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// RedisTokenBucket decides each request with one run of lua/token_bucket.lua on the request's
// key (rl:{tenant}:endpoint): EVALSHA of the script hashed once at construction, and on a
// NOSCRIPT reply one EVAL (which also caches the script on that node). TokenBucket is its
// in-memory twin and returns the same decisions.
//
// Time is the gateway's: r.Now in Unix ms is passed to the script, which never lets a key's
// stored time go backwards. With WithRedisClock the script takes now from Redis's TIME instead
// and r.Now is only checked, not used; the script returns that TIME, which becomes Decision.At
// (r.Now otherwise). Each decision runs under its own deadline (WithTimeout,
// default DefaultTimeout).
//
// The limiter never retries, except the single NOSCRIPT->EVAL step. Build the go-redis client so
// that it does not retry or stall either:
//
//	redis.NewClusterClient(&redis.ClusterOptions{
//		Addrs:                 addrs,
//		MaxRetries:            -1,   // no hidden retries: a failure is a counted decision error
//		DialerRetries:         1,    // the pool re-dials 5 times, 100 ms apart, by default
//		ContextTimeoutEnabled: true, // without it go-redis ignores the per-decision deadline
//	})
//
// The cluster client still follows MOVED/ASK redirections itself (MaxRedirects, default 3).
// RedisTokenBucket is safe for concurrent use.
type RedisTokenBucket struct {
	c          redis.Scripter
	src, sha   string
	policy     BucketPolicy
	args       policyArgs
	policyFor  PolicyFunc
	timeout    time.Duration
	onNoScript func()
	nargs      int       // 5, or 6 with WithRedisClock (ARGV[6] = clockRedis)
	slow       bool      // WithDurability in a wait mode or WithAudit: Allow takes allowSlow
	wait       *waiter   // nil: async
	nodes      primaries // the key's primary, for the wait modes
	audit      bool      // WithAudit: KEYS[2] is the audit counter
	auditRun   string    // WithAudit's run: the counters' name (AuditKey)
	noScript   atomic.Int64
	calls      sync.Pool // *evalCall
}

// policyArgs are a policy's three script arguments, formatted and boxed once: copying an
// interface value into an argument slice allocates nothing.
type policyArgs struct {
	ratePerMs, capacity, ttlMs any
}

func newPolicyArgs(p BucketPolicy) policyArgs {
	return policyArgs{
		// Shortest decimal that parses back to the same double: the script's rate is Go's rate.
		ratePerMs: strconv.FormatFloat(p.PerMs(), 'g', -1, 64),
		capacity:  strconv.FormatInt(p.Burst, 10),
		ttlMs:     strconv.FormatInt(p.TTL().Milliseconds(), 10),
	}
}

// evalCall holds one call's KEYS and ARGV, reused through a sync.Pool. go-redis copies both into
// its own command before EvalSha returns, so a call may be reused as soon as the reply is read.
type evalCall struct {
	keys [1]string
	args [6]any
}

var _ Limiter = (*RedisTokenBucket)(nil)

// NewRedisTokenBucket returns a token bucket with policy p (or the policy of WithPolicyFunc)
// stored in Redis through c, a *redis.ClusterClient or *redis.Client. It hashes the script once
// and sends nothing to Redis; call Load to warm the script caches before a measurement.
func NewRedisTokenBucket(c redis.Scripter, p BucketPolicy, opts ...Option) (*RedisTokenBucket, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: client is nil: pass a *redis.ClusterClient or *redis.Client", ErrBadConfig)
	}
	if err := checkPolicy(p); err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	b := &RedisTokenBucket{
		c:          c,
		src:        lua.TokenBucket,
		sha:        redis.NewScript(lua.TokenBucket).Hash(),
		policy:     p,
		args:       newPolicyArgs(p),
		policyFor:  cfg.policyFor,
		timeout:    cfg.timeout,
		onNoScript: cfg.onNoScript,
		nargs:      5,
	}
	if cfg.redisClock {
		b.nargs = 6
	}
	if b.wait, err = cfg.durability.waiter(false); err != nil {
		return nil, err
	}
	if b.wait != nil {
		if b.nodes, err = newPrimaries(c); err != nil {
			return nil, err
		}
		b.timeout = b.wait.extend(b.timeout)
	}
	b.audit, b.auditRun = cfg.audit, cfg.auditRun
	b.slow = b.wait != nil || b.audit
	b.calls.New = func() any { return new(evalCall) }
	return b, nil
}

// Load sends SCRIPT LOAD (a ClusterClient sends it to every node, replicas included, so a
// replica promoted later has it too) so that decisions do not pay NOSCRIPT->EVAL. It checks
// that Redis hashed the script as Go did. A node restarted or added later still needs the
// fallback.
func (b *RedisTokenBucket) Load(ctx context.Context) error {
	return loadScript(ctx, b.c, "token bucket", b.src, b.sha)
}

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (b *RedisTokenBucket) NoScriptFallbacks() int64 { return b.noScript.Load() }

// Allow decides r at r.Now (time.Now when zero) with one script call on r's key. Errors wrap the
// client's error (classify them with ClassifyError), ErrBadReply or ErrBadRequest.
func (b *RedisTokenBucket) Allow(ctx context.Context, r Request) (Decision, error) {
	if b.slow {
		return b.allowSlow(ctx, r)
	}
	argv, at, err := bucketArgs(r, b.policy, &b.args, b.policyFor)
	if err != nil {
		return Decision{}, err
	}
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}

	call := b.calls.Get().(*evalCall)
	call.keys[0] = KeyFor(r.Tenant, r.Endpoint)
	call.args = argv
	reply, err := b.c.EvalSha(ctx, b.sha, call.keys[:], call.args[:b.nargs]...).Result()
	if err != nil && ClassifyError(err) == KindNoScript {
		// The node lost its script cache (restart, flush, promoted replica). EVAL runs the
		// script and caches it there; this is the one retry the limiter makes.
		b.noScriptFallback()
		reply, err = b.c.Eval(ctx, b.src, call.keys[:], call.args[:b.nargs]...).Result()
	}
	key := call.keys[0]
	*call = evalCall{} // keep no key or boxed value alive in the pool
	b.calls.Put(call)
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: token bucket %s: %w", key, err)
	}
	d, err := decodeBucketReply(reply, b.nargs, at)
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: token bucket %s: %w", key, err)
	}
	d.Source = Central
	return d, nil
}

// decodeBucketReply decodes token_bucket.lua's reply to a call with nargs ARGV: with the Redis
// clock (6) the script's own now_ms becomes Decision.At; with the gateway's (5) At is at, the
// request's time. RedisTokenBucket and CoalescingBucket both decode here.
func decodeBucketReply(reply any, nargs int, at time.Time) (Decision, error) {
	if nargs == 6 {
		return decodeTimedReply(reply)
	}
	d, err := decodeReply(reply)
	if err != nil {
		return Decision{}, err
	}
	d.At = at
	return d, nil
}

// bucketArgs checks r and returns the token-bucket script's ARGV for it (now, rate per ms,
// capacity, cost, TTL, clock mode), with r's own policy when policyFor gives one, and r's time
// on the gateway clock (Decision.At without WithRedisClock). RedisTokenBucket and
// CoalescingBucket both build their calls here, so the two transports send the same script call
// for the same request.
func bucketArgs(r Request, policy BucketPolicy, args *policyArgs, policyFor PolicyFunc) ([6]any, time.Time, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return [6]any{}, time.Time{}, err
	}
	if policyFor != nil {
		p, err := checkedPolicy(policyFor(r.Tenant, r.Endpoint), policy, r)
		if err != nil {
			return [6]any{}, time.Time{}, err
		}
		if p != policy {
			pa := newPolicyArgs(p)
			args = &pa
		}
	}
	return [6]any{nowMs, args.ratePerMs, args.capacity, r.Cost, args.ttlMs, clockRedis}, decidedAt(r, nowMs), nil
}
