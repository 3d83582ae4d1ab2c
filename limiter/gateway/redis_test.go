package gateway

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/limiter"
	"ratelab/scenarios/cluster"
	"ratelab/scenarios/cluster/clustertest"
)

// newClusterClient returns a client built as Run builds it: no retries, deadlines honoured.
func newClusterClient(l *cluster.Local) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: l.Addrs(), MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
	})
}

func TestRedisGateway(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})

	t.Run("suite", func(t *testing.T) {
		c := newClusterClient(l)
		t.Cleanup(func() { _ = c.Close() })
		lim, err := limiter.NewRedisTokenBucket(c, testPolicy, limiter.WithTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		runSuite(t, lim, limiter.Central)
	})

	t.Run("closed client is 503", func(t *testing.T) {
		c := newClusterClient(l)
		lim, err := limiter.NewRedisTokenBucket(c, testPolicy, limiter.WithTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// The client works, then is closed: the same limiter now fails every decision.
		srv, err := NewServer("127.0.0.1:0", lim, nil, WithPolicy(testPolicy), WithClock(frozenClock))
		if err != nil {
			t.Fatal(err)
		}
		url := serve(t, srv.Handler())
		if resp, _ := get(t, url+"/closed", HeaderAPIKey, "closed-client-tenant"); resp.StatusCode != http.StatusOK {
			t.Fatalf("before Close: status %d, want 200", resp.StatusCode)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		resp, body := get(t, url+"/closed", HeaderAPIKey, "closed-client-tenant")
		if resp.StatusCode != http.StatusServiceUnavailable || body != string(bodyLimiterErr) {
			t.Errorf("after Close: status %d body %q, want 503 %q", resp.StatusCode, body, bodyLimiterErr)
		}
		if have := testCount(srv.Metrics(), "closed", outcomeError); have != 1 {
			t.Errorf("error outcomes = %v, want 1", have)
		}
	})
}

// TestRun runs the `ratelab gateway` body end to end: its own local cluster, a real listener,
// a burst and a 429, then a graceful stop that removes the cluster.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{
			Listen: "127.0.0.1:0", Rate: 0.1, Burst: 2, Timeout: time.Second,
			Local: cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas, Dir: dir},
			Logf:  t.Logf,
			Ready: func(addr string) { ready <- addr },
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("Run returned before serving: %v", err)
	}
	url := "http://" + addr
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		resp, body := get(t, url+"/search", "Authorization", "Bearer run-tenant")
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d body %q, want %d", i+1, resp.StatusCode, body, want)
		}
		if have := resp.Header.Get(HeaderSource); have != "central" {
			t.Errorf("request %d: %s = %q, want central", i+1, HeaderSource, have)
		}
		if have := resp.Header.Get(HeaderLimit); have != "2" {
			t.Errorf("request %d: %s = %q, want 2", i+1, HeaderLimit, have)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v, want nil", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the local cluster's dir is left after Run: %v", entries)
	}
}

func TestRunRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		have RunOptions
		is   error
	}{
		{"remote listen", RunOptions{Listen: "0.0.0.0:8080"}, ErrNotLoopback},
		{"all interfaces", RunOptions{Listen: ":8080"}, ErrNotLoopback},
		{"bad burst", RunOptions{Burst: -1}, nil},
		{"bad cluster", RunOptions{Cluster: "docker"}, nil},
		{"bad upstream", RunOptions{Upstream: "127.0.0.1:9000"}, nil},
	} {
		err := Run(t.Context(), tc.have) // fails in Validate: starts nothing
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Run = %v, want an error (is %v)", tc.name, err, tc.is)
		}
	}
}
