package limiter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"ratelab/lua"
)

// RedisGCRA decides each request with one run of lua/gcra.lua on GCRAKey(tenant, endpoint). It
// runs like RedisTokenBucket (EVALSHA, one EVAL on NOSCRIPT, no other retry, WithTimeout per
// decision; build the client as RedisTokenBucket's doc says). GCRA is its in-memory twin. It is
// safe for concurrent use.
type RedisGCRA struct {
	s                          *windowScript
	intervalArg, burstArg, ttl any // formatted and boxed once
}

var _ Limiter = (*RedisGCRA)(nil)

// NewRedisGCRA returns a GCRA limiter with policy p stored in Redis through c (a
// *redis.ClusterClient or *redis.Client). It sends nothing to Redis; Load warms the script
// caches. WithPolicyFunc is refused (ErrBadConfig).
func NewRedisGCRA(c redis.Scripter, p GCRAPolicy, opts ...Option) (*RedisGCRA, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: gcra policy: %w", ErrBadConfig, err)
	}
	s, err := newWindowScript(c, "gcra", lua.GCRA, opts)
	if err != nil {
		return nil, err
	}
	return &RedisGCRA{
		s: s,
		// Shortest decimal that parses back to the same double: the script's T is Go's T.
		intervalArg: strconv.FormatFloat(p.IntervalMs(), 'g', -1, 64),
		burstArg:    strconv.FormatInt(p.Burst, 10),
		ttl:         strconv.FormatInt(p.TTL().Milliseconds(), 10),
	}, nil
}

// Load sends SCRIPT LOAD (to every node of a ClusterClient) and checks the returned hash.
func (g *RedisGCRA) Load(ctx context.Context) error { return g.s.load(ctx) }

// NoScriptFallbacks returns how many times EVALSHA answered NOSCRIPT and the limiter ran EVAL.
func (g *RedisGCRA) NoScriptFallbacks() int64 { return g.s.noScript.Load() }

// Allow decides r at r.Now (time.Now when zero) with one script call. Errors wrap the client's
// error (classify them with ClassifyError), ErrBadReply or ErrBadRequest.
func (g *RedisGCRA) Allow(ctx context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	call := g.s.get()
	call.keys[0] = GCRAKey(r.Tenant, r.Endpoint)
	call.nkey = 1
	call.args = [7]any{nowMs, g.intervalArg, g.burstArg, r.Cost, g.ttl}
	call.narg = 5
	return g.s.run(ctx, call, decidedAt(r, nowMs))
}
