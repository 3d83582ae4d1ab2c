package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/scenarios"
)

// buildGateways builds the limiter of the spec's kind behind every gateway: one lease limiter
// per gateway in lease mode (each holds its own leases), one shared limiter otherwise (the
// gateways differ only in their clocks).
func (s *Session) buildGateways(ctx context.Context) error {
	if s.Spec.Regions != nil {
		return s.buildRegions(ctx)
	}
	lim, err := s.newLimiter(ctx)
	if err != nil {
		return err
	}
	n := s.Spec.GatewayCount()
	if len(s.leases) > 0 {
		for _, l := range s.leases {
			s.gateways = append(s.gateways, l)
		}
	} else {
		for range n {
			s.gateways = append(s.gateways, lim)
		}
	}
	if s.opts.Wrap != nil {
		for i := range s.gateways {
			s.gateways[i] = s.opts.Wrap(s.gateways[i])
		}
	}
	if s.Spec.Via == scenarios.ViaHTTP {
		s.env.Mode = "http gateway, " + s.env.Mode
	}
	return nil
}

// newLimiter builds the spec's limiter (nil in lease mode: s.leases then holds one per gateway)
// and records its mode in the environment.
func (s *Session) newLimiter(ctx context.Context) (limiter.Limiter, error) {
	spec := s.Spec
	switch spec.Limiter.Kind {
	case scenarios.KindNoop:
		return limiter.Noop{}, nil
	case scenarios.KindMemory:
		s.env.Mode = "local"
		tb, err := limiter.NewTokenBucket(s.policy, s.bucketOptions()...)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		return tb, nil
	case scenarios.KindLease:
		s.env.Mode = "lease"
		var err error
		s.leases, err = newLeases(ctx, spec, s.gatewayClients(ctx, spec.Limiter.Lease.Gateways), s.policy)
		return nil, err
	case scenarios.KindTokenBucket:
		s.env.Mode = "central"
		return s.newCentralBucket(ctx)
	case scenarios.KindRedisRate:
		return s.newRedisRate()
	case scenarios.KindGubernator:
		return s.newGubernator(ctx)
	}
	s.env.Mode = "central " + string(spec.Limiter.Kind)
	return newAlgorithm(ctx, spec, s.store.client)
}

// bucketOptions are the token bucket's options: each tenant's tariff, where the spec has them.
func (s *Session) bucketOptions() []limiter.Option {
	if s.tariffs == nil {
		return nil
	}
	return []limiter.Option{limiter.WithPolicyFunc(s.tariffs.cache.BucketPolicyFunc())}
}

// newCentralBucket builds the Redis token bucket with the spec's clock and transport (plain:
// one EVALSHA per decision; coalesce: concurrent decisions batched into one pipeline per
// primary), wrapped in the endpoints' fail policies.
func (s *Session) newCentralBucket(ctx context.Context) (limiter.Limiter, error) {
	spec := s.Spec
	if err := s.store.preloadScript(ctx); err != nil {
		return nil, err
	}
	opts := append(s.bucketOptions(), limiter.WithTimeout(time.Duration(spec.Limiter.Timeout)))
	if spec.Limiter.Clock == scenarios.ClockRedis {
		opts = append(opts, limiter.WithRedisClock())
		s.env.Mode += ", redis clock"
	}
	dur, note := durabilityOptions(spec, s.back.auditRun())
	opts = append(opts, dur...)
	s.env.Mode += note
	var rb limiter.Limiter
	if spec.Limiter.Transport == scenarios.TransportCoalesce {
		cb, err := limiter.NewCoalescingBucket(s.store.client, s.policy, limiter.WithBucketOptions(opts...))
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		// Closed after the driver: what a coalescer has queued is sent.
		s.onClose(func() error { cb.Close(); return nil })
		s.env.Mode += ", coalescing transport"
		rb = cb
	} else {
		tb, err := limiter.NewRedisTokenBucket(s.store.client, s.policy, opts...)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		rb = tb
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.onClose(func() error { cancel(); return nil })
	lim, err := withFailPolicy(bg, spec, rb, s.store.client, s.PolicyFunc())
	if err != nil {
		return nil, fmt.Errorf("fail policy: %w", err)
	}
	return lim, nil
}

// newAlgorithm builds the Redis limiter of a kind other than token-bucket and lease, and loads
// its script on every primary before the clock starts. GCRA is judged against the token-bucket
// envelope of the same rate and burst (it is the same limit, kept as a theoretical arrival
// time); the window kinds against "at most limit in any window".
func newAlgorithm(ctx context.Context, spec *scenarios.Spec, c *redis.ClusterClient) (limiter.Limiter, error) {
	timeout := limiter.WithTimeout(time.Duration(spec.Limiter.Timeout))
	w, n := time.Duration(spec.Policy.Window), spec.Policy.Limit
	var (
		lim interface {
			limiter.Limiter
			Load(context.Context) error
		}
		err error
	)
	switch spec.Limiter.Kind {
	case scenarios.KindGCRA:
		b := spec.BucketPolicy()
		lim, err = limiter.NewRedisGCRA(c, limiter.GCRAPolicy{Rate: b.Rate, Burst: b.Burst}, timeout)
	case scenarios.KindFixedWindow:
		lim, err = limiter.NewRedisFixedWindow(c, limiter.FixedWindowPolicy{Window: w, Limit: n}, timeout)
	case scenarios.KindSlidingWindow:
		lim, err = limiter.NewRedisSlidingWindow(c, limiter.SlidingWindowPolicy{Window: w, Limit: n}, timeout)
	case scenarios.KindSlidingLog:
		lim, err = limiter.NewRedisSlidingLog(c, limiter.SlidingLogPolicy{Window: w, Limit: n}, timeout)
	case scenarios.KindTwoTier:
		lim, err = limiter.NewRedisTwoTier(c, limiter.TwoTierPolicy{
			Bucket: spec.BucketPolicy(),
			Quota:  spec.Policy.Quota.Limit, QuotaWindow: time.Duration(spec.Policy.Quota.Window),
		}, timeout)
	default:
		return nil, fmt.Errorf("limiter.kind %q: no Redis implementation", spec.Limiter.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := setupRetry(ctx, func() error { return lim.Load(ctx) }); err != nil {
		return nil, fmt.Errorf("loading the %s script on the primaries: %w", spec.Limiter.Kind, err)
	}
	return lim, nil
}

// newLeases builds one LeaseLimiter per gateway, all on the same cluster (gateway i through
// clients[i]), and loads the lease script on every primary before the clock starts.
func newLeases(ctx context.Context, spec *scenarios.Spec, clients []*redis.ClusterClient, p limiter.BucketPolicy) ([]*limiter.LeaseLimiter, error) {
	cfg := spec.Limiter.Lease
	refresh := scenarios.DefaultLeaseRefresh // a spec built in code may leave it nil
	if cfg.Refresh != nil {
		refresh = *cfg.Refresh
	}
	out := make([]*limiter.LeaseLimiter, cfg.Gateways)
	for i := range out {
		l, err := limiter.NewLeaseLimiter(clients[i], p, cfg.Size,
			limiter.WithLeaseTTL(time.Duration(cfg.TTL)), limiter.WithLeaseTimeout(time.Duration(spec.Limiter.Timeout)),
			limiter.WithLeaseRefresh(refresh))
		if err != nil {
			return nil, fmt.Errorf("limiter.lease: %w", err)
		}
		out[i] = l
	}
	if err := setupRetry(ctx, func() error { return out[0].Load(ctx) }); err != nil {
		return nil, fmt.Errorf("loading the lease script on the primaries: %w", err)
	}
	return out, nil
}
