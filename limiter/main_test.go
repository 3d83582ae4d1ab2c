package limiter_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
)

// One real single-primary Redis Cluster serves every test and benchmark of this package. It is
// started by the first test that needs it (so pure tests never start Redis) and stopped by
// TestMain. Tests isolate themselves with unique tenants (uniqueTenant), never by flushing.
var shared struct {
	once sync.Once
	l    *cluster.Local
	c    *redis.ClusterClient
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		_ = shared.c.Close()
	}
	if shared.l != nil {
		if err := shared.l.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "limiter_test: close cluster:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sharedCluster returns the package's cluster and a client built as the limiter requires
// (no retries, context deadlines honoured), starting them on first use. A missing redis-server
// fails the test.
func sharedCluster(tb testing.TB) (*cluster.Local, *redis.ClusterClient) {
	tb.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cluster.DefaultStartTimeout)
		defer cancel()
		shared.l, shared.err = cluster.StartLocal(ctx, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
		if shared.err != nil {
			return
		}
		shared.c = newClusterClient(shared.l.Addrs())
		shared.err = shared.c.Ping(ctx).Err()
	})
	if shared.err != nil {
		tb.Fatalf("start the shared single-primary Redis Cluster: %v", shared.err)
	}
	return shared.l, shared.c
}

// newClusterClient builds a client the way RedisTokenBucket's doc asks: no command retries, no
// dial retries, and ContextTimeoutEnabled (the per-decision deadline works).
func newClusterClient(addrs []string) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 addrs,
		MaxRetries:            -1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
		PoolSize:              128,
	})
}

var tenantSeq atomic.Int64

// uniqueTenant returns a tenant no other test (or earlier -count run) in this process uses, so
// tests share the cluster without flushing it.
func uniqueTenant(tb testing.TB) string {
	return fmt.Sprintf("%s#%d", tb.Name(), tenantSeq.Add(1))
}
