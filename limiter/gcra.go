package limiter

import (
	"context"
	"fmt"
	"math"
	"time"
)

// GCRAPolicy is a GCRA (generic cell rate algorithm) policy: a sustained Rate of units per second
// with bursts of up to Burst units. It admits the same traffic as a token bucket of the same rate
// and burst but stores one time (the theoretical arrival time, TAT) instead of a token count.
//
// Units, shared by lua/gcra.lua and the in-memory twin: time is Unix milliseconds; the emission
// interval T = 1000 / Rate ms and the TAT are float64, stored in Redis with "%.17g".
type GCRAPolicy struct {
	// Rate is the sustained rate in units per second; > 0.
	Rate float64
	// Burst is the number of units that may pass at once; 1..2^53.
	Burst int64
}

// Validate reports a policy that the script cannot implement exactly: the time to drain a full
// burst (Burst * T ms) must stay below half of maxExactMs so every retry and reset fits.
func (p GCRAPolicy) Validate() error {
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
		return fmt.Errorf("rate %v: must be a finite number of units per second > 0", p.Rate)
	}
	if p.Burst < 1 || p.Burst > 1<<53 {
		return fmt.Errorf("burst %d: must be 1..2^53 units", p.Burst)
	}
	if d := p.IntervalMs() * float64(p.Burst); !(d <= float64(maxExactMs/2)) {
		return fmt.Errorf("rate %v/s with burst %d: a full burst takes %.3g ms to drain, more than %d; raise the rate",
			p.Rate, p.Burst, d, maxExactMs/2)
	}
	return nil
}

// IntervalMs is the emission interval T in ms: one unit every T ms at the sustained rate.
func (p GCRAPolicy) IntervalMs() float64 { return 1000 / p.Rate }

// TTL is how long an idle key must live: the time to drain a full burst (Burst * T), at least
// one second. After it the TAT is in the past, which decides like a missing key.
func (p GCRAPolicy) TTL() time.Duration {
	ms := int64(math.Ceil(p.IntervalMs() * float64(p.Burst)))
	return time.Duration(max(ms, 1000)) * time.Millisecond
}

// GCRAKey returns the GCRA key of a tenant's endpoint: KeyFor(tenant, endpoint) + ":gcra".
func GCRAKey(tenant, endpoint string) string { return KeyFor(tenant, endpoint) + ":gcra" }

// GCRAState is one key's stored state: 16 bytes. LastMs == 0 means the key has no state yet.
type GCRAState struct {
	// TAT is the theoretical arrival time in Unix ms: when the key is fully drained.
	TAT float64
	// LastMs is the time of the last decision in Unix ms; it never moves backwards.
	LastMs int64
}

// decideGCRA makes one decision on *st at nowMs for cost units and updates *st (denied requests
// too). It is the arithmetic of lua/gcra.lua, operation by operation:
//
//	now       = max(nowMs, LastMs);  tat = max(TAT, now)   // a missing key has tat = now
//	new_tat   = tat + T*cost;  allow_at = new_tat - T*burst
//	allowed   = allow_at <= now                            // then tat = new_tat
//	remaining = max(0, floor((now - (tat - T*burst)) / T))
//	retry_ms  = 0 if allowed; -1 (RetryNever) if cost > burst; else ceil(allow_at - now)
//	reset_ms  = ceil(tat - now)
func decideGCRA(p GCRAPolicy, st *GCRAState, nowMs, cost int64) Decision {
	now := nowMs
	tat := float64(nowMs)
	if st.LastMs != 0 {
		now = max(nowMs, st.LastMs)
		tat = st.TAT
	}
	fnow := float64(now)
	tat = math.Max(tat, fnow)
	t := p.IntervalMs()
	dvt := t * float64(p.Burst)
	// The float64 conversion forbids fusing the multiply-add into an FMA: Lua rounds twice.
	newTAT := tat + float64(t*float64(cost))
	allowAt := newTAT - dvt
	var d Decision
	switch {
	case allowAt <= fnow:
		tat = newTAT
		d.Allowed = true
	case cost > p.Burst:
		d.RetryAfter = RetryNever
	default:
		d.RetryAfter = msDuration(int64(math.Ceil(allowAt - fnow)))
	}
	*st = GCRAState{TAT: tat, LastMs: now}
	d.Remaining = max(0, int64(math.Floor((fnow-(tat-dvt))/t)))
	d.ResetAfter = msDuration(int64(math.Ceil(tat - fnow)))
	return d
}

// GCRA is the in-memory twin of RedisGCRA: the same decisions and stored states from the same
// arithmetic (decideGCRA). It never expires a key; as with TokenBucket, Redis dropping an idle key
// after the TTL changes no decision when time runs at wall-clock pace. It is safe for concurrent
// use, and a decision on an existing key allocates nothing. The zero value is not usable: use
// NewGCRA.
type GCRA struct {
	policy GCRAPolicy
	states stateStripes[GCRAState]
}

var _ Limiter = (*GCRA)(nil)

// NewGCRA returns an empty in-memory GCRA limiter with policy p. Timeout and NOSCRIPT options
// are ignored; WithPolicyFunc is refused (ErrBadConfig).
func NewGCRA(p GCRAPolicy, opts ...Option) (*GCRA, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: gcra policy: %w", ErrBadConfig, err)
	}
	if _, err := newWindowConfig("gcra", opts); err != nil {
		return nil, err
	}
	g := &GCRA{policy: p}
	g.states.init()
	return g, nil
}

// Allow decides r at r.Now (time.Now when zero). ctx is not used.
func (g *GCRA) Allow(_ context.Context, r Request) (Decision, error) {
	nowMs, err := requestMs(r)
	if err != nil {
		return Decision{}, err
	}
	var buf [maxStackKey]byte
	stripe, st := g.states.lockBytes(AppendKey(buf[:0], r.Tenant, r.Endpoint))
	d := decideGCRA(g.policy, st, nowMs, r.Cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, decidedAt(r, nowMs)
	return d, nil
}

// AllowAt decides a request of cost units (>= 0) on key (KeyFor(tenant, endpoint)) at nowMs
// (Unix ms, > 0): the pure, clock-free form of Allow (Decision.At is nowMs).
func (g *GCRA) AllowAt(key string, nowMs, cost int64) Decision {
	stripe, st := g.states.lockString(key)
	d := decideGCRA(g.policy, st, nowMs, cost)
	stripe.mu.Unlock()
	d.Source, d.At = Local, time.UnixMilli(nowMs)
	return d
}

// State returns the stored state of key (KeyFor form) and whether the key exists.
func (g *GCRA) State(key string) (GCRAState, bool) { return g.states.get(key) }

// Len returns the number of keys the twin holds.
func (g *GCRA) Len() int { return g.states.len() }
