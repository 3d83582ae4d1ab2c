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
	// Unreplicated is set when the store decided but the WAIT after its script
	// (WithDurability) answered fewer replicas than asked, or failed. The answer stands — a
	// denial debited nothing, an allowed request's debit is on the primary — but a failover may
	// lose that debit.
	Unreplicated bool
	// Failure is set on an answer a fail policy gave because the store call failed (FailSafe):
	// the failure's kind, and whether the store may have debited the request all the same. Its
	// zero value (Failed false): the store decided, or an open breaker answered without calling
	// the store.
	Failure Failure
}

// Failure is a store failure that a fail policy answered in the store's place.
type Failure struct {
	// Failed is true when the store call failed and a fail policy answered.
	Failed bool
	// Kind is the failure's kind (ClassifyError).
	Kind ErrorKind
	// MayHaveDebited reports whether the store may have debited the request although its
	// answer never arrived (see MayHaveDebited).
	MayHaveDebited bool
}

// FailureOf is the Failure a fail policy's answer to err carries.
func FailureOf(err error) Failure {
	return Failure{Failed: true, Kind: ClassifyError(err), MayHaveDebited: MayHaveDebited(err)}
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
