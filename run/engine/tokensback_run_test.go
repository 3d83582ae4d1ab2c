package engine

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/limiter"
	"ratelab/scenarios"
)

// skipStore answers every k-th request "allowed by the store" without asking it, as a debit a
// fault returned would look to the clients, and counts the tokens it answered so.
type skipStore struct {
	inner limiter.Limiter
	every int64
	n     atomic.Int64
	lost  atomic.Int64
}

func (s *skipStore) Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error) {
	if s.n.Add(1)%s.every == 0 {
		s.lost.Add(r.Cost)
		return limiter.Decision{Allowed: true, Source: limiter.Central}, nil
	}
	return s.inner.Allow(ctx, r)
}

// Two audited runs on one running cluster, over the same keys: the second reads its own audit
// counters, not the first run's added to them. The second run loses a known number of debits
// (every 5th request is answered "allowed" without reaching the store): tokens back must count
// exactly those, where counters shared with the first run would cover them with its debits.
func TestTokensBackReadsOnlyThisRunsAudit(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: 0})
	state := filepath.Join(t.TempDir(), "state.json")
	if err := l.SaveState(state); err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t, "token-bucket", 400, time.Second)
	spec.Cluster.Provider = "running"
	spec.Tenants.Count = 5
	spec.Policy.Rate, spec.Policy.Burst = 1000, 1000 // every request the store sees is allowed
	spec.Limiter.Audit = true
	spec.Limiter.Timeout = scenarios.Duration(2 * time.Second) // no unknown outcome
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	first, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	if tb := first.Summary.TokensBack; tb == nil || tb.Min != 0 || tb.Max != 0 {
		t.Fatalf("first run: tokens back %+v, want 0..0 (nothing lost)", tb)
	}
	skip := &skipStore{every: 5}
	second, err := Run(context.Background(), spec, Options{Out: t.TempDir(), StateFile: state,
		Wrap: func(lim limiter.Limiter) limiter.Limiter { skip.inner = lim; return skip }})
	if err != nil {
		t.Fatal(err)
	}
	tb, lost := second.Summary.TokensBack, skip.lost.Load()
	if lost == 0 || second.Summary.Overspend.UnknownOutcomes != 0 {
		t.Fatalf("second run: %d tokens skipped, %d unknown outcomes: the test needs some of the first and none of the second", lost, second.Summary.Overspend.UnknownOutcomes)
	}
	if tb == nil || tb.Min != lost || tb.Max != lost {
		t.Errorf("second run: tokens back %+v, want %d..%d (the debits it skipped; the first run's counters are not its own)", tb, lost, lost)
	}
}
