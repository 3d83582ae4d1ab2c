package limiter

import (
	"context"
	"time"
)

// Request is one rate-limit decision to make.
type Request struct {
	Tenant, Endpoint string
	// Cost is the number of tokens the request takes; 1 for an ordinary request.
	Cost int64
	// Now is the gateway's clock. It may be skewed on purpose in a scenario; the Redis
	// algorithms clamp it so that a key's stored time never goes backwards.
	Now time.Time
}

// Source says where a decision was made.
type Source uint8

const (
	// Central: decided by the shared store (Redis) for this request.
	Central Source = iota
	// Lease: decided locally from tokens leased in advance from the central store.
	Lease
	// Local: decided by an in-process limiter with no shared state.
	Local
	// FailOpen: the store failed and the endpoint's policy let the request through.
	FailOpen
	// FailClosed: the store failed and the endpoint's policy denied the request.
	FailClosed
)

var sourceNames = [...]string{"central", "lease", "local", "fail-open", "fail-closed"}

func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "unknown"
}

// Decision is the answer to a Request.
type Decision struct {
	Allowed   bool
	Remaining int64
	// RetryAfter is how long until the request could be allowed; 0 when allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again.
	ResetAfter time.Duration
	Source     Source
	// At is the time the decision was made at, the time its arithmetic used before any clamp:
	// the request's Now (time.Now to the millisecond when Now is zero) for the gateway clock, or
	// with WithRedisClock the server's TIME (whole ms) that the script read. It lets a checker
	// judge each decision at the limiter's own time, not at the caller's. It is zero when no
	// clock made the decision: Noop, and FailSafe's fail-open and fail-closed answers.
	At time.Time
}

// Limiter decides whether a request may pass.
type Limiter interface {
	Allow(ctx context.Context, r Request) (Decision, error)
}

// AsyncLimiter is a Limiter that can answer a decision later instead of holding its caller
// while a round trip is in flight: a caller that drives many requests per goroutine (the
// scenario engine's workers) then goes on to its next request, and one request waiting for
// Redis delays no other.
type AsyncLimiter interface {
	Limiter
	// AllowAsync decides r as Allow does. When the answer is at hand it returns it with parked
	// false and never calls done. Otherwise it returns parked true (and a zero Decision and
	// nil error) and calls done.Decided exactly once, from another goroutine, with what Allow
	// would have returned, or with ctx's error when ctx ends first. That call may come before
	// AllowAsync returns: done must be ready when it is passed in.
	AllowAsync(ctx context.Context, r Request, done Deferred) (d Decision, parked bool, err error)
}

// Deferred receives the decision that AllowAsync parked. It is an interface, not a func, so
// that a caller can pass a pointer it already holds and the common, unparked decision
// allocates nothing.
type Deferred interface {
	Decided(d Decision, err error)
}
