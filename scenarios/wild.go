package scenarios

import (
	"fmt"
	"time"

	"ratelab/limiter"
)

// Defaults of limiter.gubernator.
const (
	// DefaultGubernatorDaemons is the size of the gubernator cluster a run starts.
	DefaultGubernatorDaemons = 3
	// DefaultGubernatorSyncWait is gubernator's own GlobalSyncWait: how long a daemon collects
	// GLOBAL hits (and the owner its updates) before it sends them.
	DefaultGubernatorSyncWait = 100 * time.Millisecond
)

// GubernatorCfg is kind gubernator: a cluster of gubernator daemons on loopback, asked through
// their HTTP gateways round robin (docs/limiters.md).
type GubernatorCfg struct {
	// Behavior: batching (forward to the key's owner, batched; the default), no-batching
	// (forward one by one) or global (answer locally, send the hits to the owner later).
	Behavior string `yaml:"behavior,omitempty"`
	// Algorithm: leaky-bucket (a refilling bucket of rate and burst: the default) or
	// token-bucket (gubernator's: limit per window, windows starting at a key's first hit;
	// policy written as limit and window).
	Algorithm string `yaml:"algorithm,omitempty"`
	// Daemons in the cluster, 1..16. Default 3.
	Daemons int `yaml:"daemons,omitempty"`
	// SyncWait is the daemons' GUBER_GLOBAL_SYNC_WAIT, 1ms..10s. Default 100ms (gubernator's).
	SyncWait Duration `yaml:"sync_wait,omitempty"`
}

// defaultGubernator fills limiter.gubernator for kind gubernator.
func (s *Spec) defaultGubernator() {
	l := &s.Limiter
	if l.Kind == KindGubernator && l.Gubernator == nil {
		l.Gubernator = &GubernatorCfg{}
	}
	g := l.Gubernator
	if g == nil {
		return
	}
	if g.Behavior == "" {
		g.Behavior = string(limiter.GubernatorBatching)
	}
	if g.Algorithm == "" {
		g.Algorithm = string(limiter.GubernatorLeakyBucket)
	}
	if g.Daemons == 0 {
		g.Daemons = DefaultGubernatorDaemons
	}
	if g.SyncWait == 0 {
		g.SyncWait = Duration(DefaultGubernatorSyncWait)
	}
}

// gubernatorWindow reports whether the run is gubernator's token-bucket algorithm, a window.
func (s *Spec) gubernatorWindow() bool {
	g := s.Limiter.Gubernator
	return s.Limiter.Kind == KindGubernator && g != nil && g.Algorithm == string(limiter.GubernatorTokenBucket)
}

// GubernatorLimit is the limit a gubernator run sends with every request: the leaky bucket of
// the scenario's bucket policy, or the token bucket's limit per window.
func (s *Spec) GubernatorLimit() (limiter.GubernatorLimit, error) {
	g := s.Limiter.Gubernator
	if g == nil {
		return limiter.GubernatorLimit{}, fmt.Errorf("limiter.gubernator: not set")
	}
	b := limiter.GubernatorBehavior(g.Behavior)
	if s.gubernatorWindow() {
		return limiter.GubernatorLimit{Algorithm: limiter.GubernatorTokenBucket, Behavior: b, Limit: s.Policy.Limit,
			Duration: time.Duration(s.Policy.Window)}, nil
	}
	return limiter.GubernatorLeaky(s.BucketPolicy(), b)
}

// validateWild checks what kinds redis-rate and gubernator need beyond the common fields.
func (s *Spec) validateWild(bad badFunc) {
	l := s.Limiter
	switch l.Kind {
	case KindRedisRate:
		if l.Clock != ClockRedis {
			bad("limiter.clock", l.Clock, "kind redis-rate decides at Redis's TIME (inside its script): use clock: redis")
		}
		if !s.HasTariffs() {
			if _, err := limiter.RedisRateLimit(s.BucketPolicy()); err != nil {
				bad("policy", "rate", err.Error())
			}
		}
	case KindGubernator:
		s.validateGubernator(bad)
	}
	if (l.Kind == KindRedisRate || l.Kind == KindGubernator) && s.HasFailPolicy() {
		bad("limiter.kind", l.Kind, "fail policies wrap ratelab's token bucket only: drop endpoints' fail")
	}
}

// validateGubernator checks limiter.gubernator.
func (s *Spec) validateGubernator(bad badFunc) {
	g := s.Limiter.Gubernator
	if g == nil {
		return // ApplyDefaults sets it
	}
	switch limiter.GubernatorBehavior(g.Behavior) {
	case limiter.GubernatorBatching, limiter.GubernatorNoBatching, limiter.GubernatorGlobal:
	default:
		bad("limiter.gubernator.behavior", fmt.Sprintf("%q", g.Behavior), "use batching, no-batching or global")
	}
	switch limiter.GubernatorAlgorithm(g.Algorithm) {
	case limiter.GubernatorLeakyBucket, limiter.GubernatorTokenBucket:
	default:
		bad("limiter.gubernator.algorithm", fmt.Sprintf("%q", g.Algorithm), "use leaky-bucket or token-bucket")
	}
	if g.Daemons < 1 || g.Daemons > 16 {
		bad("limiter.gubernator.daemons", g.Daemons, "must be between 1 and 16")
	}
	if w := time.Duration(g.SyncWait); w < time.Millisecond || w > 10*time.Second {
		bad("limiter.gubernator.sync_wait", w, "must be between 1ms and 10s")
	}
	if s.Limiter.Clock != ClockGateway {
		bad("limiter.clock", s.Limiter.Clock, "kind gubernator decides at the request's time, sent as created_at: use clock: gateway")
	}
	if !s.HasTariffs() && !s.gubernatorWindow() {
		if _, err := s.GubernatorLimit(); err != nil {
			bad("policy", "rate", err.Error())
		}
	}
}
