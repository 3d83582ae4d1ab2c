package limiter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// windowScript runs one window-algorithm script (fixed window, GCRA, sliding window, sliding
// log) the way RedisTokenBucket runs the token bucket: EVALSHA of the script hashed once at
// construction, one EVAL on NOSCRIPT, no other retry, a deadline per decision, and the reply
// decoded by decodeReply. It is shared by the Redis window limiters and safe for concurrent use.
type windowScript struct {
	c          redis.Scripter
	name       string // for error messages: "fixed window", "gcra", ...
	src, sha   string
	timeout    time.Duration
	onNoScript func()
	noScript   atomic.Int64
	calls      sync.Pool // *windowCall
}

// windowCall holds one call's KEYS and ARGV, reused through a sync.Pool: go-redis copies both
// into its own command before EvalSha returns.
type windowCall struct {
	keys [2]string
	nkey int
	args [7]any
	narg int
}

// newWindowScript checks the client and the options shared by every window limiter. The window
// limiters have one policy each: WithPolicyFunc (a token-bucket policy) does not apply and is
// refused rather than silently ignored.
func newWindowScript(c redis.Scripter, name, src string, opts []Option) (*windowScript, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: %s: client is nil: pass a *redis.ClusterClient or *redis.Client", ErrBadConfig, name)
	}
	cfg, err := newWindowConfig(name, opts)
	if err != nil {
		return nil, err
	}
	s := &windowScript{
		c: c, name: name, src: src, sha: redis.NewScript(src).Hash(),
		timeout: cfg.timeout, onNoScript: cfg.onNoScript,
	}
	s.calls.New = func() any { return new(windowCall) }
	return s, nil
}

// newWindowConfig applies opts and refuses WithPolicyFunc, which only token buckets support.
func newWindowConfig(name string, opts []Option) (config, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return cfg, err
	}
	if cfg.policyFor != nil {
		return cfg, fmt.Errorf("%w: %s: WithPolicyFunc returns token-bucket policies and does not apply; build one limiter per policy", ErrBadConfig, name)
	}
	return cfg, nil
}

// load sends SCRIPT LOAD and checks that Redis hashed the script as Go did.
func (s *windowScript) load(ctx context.Context) error {
	return loadScript(ctx, s.c, s.name, s.src, s.sha)
}

// loadScript sends SCRIPT LOAD of src (a ClusterClient sends it to every node, replicas
// included) and checks that Redis hashed it to sha, as Go did: every Redis limiter's Load.
func loadScript(ctx context.Context, c redis.Scripter, name, src, sha string) error {
	got, err := c.ScriptLoad(ctx, src).Result()
	if err != nil {
		return fmt.Errorf("limiter: %s: script load: %w", name, err)
	}
	if got != sha {
		return fmt.Errorf("%w: %s: SCRIPT LOAD returned sha %q, want %q", ErrBadReply, name, got, sha)
	}
	return nil
}

// get returns a pooled call; the caller fills keys[:nkey] and args[:narg] and passes it to run.
func (s *windowScript) get() *windowCall { return s.calls.Get().(*windowCall) }

// run runs the script with call's KEYS and ARGV, returns call to the pool and decodes the reply
// into a Decision made at at (the request's time: the window scripts take the gateway's clock).
// Errors name the script and the first key and wrap the client's error or ErrBadReply.
func (s *windowScript) run(ctx context.Context, call *windowCall, at time.Time) (Decision, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	keys, args := call.keys[:call.nkey], call.args[:call.narg]
	reply, err := s.c.EvalSha(ctx, s.sha, keys, args...).Result()
	if err != nil && ClassifyError(err) == KindNoScript {
		// The node lost its script cache: EVAL runs and caches it. The one retry.
		s.noScript.Add(1)
		if s.onNoScript != nil {
			s.onNoScript()
		}
		reply, err = s.c.Eval(ctx, s.src, keys, args...).Result()
	}
	key := call.keys[0]
	*call = windowCall{} // keep no key or boxed value alive in the pool
	s.calls.Put(call)
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: %s %s: %w", s.name, key, err)
	}
	d, err := decodeReply(reply)
	if err != nil {
		return Decision{}, fmt.Errorf("limiter: %s %s: %w", s.name, key, err)
	}
	d.Source, d.At = Central, at
	return d, nil
}
