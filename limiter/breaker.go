package limiter

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker defaults, used by NewBreaker for a zero threshold or cooldown.
const (
	// DefaultBreakerThreshold is the number of consecutive failures that opens a node's breaker.
	DefaultBreakerThreshold = 5
	// DefaultBreakerCooldown is how long an open breaker refuses calls before it lets one probe through.
	DefaultBreakerCooldown = 1 * time.Second
)

// The breaker states, as Breaker.State and WithOnStateChange name them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// breakerState is a node's state; its values index breakerStateNames.
type breakerState uint32

const (
	stateClosed breakerState = iota
	stateOpen
	stateHalfOpen
)

var breakerStateNames = [...]string{BreakerClosed, BreakerOpen, BreakerHalfOpen}

func (s breakerState) String() string { return breakerStateNames[s] }

// Breaker is a circuit breaker per node (any string id, such as a Redis node's address). It
// keeps a gateway from waiting for a store that is down: after threshold consecutive failures a
// node's breaker opens and Allow refuses every call for the cooldown; then it turns half-open and
// lets exactly one call through as a probe. The probe's Success closes the breaker, its Failure
// re-opens it for another cooldown. A probe that never reports (its caller learned nothing about
// the node) is given up after one cooldown and the next call probes instead.
//
//	closed    --threshold consecutive Failures--> open
//	open      --cooldown passed, Allow-->           half-open (that Allow is the probe: true)
//	half-open --Success-->                          closed
//	half-open --Failure-->                          open (for another cooldown)
//	any       --Success-->                          closed
//
// A Failure while open does not extend the cooldown (late failures of calls made before the
// breaker opened are expected). The hot path (Allow and Success on a closed breaker) takes no lock
// and allocates nothing. Nodes are created on their first Failure, by copying a small map: the
// Breaker is meant for a few nodes (a cluster's primaries), not for one breaker per key.
//
// A Breaker is safe for concurrent use. The zero value is not usable: use NewBreaker.
type Breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time
	onChange  func(node, from, to string)

	mu    sync.Mutex                              // serializes adding nodes
	nodes atomic.Pointer[map[string]*nodeBreaker] // copy-on-write; never nil after NewBreaker
}

// nodeBreaker is one node's breaker. state and fails are written under mu and read without it
// on the hot path; the rest is guarded by mu.
type nodeBreaker struct {
	state atomic.Uint32 // breakerState
	fails atomic.Int64  // consecutive failures while closed

	mu sync.Mutex
	// until is the end of the cooldown (open) or of the probe's lease (half-open).
	until time.Time
	// probing: a half-open probe is out and has not reported.
	probing bool
}

// BreakerOption configures a Breaker built by NewBreaker.
type BreakerOption func(*Breaker)

// WithBreakerClock makes the breaker read time from now instead of time.Now (for tests).
func WithBreakerClock(now func() time.Time) BreakerOption {
	return func(b *Breaker) { b.now = now }
}

// WithOnStateChange calls f(node, from, to) after each state change, with the state names
// BreakerClosed, BreakerOpen and BreakerHalfOpen, from the goroutine that caused it and outside
// the breaker's locks. Changes of different nodes, or in quick succession, may reach f in an
// order other than they happened. f must be fast and safe for concurrent use.
func WithOnStateChange(f func(node, from, to string)) BreakerOption {
	return func(b *Breaker) { b.onChange = f }
}

// NewBreaker returns a breaker that opens a node after threshold consecutive failures and keeps
// it open for cooldown. A zero threshold or cooldown means DefaultBreakerThreshold or
// DefaultBreakerCooldown. A negative one is a programming error and panics, as does a nil clock.
func NewBreaker(threshold int, cooldown time.Duration, opts ...BreakerOption) *Breaker {
	if threshold < 0 {
		panic(fmt.Sprintf("limiter: NewBreaker threshold %d: must be >= 1 consecutive failures (0 for DefaultBreakerThreshold)", threshold))
	}
	if cooldown < 0 {
		panic(fmt.Sprintf("limiter: NewBreaker cooldown %v: must be > 0 (0 for DefaultBreakerCooldown)", cooldown))
	}
	if threshold == 0 {
		threshold = DefaultBreakerThreshold
	}
	if cooldown == 0 {
		cooldown = DefaultBreakerCooldown
	}
	b := &Breaker{threshold: threshold, cooldown: cooldown, now: time.Now}
	for _, o := range opts {
		o(b)
	}
	if b.now == nil {
		panic("limiter: WithBreakerClock(nil): pass a clock such as time.Now")
	}
	b.nodes.Store(&map[string]*nodeBreaker{})
	return b
}

