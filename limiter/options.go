package limiter

import (
	"fmt"
	"time"
)

// DefaultTimeout bounds one RedisTokenBucket decision, the NOSCRIPT->EVAL step included.
const DefaultTimeout = 50 * time.Millisecond

// PolicyFunc returns the policy of a tenant's endpoint. It is called once per request, so it
// must be fast and safe for concurrent use (a lookup in an immutable or atomically swapped map).
type PolicyFunc func(tenant, endpoint string) BucketPolicy

// Option configures a limiter built by NewTokenBucket or NewRedisTokenBucket. An option that
// does not apply to a limiter (a timeout for the in-memory twin) is ignored by it.
type Option func(*config)

// config is what the options set. Policy checks happen in the constructors.
type config struct {
	policyFor  PolicyFunc
	timeout    time.Duration
	onNoScript func()
	redisClock bool       // WithRedisClock
	durability Durability // WithDurability; checked by the buckets that honour it
	audit      bool       // WithAudit
	auditRun   string     // WithAudit's run
}

func newConfig(opts []Option) (config, error) {
	c := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&c)
	}
	if c.timeout < 0 {
		return c, fmt.Errorf("%w: timeout %v: must be >= 0 (0 leaves only the caller's context deadline)", ErrBadConfig, c.timeout)
	}
	if err := checkAuditRun(c.auditRun); err != nil {
		return c, err
	}
	return c, nil
}

// WithPolicyFunc picks each request's policy from its tenant and endpoint instead of the
// constructor's one policy. A key keeps its stored tokens when its policy changes.
// Requests whose policy fails BucketPolicy.Validate are refused with ErrBadConfig. In
// RedisTokenBucket a policy other than the constructor's costs a few allocations per decision
// (its script arguments are formatted per call); the twin allocates nothing for it.
func WithPolicyFunc(f PolicyFunc) Option { return func(c *config) { c.policyFor = f } }

// WithTimeout sets the deadline of one RedisTokenBucket decision (default DefaultTimeout),
// applied with context.WithTimeout on the caller's context. 0 disables it. The deadline only
// works if the go-redis client was built with ContextTimeoutEnabled: true.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithOnNoScript calls f (from the deciding goroutine) each time EVALSHA answers NOSCRIPT and
// RedisTokenBucket falls back to EVAL. f must be fast and safe for concurrent use.
func WithOnNoScript(f func()) Option { return func(c *config) { c.onNoScript = f } }
