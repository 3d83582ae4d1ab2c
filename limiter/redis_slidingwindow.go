package limiter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// RedisSlidingWindow decides each request with one run of lua/sliding_window.lua on the counter
// keys of the request's window and the one before, SlidingWindowKey(tenant, endpoint, index) and
// index - 1 (one hash tag, so one slot). It runs like RedisTokenBucket (EVALSHA, one EVAL on
// NOSCRIPT, no other retry, WithTimeout per decision). SlidingWindow is its in-memory twin. It is
// safe for concurrent use.
type RedisSlidingWindow struct {
	s                        *windowScript
	policy                   SlidingWindowPolicy
	windowArg, limitArg, ttl any // formatted and boxed once
}

var _ Limiter = (*RedisSlidingWindow)(nil)

// NewRedisSlidingWindow returns a sliding-window counter with policy p stored in Redis through c
// (a *redis.ClusterClient or *redis.Client). It sends nothing to Redis; Load warms the script
// caches. WithPolicyFunc is refused (ErrBadConfig).
func NewRedisSlidingWindow(c redis.Scripter, p SlidingWindowPolicy, opts ...Option) (*RedisSlidingWindow, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: sliding window policy: %w", ErrBadConfig, err)
	}
	s, err := newWindowScript(c, "sliding window", lua.SlidingWindow, opts)
	if err != nil {
		return nil, err
	}
	return &RedisSlidingWindow{
		s: s, policy: p,
		windowArg: strconv.FormatInt(p.Window.Milliseconds(), 10),
		limitArg:  strconv.FormatInt(p.Limit, 10),
		ttl:       strconv.FormatInt(p.TTL().Milliseconds(), 10),
	}, nil
}

// Load sends SCRIPT LOAD (to every node of a ClusterClient) and checks the returned hash.
func (s *RedisSlidingWindow) Load(ctx context.Context) error { return s.s.load(ctx) }

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (s *RedisSlidingWindow) NoScriptFallbacks() int64 { return s.s.noScript.Load() }

// Allow decides r at r.Now (time.Now when zero) with one script call. Errors wrap the client's
// error (classify them with ClassifyError), ErrBadReply or ErrBadRequest.
func (s *RedisSlidingWindow) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	idx := nowMs / s.policy.Window.Milliseconds()
	call := s.s.get()
	call.keys = [2]string{SlidingWindowKey(r.Tenant, r.Endpoint, idx), SlidingWindowKey(r.Tenant, r.Endpoint, idx-1)}
	call.nkey = 2
	call.args = [7]any{nowMs, s.windowArg, idx, s.limitArg, r.Cost, s.ttl}
	call.narg = 6
	return s.s.run(ctx, call, decidedAt(r, nowMs))
}