// Threshold returns the number of consecutive failures that opens a node.
func (b *Breaker) Threshold() int { return b.threshold }

// Cooldown returns how long an open node refuses calls.
func (b *Breaker) Cooldown() time.Duration { return b.cooldown }

// lookup returns node's breaker, or nil for a node that never failed (closed).
func (b *Breaker) lookup(node string) *nodeBreaker { return (*b.nodes.Load())[node] }

// node returns node's breaker, creating it.
func (b *Breaker) node(node string) *nodeBreaker {
	if n := b.lookup(node); n != nil {
		return n
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := *b.nodes.Load()
	if n := old[node]; n != nil {
		return n
	}
	m := make(map[string]*nodeBreaker, len(old)+1)
	maps.Copy(m, old)
	n := new(nodeBreaker)
	m[node] = n
	b.nodes.Store(&m)
	return n
}

// Allow reports whether a call to node may go ahead: always while closed; never while open,
// until the cooldown has passed; then true exactly once (the probe) and false for everyone else
// until the probe reports with Success or Failure (or its lease of one cooldown runs out).
func (b *Breaker) Allow(node string) bool {
	n := b.lookup(node)
	if n == nil || breakerState(n.state.Load()) == stateClosed {
		return true
	}
	n.mu.Lock()
	from := breakerState(n.state.Load())
	now := b.now()
	var ok bool
	switch from {
	case stateClosed: // closed by a Success since the load above
		ok = true
	case stateOpen:
		if ok = !now.Before(n.until); ok {
			n.state.Store(uint32(stateHalfOpen))
		}
	case stateHalfOpen:
		// A probe that has not reported within a cooldown is lost; the next call probes.
		ok = !n.probing || !now.Before(n.until)
	}
	if ok && from != stateClosed {
		n.probing = true
		n.until = now.Add(b.cooldown)
	}
	to := breakerState(n.state.Load())
	n.mu.Unlock()
	b.changed(node, from, to)
	return ok
}

// Success records a call to node that the node answered. It closes the node's breaker (from any
// state) and resets its count of consecutive failures.
func (b *Breaker) Success(node string) {
	n := b.lookup(node)
	if n == nil || breakerState(n.state.Load()) == stateClosed && n.fails.Load() == 0 {
		return
	}
	n.mu.Lock()
	from := breakerState(n.state.Load())
	n.fails.Store(0)
	n.probing = false
	n.state.Store(uint32(stateClosed))
	n.mu.Unlock()
	b.changed(node, from, stateClosed)
}

// Failure records a call to node that the node failed (timeout, connection error, an error
// reply from the store). The threshold-th consecutive failure opens a closed breaker; a failure
// while half-open (the probe's) re-opens it for another cooldown.
func (b *Breaker) Failure(node string) {
	n := b.node(node)
	n.mu.Lock()
	from := breakerState(n.state.Load())
	switch from {
	case stateClosed:
		if n.fails.Add(1) >= int64(b.threshold) {
			b.open(n)
		}
	case stateHalfOpen:
		b.open(n)
	case stateOpen: // a late failure of a call made before the breaker opened
	}
	to := breakerState(n.state.Load())
	n.mu.Unlock()
	b.changed(node, from, to)
}

// open opens n for one cooldown from now. n.mu must be held.
func (b *Breaker) open(n *nodeBreaker) {
	n.state.Store(uint32(stateOpen))
	n.fails.Store(0)
	n.probing = false
	n.until = b.now().Add(b.cooldown)
}

// release ends a call that Allow let through but that learned nothing about the node (the
// request was refused before reaching it, or its caller gave up): if it was the half-open probe,
// the next call may probe at once instead of waiting for the probe's lease to run out.
func (b *Breaker) release(node string) {
	n := b.lookup(node)
	if n == nil || breakerState(n.state.Load()) != stateHalfOpen {
		return
	}
	n.mu.Lock()
	if breakerState(n.state.Load()) == stateHalfOpen {
		n.probing = false
	}
	n.mu.Unlock()
}

// State returns node's stored state: BreakerClosed (also for a node never seen), BreakerOpen or
// BreakerHalfOpen. An open breaker whose cooldown has passed stays BreakerOpen until the next
// Allow turns it half-open.
func (b *Breaker) State(node string) string {
	n := b.lookup(node)
	if n == nil {
		return BreakerClosed
	}
	return breakerState(n.state.Load()).String()
}

// changed reports a state change to the WithOnStateChange callback.
func (b *Breaker) changed(node string, from, to breakerState) {
	if from != to && b.onChange != nil {
		b.onChange(node, from.String(), to.String())
	}
}
