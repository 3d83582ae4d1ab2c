package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// RedisSlidingLog decides each request with one run of lua/sliding_log.lua on
// SlidingLogKey(tenant, endpoint), a sorted set of the times of the units allowed. Each request
// passes an id unique across limiters and processes (a random 64-bit prefix per limiter and a
// counter), so equal timestamps never collide as members. It runs like RedisTokenBucket
// (EVALSHA, one EVAL on NOSCRIPT, no other retry, WithTimeout per decision). SlidingLog is its
// in-memory twin. It is safe for concurrent use; each decision formats the id (one allocation).
type RedisSlidingLog struct {
	s                        *windowScript
	windowArg, limitArg, ttl any // formatted and boxed once
	idPrefix                 string
	seq                      atomic.Uint64
}

var _ Limiter = (*RedisSlidingLog)(nil)

// NewRedisSlidingLog returns a sliding log with policy p stored in Redis through c (a
// *redis.ClusterClient or *redis.Client). It sends nothing to Redis; Load warms the script
// caches. WithPolicyFunc is refused (ErrBadConfig).
func NewRedisSlidingLog(c redis.Scripter, p SlidingLogPolicy, opts ...Option) (*RedisSlidingLog, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: sliding log policy: %w", ErrBadConfig, err)
	}
	s, err := newWindowScript(c, "sliding log", lua.SlidingLog, opts)
	if err != nil {
		return nil, err
	}
	return &RedisSlidingLog{
		s:         s,
		windowArg: strconv.FormatInt(p.Window.Milliseconds(), 10),
		limitArg:  strconv.FormatInt(p.Limit, 10),
		ttl:       strconv.FormatInt(p.TTL().Milliseconds(), 10),
		idPrefix:  strconv.FormatUint(rand.Uint64(), 36) + ".",
	}, nil
}

// Load sends SCRIPT LOAD (to every node of a ClusterClient) and checks the returned hash.
func (s *RedisSlidingLog) Load(ctx context.Context) error { return s.s.load(ctx) }

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (s *RedisSlidingLog) NoScriptFallbacks() int64 { return s.s.noScript.Load() }

// Allow decides r at r.Now (time.Now when zero) with one script call. Errors wrap the client's
// error (classify them with ClassifyError), ErrBadReply or ErrBadRequest.
func (s *RedisSlidingLog) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	call := s.s.get()
	call.keys[0] = SlidingLogKey(r.Tenant, r.Endpoint)
	call.nkey = 1
	id := s.idPrefix + strconv.FormatUint(s.seq.Add(1), 36)
	call.args = [7]any{nowMs, s.windowArg, s.limitArg, r.Cost, s.ttl, id}
	call.narg = 6
	return s.s.run(ctx, call, decidedAt(r, nowMs))
}
