package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// RedisRate decides each request with github.com/go-redis/redis_rate/v10, through its public
// API only (Limiter.AllowN): the module's own GCRA script, its own key ("rate:" + KeyFor), its
// own clock (the script reads Redis TIME, to the microsecond). It is here to be judged, not to
// be used instead of RedisTokenBucket: a limiter nobody here wrote, on the run's cluster.
//
// Its GCRA is the token bucket of the same rate and burst (docs/limiters.md states the mapping
// with the lines of the script that define it), so it is judged by the token-bucket envelope.
// Because its clock is Redis's, a checker must judge each decision at the time the script read.
// redis_rate does not return that time, so RedisRate sends each decision as a pipeline on the
// key's node: redis_rate's script, a GET of its key and a one-line script that returns TIME (all
// name the same key, so the cluster client sends them to one node, in order, on one connection).
// Decision.At is the script's own now, recovered from its reply and the key (scriptNow); where
// that cannot be (the script stored nothing), the TIME read right after it, a few microseconds
// late. The GET and the probe are ratelab's instruments, not part of the decision; they count
// among a node's other commands, not its decision commands.
//
// It is safe for concurrent use.
type RedisRate struct {
	lim     *redis_rate.Limiter
	limit   redis_rate.Limit
	timeout time.Duration
}

var _ Limiter = (*RedisRate)(nil)

// RateClient is what RedisRate needs of a go-redis client (a *redis.ClusterClient or
// *redis.Client): what redis_rate calls, and a pipeline for the clock probe.
type RateClient interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Pipeline() redis.Pipeliner
}

// RedisRateKeyPrefix is what redis_rate puts before the key it is given: the stored key of a
// tenant's endpoint is RedisRateKeyPrefix + KeyFor(tenant, endpoint), in the tenant's slot.
const RedisRateKeyPrefix = "rate:"

// RedisRateLimit maps a bucket policy to redis_rate's Limit: Burst is the burst, and Rate events
// per Period give the emission interval Period/Rate = 1/p.Rate seconds. Period is the shortest of
// a second, a minute and an hour in which p.Rate is a whole number of events (redis_rate's Rate is
// an int); a rate that is whole in none of them is refused.
func RedisRateLimit(p BucketPolicy) (redis_rate.Limit, error) {
	if err := p.Validate(); err != nil {
		return redis_rate.Limit{}, err
	}
	if p.Burst > math.MaxInt32 {
		return redis_rate.Limit{}, fmt.Errorf("burst %d: redis_rate takes at most %d", p.Burst, math.MaxInt32)
	}
	for _, period := range []time.Duration{time.Second, time.Minute, time.Hour} {
		n := p.Rate * period.Seconds()
		if n == math.Trunc(n) && n <= math.MaxInt32 {
			return redis_rate.Limit{Rate: int(n), Burst: int(p.Burst), Period: period}, nil
		}
	}
	return redis_rate.Limit{}, fmt.Errorf("rate %v/s: redis_rate counts whole events per second, minute or hour: use a rate that is whole per hour (e.g. %.0f/h)", p.Rate, math.Round(p.Rate*3600))
}

// NewRedisRate returns redis_rate's limiter with policy p on client c. It sends nothing to Redis:
// redis_rate loads its script on the first NOSCRIPT. Of the options only WithTimeout applies
// (default DefaultTimeout; the client needs ContextTimeoutEnabled for it to bite).
func NewRedisRate(c RateClient, p BucketPolicy, opts ...Option) (*RedisRate, error) {
	limit, err := RedisRateLimit(p)
	if err != nil {
		return nil, fmt.Errorf("%w: redis-rate policy: %w", ErrBadConfig, err)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &RedisRate{lim: redis_rate.NewLimiter(timedScripter{c}), limit: limit, timeout: cfg.timeout}, nil
}

// Limit is the redis_rate Limit every decision sends.
func (l *RedisRate) Limit() redis_rate.Limit { return l.limit }

// Allow decides r with redis_rate's AllowN(KeyFor(r.Tenant, r.Endpoint), limit, r.Cost). r.Now
// is not used: redis_rate reads Redis's clock. Errors wrap the client's error (classify them
// with ClassifyError) or ErrBadRequest.
func (l *RedisRate) Allow(ctx context.Context, r Request) (Decision, error) {
	if _, err := requestMs(r); err != nil {
		return Decision{}, err
	}
	if r.Cost > math.MaxInt32 {
		return Decision{}, fmt.Errorf("%w: cost %d: redis_rate takes an int", ErrBadRequest, r.Cost)
	}
	if l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	var at probeTime
	res, err := l.lim.AllowN(context.WithValue(ctx, probeKey{}, &at), KeyFor(r.Tenant, r.Endpoint), l.limit, int(r.Cost))
	if err != nil {
		return Decision{}, fmt.Errorf("redis_rate: %w", err)
	}
	// redis_rate answers retry_after -1 exactly when it allowed (its script's two returns).
	d := Decision{Allowed: res.RetryAfter == -1, Remaining: int64(res.Remaining), ResetAfter: max(res.ResetAfter, 0),
		Source: Central, At: at.t}
	if !d.Allowed {
		d.RetryAfter = res.RetryAfter
	}
	return d, nil
}

// clockProbe returns the node's TIME. It declares the decision's key only so that a cluster
// client sends it to the key's node; it never reads or writes the key.
const clockProbe = "return redis.call('TIME')"

// probeKey is the context key under which Allow passes the *probeTime a pipeline fills.
type probeKey struct{}

// probeTime is the TIME the probe read; zero when it failed.
type probeTime struct{ t time.Time }

// timedScripter is the client redis_rate is given: script calls go out as a pipeline of the
// script and the clock probe (see RedisRate); everything else passes through.
type timedScripter struct{ RateClient }

// EvalSha runs sha with the probe behind it.
func (s timedScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return s.timed(ctx, keys, func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, sha, keys, args...) })
}

