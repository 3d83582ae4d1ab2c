package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultFailClosedRetryAfter is the RetryAfter of a fail-closed decision. It equals
// DefaultBreakerCooldown: a client told to come back then meets the breaker's first probe.
const DefaultFailClosedRetryAfter = time.Second

// FailMode is what an endpoint does when the store cannot decide a request in time. The zero
// value is FailModeOpen.
type FailMode uint8

const (
	// FailModeOpen allows the request (Source FailOpen): the API stays up, the limit is not enforced.
	FailModeOpen FailMode = iota
	// FailModeClosed denies the request (Source FailClosed, RetryAfter DefaultFailClosedRetryAfter):
	// an expensive downstream stays protected, the API is down for the duration.
	FailModeClosed
	// FailModeLocal decides the request with an in-process emergency token bucket at
	// FailPolicy.LocalFraction of the endpoint's policy (Source Local): each gateway enforces its
	// own share, so the total over N gateways is at most N x LocalFraction x the limit.
	FailModeLocal
)

var failModeNames = [...]string{"open", "closed", "local"}

// String returns "open", "closed" or "local" (ParseFailMode's input).
func (m FailMode) String() string {
	if int(m) < len(failModeNames) {
		return failModeNames[m]
	}
	return fmt.Sprintf("FailMode(%d)", m)
}

