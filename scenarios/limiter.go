package scenarios

import (
	"fmt"
	"slices"
	"time"
)

// Clock modes of limiter.clock.
const (
	// ClockGateway: each decision uses the gateway's now (the request's time), sent to the
	// script; the stored time of a key never moves backwards.
	ClockGateway = "gateway"
	// ClockRedis: the script takes its time from Redis (TIME); gateway clocks do not matter.
	ClockRedis = "redis"
	// ClockSchedule: each decision uses the run's start (truncated to a millisecond) plus the
	// request's intended offset, not the wall clock, and every tenant's requests are decided in
	// schedule order by one worker: a run's decisions then depend only on its schedule, so a
	// recorded run and its replay agree exactly. Latency is still measured on the wall clock.
	ClockSchedule = "schedule"
)

// Transports of limiter.transport (kind token-bucket).
const (
	// TransportPlain: one script call per decision.
	TransportPlain = "plain"
	// TransportCoalesce: decisions coalesced into one pipeline per primary (limiter.CoalescingBucket).
	TransportCoalesce = "coalesce"
)

// NeedsCluster reports whether the limiter under test talks to Redis.
func (s *Spec) NeedsCluster() bool {
	switch s.Limiter.Kind {
	case KindMemory, KindNoop, KindGubernator:
		return false
	}
	return true
}

// WindowKind reports whether the limiter counts requests per window (limit/window policy).
// gubernator's token-bucket algorithm is one: a fixed window of limit hits (docs/limiters.md).
func (s *Spec) WindowKind() bool {
	return slices.Contains(windowKinds, s.Limiter.Kind) || s.gubernatorWindow()
}

// GatewayCount is the number of simulated gateway instances the workers are split across.
func (s *Spec) GatewayCount() int {
	if s.Limiter.Kind == KindLease && s.Limiter.Lease != nil {
		return max(s.Limiter.Lease.Gateways, 1)
	}
	return max(s.Limiter.Gateways, 1)
}

// validateLimiter checks the limiter section: the kind, the fields each kind takes or refuses,
// and the decision timeout.
func (s *Spec) validateLimiter(bad badFunc) {
	if !slices.Contains(limiterKinds, s.Limiter.Kind) {
		bad("limiter.kind", fmt.Sprintf("%q", s.Limiter.Kind), "use "+orKinds(limiterKinds))
	}
	s.validateTwoTier(bad)
	s.validateClock(bad)
	s.validateTransport(bad)
	s.validateGateways(bad)
	s.validateLease(bad)
	s.validateWild(bad)
	if t := time.Duration(s.Limiter.Timeout); t < time.Millisecond || t > 10*time.Second {
		bad("limiter.timeout", t, "must be between 1ms and 10s")
	}
}

func (s *Spec) validateClock(bad badFunc) {
	switch s.Limiter.Clock {
	case ClockGateway:
	case ClockRedis:
		if s.Limiter.Kind != KindTokenBucket && s.Limiter.Kind != KindRedisRate {
			bad("limiter.clock", ClockRedis, fmt.Sprintf("only limiter.kind token-bucket and redis-rate take their time from Redis (kind is %q): use clock: gateway", s.Limiter.Kind))
		}
	case ClockSchedule:
	default:
		bad("limiter.clock", fmt.Sprintf("%q", s.Limiter.Clock), "use gateway (the request's time), redis (TIME inside the script) or schedule (the request's intended time: deterministic replays)")
	}
}

func (s *Spec) validateTransport(bad badFunc) {
	switch s.Limiter.Transport {
	case TransportPlain:
	case TransportCoalesce:
		if s.Limiter.Kind != KindTokenBucket {
			bad("limiter.transport", TransportCoalesce, fmt.Sprintf("only limiter.kind token-bucket has a coalescing transport (kind is %q; lease fetches are pipelined already): use transport: plain", s.Limiter.Kind))
		}
	default:
		bad("limiter.transport", fmt.Sprintf("%q", s.Limiter.Transport), "use plain (one call per decision) or coalesce (one pipeline per primary)")
	}
}

// validateGateways checks limiter.gateways, and that every simulated gateway has a worker.
func (s *Spec) validateGateways(bad badFunc) {
	if g := s.GatewayCount(); g > s.Load.Concurrency && s.Load.Concurrency >= 1 {
		bad("load.concurrency", s.Load.Concurrency, fmt.Sprintf("must be at least the number of simulated gateways (%d): each gateway needs a worker", g))
	}
	if g := s.Limiter.Gateways; g != 0 {
		switch {
		case s.Limiter.Kind == KindLease:
			bad("limiter.gateways", g, "kind lease counts its gateways in limiter.lease.gateways: move the number there")
		case g < 1 || g > 1024:
			bad("limiter.gateways", g, "must be between 1 and 1024")
		}
	}
}

// validateLease checks limiter.lease. Other kinds ignore it, so --limiter can switch a lease
// scenario to central on the same trace; it must still be valid.
func (s *Spec) validateLease(bad badFunc) {
	l := s.Limiter.Lease
	if l == nil {
		return
	}
	if b := s.BucketPolicy().Burst; l.Size < 1 || (b >= 1 && l.Size > b) {
		bad("limiter.lease.size", l.Size, fmt.Sprintf("must be between 1 and policy.burst (%d)", b))
	}
	if l.Gateways < 1 || l.Gateways > 1024 {
		bad("limiter.lease.gateways", l.Gateways, "must be between 1 and 1024")
	}
	if t := time.Duration(l.TTL); t < time.Millisecond || t > time.Hour {
		bad("limiter.lease.ttl", t, "must be between 1ms and 1h")
	}
	if r := l.Refresh; r != nil && !(*r >= 0 && *r < 1) {
		bad("limiter.lease.refresh", *r, "must be 0 (off) or a fraction below 1, e.g. 0.25")
	}
	if s.HasFailPolicy() && s.Limiter.Kind == KindLease {
		bad("limiter.kind", KindLease, "fail policies wrap the central token bucket only; drop endpoints' fail or use token-bucket")
	}
}

// validateBreaker checks limiter.breaker, which decides by the endpoints' fail policies.
func (s *Spec) validateBreaker(bad badFunc) {
	b := s.Limiter.Breaker
	if b == nil {
		return
	}
	if b.Threshold < 1 || b.Threshold > 1000 {
		bad("limiter.breaker.threshold", b.Threshold, "must be between 1 and 1000")
	}
	if c := time.Duration(b.Cooldown); c < time.Millisecond || c > time.Minute {
		bad("limiter.breaker.cooldown", c, "must be between 1ms and 1m")
	}
	if !s.HasFailPolicy() {
		bad("limiter.breaker", "set", "a breaker decides by the endpoints' fail policy: set fail on at least one endpoint")
	}
}