// Eval runs script with the probe behind it (redis_rate's retry after NOSCRIPT).
func (s timedScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.timed(ctx, keys, func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, script, keys, args...) })
}

// timed sends the command run queues, a GET of its key and the probe in one pipeline and returns
// the command, with its own reply or error; the decision's time goes to the context's probeTime.
func (s timedScripter) timed(ctx context.Context, keys []string, run func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	at, _ := ctx.Value(probeKey{}).(*probeTime)
	p := s.Pipeline()
	cmd := run(p)
	var state *redis.StringCmd
	var probe *redis.Cmd
	if at != nil && len(keys) > 0 {
		state = p.Get(ctx, keys[0])
		probe = p.Eval(ctx, clockProbe, keys[:1])
	}
	_, _ = p.Exec(ctx) // each command keeps its own error
	if probe == nil || cmd.Err() != nil {
		return cmd
	}
	if t, ok := scriptNow(cmd, state); ok {
		at.t = t
	} else {
		at.t, _ = parseTime(probe)
	}
	return cmd
}

// redisRateEpoch is the epoch of redis_rate's script clock, in Unix seconds: the script counts
// seconds from the start of the year it names jan_1_2017.
const redisRateEpoch = 1483228800

// scriptNow recovers the now redis_rate's script used from its reply and the key's value read
// right after it: the script returns reset_after = tat - now (tat the stored time, after its
// debit when it allowed) and leaves tat in the key, so now = tat - reset_after, to a fraction of
// a microsecond. It reports false when the key holds nothing or reset_after is 0 (the script
// then stored nothing this call), and the caller falls back to the probe.
func scriptNow(cmd *redis.Cmd, state *redis.StringCmd) (time.Time, bool) {
	v, err := cmd.Slice()
	if err != nil || len(v) != 4 {
		return time.Time{}, false
	}
	rs, ok := v[3].(string)
	if !ok {
		return time.Time{}, false
	}
	reset, err1 := strconv.ParseFloat(rs, 64)
	tat, err2 := strconv.ParseFloat(state.Val(), 64)
	if err1 != nil || err2 != nil || state.Err() != nil || !(reset > 0) {
		return time.Time{}, false
	}
	now := tat - reset
	sec := math.Floor(now)
	return time.Unix(redisRateEpoch+int64(sec), int64(math.Round((now-sec)*1e9))), true
}

// errBadTime is a TIME reply that is not two integers.
var errBadTime = errors.New("TIME reply is not [seconds, microseconds]")

// parseTime reads a TIME reply returned through a script: two integers, or their strings.
func parseTime(c *redis.Cmd) (time.Time, error) {
	v, err := c.Slice()
	if err != nil || len(v) != 2 {
		return time.Time{}, errors.Join(errBadTime, err)
	}
	var n [2]int64
	for i, x := range v {
		switch x := x.(type) {
		case int64:
			n[i] = x
		case string:
			if n[i], err = strconv.ParseInt(x, 10, 64); err != nil {
				return time.Time{}, errors.Join(errBadTime, err)
			}
		default:
			return time.Time{}, errBadTime
		}
	}
	return time.Unix(n[0], n[1]*1000), nil
}
