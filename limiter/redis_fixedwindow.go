package limiter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// RedisFixedWindow decides each request with one run of lua/fixed_window.lua on the counter key
// of the request's window, FixedWindowKey(tenant, endpoint, floor(now_ms / W)). It runs like
// RedisTokenBucket (EVALSHA, one EVAL on NOSCRIPT, no other retry, WithTimeout per decision;
// build the client as RedisTokenBucket's doc says). FixedWindow is its in-memory twin.
// It is safe for concurrent use.
type RedisFixedWindow struct {
	s                        *windowScript
	policy                   FixedWindowPolicy
	windowArg, limitArg, ttl any // formatted and boxed once
}

var _ Limiter = (*RedisFixedWindow)(nil)

// NewRedisFixedWindow returns a fixed-window limiter with policy p stored in Redis through c
// (a *redis.ClusterClient or *redis.Client). It sends nothing to Redis; Load warms the script
// caches. WithPolicyFunc is refused (ErrBadConfig).
func NewRedisFixedWindow(c redis.Scripter, p FixedWindowPolicy, opts ...Option) (*RedisFixedWindow, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: fixed window policy: %w", ErrBadConfig, err)
	}
	s, err := newWindowScript(c, "fixed window", lua.FixedWindow, opts)
	if err != nil {
		return nil, err
	}
	return &RedisFixedWindow{
		s: s, policy: p,
		windowArg: strconv.FormatInt(p.Window.Milliseconds(), 10),
		limitArg:  strconv.FormatInt(p.Limit, 10),
		ttl:       strconv.FormatInt(p.TTL().Milliseconds(), 10),
	}, nil
}

// Load sends SCRIPT LOAD (to every node of a ClusterClient) and checks the returned hash.
func (f *RedisFixedWindow) Load(ctx context.Context) error { return f.s.load(ctx) }

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (f *RedisFixedWindow) NoScriptFallbacks() int64 { return f.s.noScript.Load() }

// Allow decides r at r.Now (time.Now when zero) with one script call. Errors wrap the client's
// error (classify them with ClassifyError), ErrBadReply or ErrBadRequest.
func (f *RedisFixedWindow) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	idx := nowMs / f.policy.Window.Milliseconds()
	call := f.s.get()
	call.keys[0] = FixedWindowKey(r.Tenant, r.Endpoint, idx)
	call.nkey = 1
	call.args = [7]any{nowMs, f.windowArg, idx, f.limitArg, r.Cost, f.ttl}
	call.narg = 6
	return f.s.run(ctx, call, decidedAt(r, nowMs))
}
