package engine

import (
	"context"
	"fmt"
	"time"

	"ratelab/cluster/gubernator"
	"ratelab/limiter"
)

// newRedisRate builds go-redis/redis_rate's limiter on the run's cluster (kind redis-rate). Its
// decisions are judged at the time its script read, to the microsecond (Session.JudgeTick).
func (s *Session) newRedisRate() (limiter.Limiter, error) {
	rr, err := limiter.NewRedisRate(s.store.client, s.policy, limiter.WithTimeout(time.Duration(s.Spec.Limiter.Timeout)))
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	l := rr.Limit()
	s.env.Mode = fmt.Sprintf("central redis-rate (go-redis/redis_rate v10: %d per %v, burst %d; redis clock)", l.Rate, l.Period, l.Burst)
	return rr, nil
}

// newGubernator starts the run's gubernator cluster (stopped at Close) and builds the client
// every gateway asks through (kind gubernator).
func (s *Session) newGubernator(ctx context.Context) (limiter.Limiter, error) {
	cfg := s.Spec.Limiter.Gubernator
	l, err := s.Spec.GubernatorLimit()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	c, err := gubernator.Start(ctx, gubernator.Options{Daemons: cfg.Daemons,
		Env: map[string]string{"GUBER_GLOBAL_SYNC_WAIT": time.Duration(cfg.SyncWait).String()}})
	if err != nil {
		return nil, err
	}
	s.onClose(c.Close)
	s.guber = c
	g, err := limiter.NewGubernator(c.HTTPAddrs(), l, limiter.WithTimeout(time.Duration(s.Spec.Limiter.Timeout)))
	if err != nil {
		return nil, err
	}
	s.onClose(func() error { g.Close(); return nil })
	s.env.Provider = "gubernator"
	s.env.Mode = fmt.Sprintf("gubernator %s %s (%d daemons, %d per %v, burst %d, sync %v)", cfg.Behavior, cfg.Algorithm,
		cfg.Daemons, l.Limit, l.Duration, l.Burst, time.Duration(cfg.SyncWait))
	return g, nil
}

// Gubernator is the run's gubernator cluster (kind gubernator), for faults a driver injects
// itself; nil for other kinds.
func (s *Session) Gubernator() *gubernator.Cluster { return s.guber }
