// Package clustertest starts a real local Redis Cluster for a test and stops it when the test
// ends: formed by ratelab (Start) or by redis-cli as a user forms one (StartRedisCLI). A missing
// redis-server or redis-cli fails the test with install advice; it is never a skip. It also
// holds what the tests on real peers share: the fault tier's verdict on a failure (Watch: was
// the machine starved, or did the product misbehave) and the skip that CI turns into a failure
// (SkipUnlessRequired).
package clustertest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
)

// Start starts a local cluster with opts (the zero Options is 3 primaries x 1 replica on free
// ports), registers Close with t.Cleanup and fails the test with the reason when it cannot start.
// Progress goes to t.Logf unless opts.Logf is set.
func Start(t testing.TB, opts cluster.Options) *cluster.Local {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), cluster.DefaultStartTimeout)
	defer cancel()
	l, err := cluster.StartLocal(ctx, opts)
	if err != nil {
		t.Fatalf("clustertest: start local Redis Cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("clustertest: close local Redis Cluster: %v", err)
		}
	})
	return l
}

// Client returns a go-redis ClusterClient for l, closed when the test ends.
func Client(t testing.TB, l *cluster.Local) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: l.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
