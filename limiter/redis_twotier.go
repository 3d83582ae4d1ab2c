package limiter

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// RedisTwoTier decides each request with one run of lua/two_tier.lua on the tenant's quota key
// QuotaKey(tenant, floor(now_ms / QuotaWindow)) and the endpoint's bucket key KeyFor(tenant,
// endpoint): both under the {tenant} hash tag, so one slot and one atomic script. It runs like
// RedisTokenBucket (EVALSHA, one EVAL on NOSCRIPT, no other retry, WithTimeout per decision;
// build the client as RedisTokenBucket's doc says). TwoTier is its in-memory twin. The bucket
// hash is the one token_bucket.lua keeps, so RedisTokenBucket with the same BucketPolicy may
// decide the same key. It is safe for concurrent use.
type RedisTwoTier struct {
	s      *windowScript // client, script, timeout and NOSCRIPT count; its call pool is unused
	policy TwoTierPolicy
	window int64 // QuotaWindow in ms
	// The script's policy arguments, formatted and boxed once.
	rate, capacity, bucketTTL, quota, quotaTTL, windowArg any
	calls                                                 sync.Pool // *twoTierCall
}

// twoTierCall holds one call's KEYS and ARGV, reused through a sync.Pool: go-redis copies both
// into its own command before EvalSha returns.
type twoTierCall struct {
	keys [2]string
	args [9]any
}

var _ Limiter = (*RedisTwoTier)(nil)

// NewRedisTwoTier returns a two-tier limiter with policy p stored in Redis through c (a
// *redis.ClusterClient or *redis.Client). It sends nothing to Redis; Load warms the script
// caches. WithPolicyFunc and WithRedisClock are refused (ErrBadConfig).
func NewRedisTwoTier(c redis.Scripter, p TwoTierPolicy, opts ...Option) (*RedisTwoTier, error) {
	if _, err := newTwoTierConfig(p, opts); err != nil {
		return nil, err
	}
	s, err := newWindowScript(c, "two tier", lua.TwoTier, opts)
	if err != nil {
		return nil, err
	}
	pa := newPolicyArgs(p.Bucket)
	t := &RedisTwoTier{
		s: s, policy: p, window: p.QuotaWindow.Milliseconds(),
		rate: pa.ratePerMs, capacity: pa.capacity, bucketTTL: pa.ttlMs,
		quota:     strconv.FormatInt(p.Quota, 10),
		quotaTTL:  strconv.FormatInt(p.QuotaTTL().Milliseconds(), 10),
		windowArg: strconv.FormatInt(p.QuotaWindow.Milliseconds(), 10),
	}
	t.calls.New = func() any { return new(twoTierCall) }
	return t, nil
}

// Load sends SCRIPT LOAD (to every node of a ClusterClient) and checks the returned hash.
func (t *RedisTwoTier) Load(ctx context.Context) error { return t.s.load(ctx) }

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (t *RedisTwoTier) NoScriptFallbacks() int64 { return t.s.noScript.Load() }

// Allow decides r at r.Now (time.Now when zero) with one script call. Errors wrap the client's
// error (classify them with ClassifyError), ErrBadReply or ErrBadRequest.
func (t *RedisTwoTier) Allow(ctx context.Context, r Request) (Decision, error) {
	d, _, err := t.AllowTier(ctx, r)
	return d, err
}

// AllowTier is Allow that also returns the tier that denied the request (TierNone if allowed).
func (t *RedisTwoTier) AllowTier(ctx context.Context, r Request) (Decision, Tier, error) {
	nowMs, err := twoTierRequestMs(r)
	if err != nil {
		return Decision{}, TierNone, err
	}
	if t.s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.s.timeout)
		defer cancel()
	}
	idx := nowMs / t.window
	call := t.calls.Get().(*twoTierCall)
	call.keys = [2]string{QuotaKey(r.Tenant, idx), KeyFor(r.Tenant, r.Endpoint)}
	call.args = [9]any{nowMs, t.rate, t.capacity, r.Cost, t.bucketTTL, t.quota, t.quotaTTL, t.windowArg, idx}
	reply, err := t.s.c.EvalSha(ctx, t.s.sha, call.keys[:], call.args[:]...).Result()
	if err != nil && ClassifyError(err) == KindNoScript {
		// The node lost its script cache: EVAL runs and caches it. The one retry.
		t.s.noScript.Add(1)
		if t.s.onNoScript != nil {
			t.s.onNoScript()
		}
		reply, err = t.s.c.Eval(ctx, t.s.src, call.keys[:], call.args[:]...).Result()
	}
	key := call.keys[1]
	*call = twoTierCall{} // keep no key or boxed value alive in the pool
	t.calls.Put(call)
	if err != nil {
		return Decision{}, TierNone, fmt.Errorf("limiter: two tier %s: %w", key, err)
	}
	d, tier, err := decodeTwoTierReply(reply)
	if err != nil {
		return Decision{}, TierNone, fmt.Errorf("limiter: two tier %s: %w", key, err)
	}
	d.Source, d.At = Central, decidedAt(r, nowMs)
	return d, tier, nil
}

// decodeTwoTierReply decodes {allowed, remaining, retry_after_ms, reset_after_ms, tier_denied}:
// the first four as decodeReply does, then a tier that is 0 exactly when allowed. Any other
// shape is an error wrapping ErrBadReply; it allocates only when it fails.
func decodeTwoTierReply(v any) (Decision, Tier, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 5 {
		return Decision{}, TierNone, fmt.Errorf("%w: got %T %v, want an array of 5 integers (%v, tier_denied)", ErrBadReply, v, v, replyFields)
	}
	d, err := decodeReply(arr[:4])
	if err != nil {
		return Decision{}, TierNone, err
	}
	tier, ok := arr[4].(int64)
	switch {
	case !ok:
		return Decision{}, TierNone, fmt.Errorf("%w: tier_denied is %T %v, want an integer", ErrBadReply, arr[4], arr[4])
	case d.Allowed && tier != 0, !d.Allowed && tier != int64(TierBucket) && tier != int64(TierQuota):
		return Decision{}, TierNone, fmt.Errorf("%w: tier_denied = %d with allowed = %v, want 0 when allowed, else 1 or 2", ErrBadReply, tier, d.Allowed)
	}
	return d, Tier(tier), nil
}
