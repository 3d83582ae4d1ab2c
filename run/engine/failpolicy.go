package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/limiter"
	"ratelab/scenarios"
)

// slotRefresh is how often the slot map behind the circuit breaker is re-read: a failover moves
// slots, and the breaker must then judge the new owner.
const slotRefresh = 250 * time.Millisecond

// routed sends each endpoint's decisions either straight to the store (no fail policy: a failure
// is an error outcome) or through the FailSafe that decides by the endpoint's policy.
type routed struct {
	inner, safe limiter.Limiter
	failing     []string // endpoints with a fail policy
}

func (r *routed) Allow(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	for _, e := range r.failing {
		if e == req.Endpoint {
			return r.safe.Allow(ctx, req)
		}
	}
	return r.inner.Allow(ctx, req)
}

// slotOwners maps each slot to its primary's address, re-read in the background.
type slotOwners struct {
	table atomic.Pointer[[cluster.TotalSlots]string]
}

func (s *slotOwners) refresh(ctx context.Context, c *redis.ClusterClient) {
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return
	}
	var t [cluster.TotalSlots]string
	for _, r := range slots {
		if len(r.Nodes) == 0 {
			continue
		}
		for i := max(r.Start, 0); i <= r.End && i < cluster.TotalSlots; i++ {
			t[i] = r.Nodes[0].Addr
		}
	}
	s.table.Store(&t)
}

// run keeps the table fresh until ctx ends.
func (s *slotOwners) run(ctx context.Context, c *redis.ClusterClient) {
	t := time.NewTicker(slotRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			s.refresh(rctx, c)
			cancel()
		}
	}
}

// nodeOf is the breaker's view of a request: the primary that owns its tenant's slot. The key's
// hash tag is the tenant, so the slot is CRC16(tenant): no key is built.
func (s *slotOwners) nodeOf(r limiter.Request) string {
	t := s.table.Load()
	if t == nil {
		return ""
	}
	return t[cluster.KeySlot(r.Tenant)]
}

// withFailPolicy wraps the store limiter with the endpoints' fail policies (and the breaker) when
// any endpoint has one. A store failure a policy answered is in its decision (Decision.Failure),
// where the records' consumers read it.
func withFailPolicy(ctx context.Context, spec *scenarios.Spec, inner limiter.Limiter, c *redis.ClusterClient, policyFor limiter.PolicyFunc) (limiter.Limiter, error) {
	if !spec.HasFailPolicy() {
		return inner, nil
	}
	pols := map[string]limiter.FailPolicy{}
	var failing []string
	for _, e := range spec.Endpoints {
		if e.Fail == "" {
			continue
		}
		m, err := limiter.ParseFailMode(e.Fail)
		if err != nil {
			return nil, err
		}
		pols[e.Name] = limiter.FailPolicy{Mode: m, Budget: time.Duration(e.Budget), LocalFraction: e.LocalFraction}
		failing = append(failing, e.Name)
	}
	var opts []limiter.FailSafeOption
	if b := spec.Limiter.Breaker; b != nil {
		owners := &slotOwners{}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		owners.refresh(rctx, c)
		cancel()
		go owners.run(ctx, c)
		opts = append(opts, limiter.WithBreaker(limiter.NewBreaker(b.Threshold, time.Duration(b.Cooldown)), owners.nodeOf))
	}
	safe, err := limiter.NewFailSafe(inner, policyFor,
		func(endpoint string) limiter.FailPolicy { return pols[endpoint] }, opts...)
	if err != nil {
		return nil, err
	}
	return &routed{inner: inner, safe: safe, failing: failing}, nil
}