// ParseFailMode parses "open", "closed" or "local".
func ParseFailMode(s string) (FailMode, error) {
	for i, name := range failModeNames {
		if s == name {
			return FailMode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: fail mode %q: want one of open, closed, local", ErrBadConfig, s)
}

// MarshalText returns the mode's name, so that YAML and JSON carry "open", "closed", "local".
func (m FailMode) MarshalText() ([]byte, error) {
	if int(m) >= len(failModeNames) {
		return nil, fmt.Errorf("%w: fail mode %d: want 0 (open), 1 (closed) or 2 (local)", ErrBadConfig, m)
	}
	return []byte(failModeNames[m]), nil
}

// UnmarshalText parses the mode's name with ParseFailMode.
func (m *FailMode) UnmarshalText(text []byte) error {
	v, err := ParseFailMode(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// FailPolicy is an endpoint's answer to a failing store. The zero value fails open with the
// inner limiter's own timeout.
type FailPolicy struct {
	// Mode is what to do when the store fails or the node's breaker is open. Default FailModeOpen.
	Mode FailMode
	// Budget bounds one decision by the store (context.WithTimeout on the caller's context), e.g.
	// 5 ms: past it the request is decided by Mode. 0 leaves the inner limiter's own timeout.
	// >= 0.
	Budget time.Duration
	// LocalFraction (FailModeLocal only) scales the endpoint's bucket policy for the emergency
	// bucket: rate x LocalFraction, burst floor(burst x LocalFraction) but at least 1 token.
	// In (0, 1].
	LocalFraction float64
}

// Validate reports a policy FailSafe cannot follow, naming the field, the value and the fix.
func (p FailPolicy) Validate() error {
	var errs []error
	if int(p.Mode) >= len(failModeNames) {
		errs = append(errs, fmt.Errorf("%w: fail policy mode %d: want 0 (open), 1 (closed) or 2 (local)", ErrBadConfig, p.Mode))
	}
	if p.Budget < 0 {
		errs = append(errs, fmt.Errorf("%w: fail policy budget %v: must be >= 0 (0 leaves the inner limiter's own timeout)", ErrBadConfig, p.Budget))
	}
	if p.Mode == FailModeLocal && !(p.LocalFraction > 0 && p.LocalFraction <= 1) {
		errs = append(errs, fmt.Errorf("%w: fail policy local fraction %v: must be in (0, 1], e.g. 0.5 for half the endpoint's rate", ErrBadConfig, p.LocalFraction))
	}
	return errors.Join(errs...)
}

// scale returns the emergency policy for p: rate x f; burst floor(burst x f), at least 1 token.
func scale(p BucketPolicy, f float64) BucketPolicy {
	return BucketPolicy{Rate: p.Rate * f, Burst: max(1, int64(math.Floor(float64(p.Burst)*f)))}
}

// FailSafe wraps a Limiter (normally a RedisTokenBucket) with a per-endpoint fail policy and an
// optional per-node circuit breaker, so that a gateway answers fast when the store does not:
//
//   - the inner limiter is called with the caller's context bounded by the endpoint's Budget,
//     once: FailSafe never retries (a retry cascade on a sick store is what it prevents);
//   - a store failure (any error but ErrBadRequest or ErrBadConfig: timeout, connection, MOVED or
//     ASK past the redirect limit, TRYAGAIN, CLUSTERDOWN, NOSCRIPT after the fallback, a debit
//     refused by NOREPLICAS, a bad script reply) is decided by the endpoint's Mode and returns a
//     nil error; the failure shows in Decision.Source and Decision.Failure (its kind, and
//     whether the store may have debited the request all the same), and its ErrorKind goes to
//     the WithOnFailure callback. A decision the store made whose WAIT fell short
//     (Decision.Unreplicated) is no failure: it passes through;
//   - with WithBreaker, a request whose node's breaker is open is decided by Mode at once,
//     without calling the inner limiter: an outage costs one Budget per node per cooldown
//     instead of one per request.
//
// Errors that say nothing about the store pass through unchanged and touch no breaker: a bad
// request or configuration, and a caller that cancelled its context. A store failure after the
// caller's own deadline passed is decided by Mode but not held against the node.
//
// The Budget works only if the inner limiter honours its context: build RedisTokenBucket with
// WithTimeout(0) (or a timeout above every Budget) over a client with ContextTimeoutEnabled.
//
// FailSafe is safe for concurrent use. A decision allocates nothing beyond the inner limiter's
// and context.WithTimeout's allocations (none with Budget 0).
type FailSafe struct {
	inner          Limiter
	policyFor      func(endpoint string) FailPolicy
	local          *TokenBucket // nil without a base policy
	onFailure      func(r Request, kind ErrorKind)
	onShortCircuit func(r Request, node string)
	breaker        *Breaker
	nodeOf         func(r Request) string
}

var _ Limiter = (*FailSafe)(nil)

// FailSafeOption configures a FailSafe built by NewFailSafe.
type FailSafeOption func(*FailSafe)

// WithOnFailure calls f(r, kind) for each store failure, with the failure's ErrorKind, before the
// request is decided by its endpoint's Mode; this is how a run counts errors by kind while
// FailSafe returns a nil error. f runs on the deciding goroutine and must be fast and safe for
// concurrent use. It is not called for requests short-circuited by an open breaker.
func WithOnFailure(f func(r Request, kind ErrorKind)) FailSafeOption {
	return func(s *FailSafe) { s.onFailure = f }
}

// WithOnShortCircuit calls f(r, node) for each request decided by Mode because node's breaker
// was open (the inner limiter was not called). Same rules as WithOnFailure.
func WithOnShortCircuit(f func(r Request, node string)) FailSafeOption {
	return func(s *FailSafe) { s.onShortCircuit = f }
}

// WithBreaker guards each node with b. nodeOf maps a request to the node that owns its key (a
// scenario engine supplies it from the cluster's slot map); "" means unknown, and such requests
// bypass the breaker. nodeOf is called once per request and must be fast and safe for
// concurrent use.
func WithBreaker(b *Breaker, nodeOf func(r Request) string) FailSafeOption {
	return func(s *FailSafe) { s.breaker, s.nodeOf = b, nodeOf }
}

// NewFailSafe wraps inner with the fail policy policyFor(endpoint) of each request's endpoint.
// base is the endpoints' bucket policy, needed only by endpoints in FailModeLocal (their
// emergency bucket runs at LocalFraction of it); it may be nil when no endpoint fails local.
// policyFor and base are called per request: they must be fast and safe for concurrent use.
// Validate the policies up front with FailPolicy.Validate; a request whose policy is invalid
// gets an ErrBadConfig error.
func NewFailSafe(inner Limiter, base PolicyFunc, policyFor func(endpoint string) FailPolicy, opts ...FailSafeOption) (*FailSafe, error) {
	if inner == nil {
		return nil, fmt.Errorf("%w: inner limiter is nil: pass the limiter to protect, such as a *RedisTokenBucket", ErrBadConfig)
	}
	if policyFor == nil {
		return nil, fmt.Errorf("%w: fail policy function is nil: pass func(endpoint string) FailPolicy", ErrBadConfig)
	}
	f := &FailSafe{inner: inner, policyFor: policyFor}
	for _, o := range opts {
		o(f)
	}
	if (f.breaker == nil) != (f.nodeOf == nil) {
		return nil, fmt.Errorf("%w: WithBreaker(%p, nodeOf nil=%v): pass both a *Breaker and a node function", ErrBadConfig, f.breaker, f.nodeOf == nil)
	}
	if base != nil {
		// The constructor's policy is a placeholder that every request overrides; each emergency
		// policy is checked by the twin (allocation-free when it passes).
		local, err := NewTokenBucket(BucketPolicy{Rate: 1, Burst: 1}, WithPolicyFunc(func(tenant, endpoint string) BucketPolicy {
			return scale(base(tenant, endpoint), policyFor(endpoint).LocalFraction)
		}))
		if err != nil {
			return nil, err
		}
		f.local = local
	}
	return f, nil
}

// Allow decides r with the inner limiter within the endpoint's Budget, or by the endpoint's Mode
// when the store fails or r's node is behind an open breaker. See FailSafe.
func (f *FailSafe) Allow(ctx context.Context, r Request) (Decision, error) {
	fp := f.policyFor(r.Endpoint)
	if fp.Budget < 0 {
		return Decision{}, fmt.Errorf("endpoint %q: %w", r.Endpoint, fp.Validate())
	}
	var node string
	if f.breaker != nil {
		if node = f.nodeOf(r); node != "" && !f.breaker.Allow(node) {
			if f.onShortCircuit != nil {
				f.onShortCircuit(r, node)
			}
			return f.fallback(ctx, r, fp)
		}
	}
	d, err := f.call(ctx, r, fp.Budget)
	if err == nil {
		if node != "" {
			f.breaker.Success(node)
		}
		return d, nil
	}
	if errors.Is(err, ErrBadRequest) || errors.Is(err, ErrBadConfig) || errors.Is(ctx.Err(), context.Canceled) {
		// Nothing was learned about the node: the request never reached it, or the caller left.
		if node != "" {
			f.breaker.release(node)
		}
		return Decision{}, err
	}
	if node != "" {
		if ctx.Err() != nil {
			f.breaker.release(node) // the caller's deadline, shorter than the budget, ran out
		} else {
			f.breaker.Failure(node)
		}
	}
	if f.onFailure != nil {
		f.onFailure(r, ClassifyError(err))
	}
	d, ferr := f.fallback(ctx, r, fp)
	if ferr == nil {
		d.Failure = FailureOf(err)
	}
	return d, ferr
}

// call runs the inner limiter once, under the budget when there is one.
func (f *FailSafe) call(ctx context.Context, r Request, budget time.Duration) (Decision, error) {
	if budget == 0 {
		return f.inner.Allow(ctx, r)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	return f.inner.Allow(ctx, r)
}

// fallback decides r by the endpoint's Mode. It refuses a bad request as the inner limiter
// would, so that a short-circuited request is not allowed where a central one is refused.
func (f *FailSafe) fallback(ctx context.Context, r Request, fp FailPolicy) (Decision, error) {
	if _, err := requestMs(r); err != nil {
		return Decision{}, err
	}
	switch fp.Mode {
	case FailModeOpen:
		return Decision{Allowed: true, Source: FailOpen}, nil
	case FailModeClosed:
		return Decision{RetryAfter: DefaultFailClosedRetryAfter, Source: FailClosed}, nil
	}
	if err := fp.Validate(); err != nil {
		return Decision{}, fmt.Errorf("endpoint %q: %w", r.Endpoint, err)
	}
	if f.local == nil {
		return Decision{}, fmt.Errorf("%w: endpoint %q fails local but NewFailSafe got no base policy: pass the endpoints' PolicyFunc", ErrBadConfig, r.Endpoint)
	}
	return f.local.Allow(ctx, r)
}
