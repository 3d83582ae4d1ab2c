package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"ratelab/cluster"
	"ratelab/cluster/clustertest"
	"ratelab/limiter"
)

func TestRedisGateway(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})

	t.Run("suite", func(t *testing.T) {
		c := newClusterClient(l.ClientOptions())
		t.Cleanup(func() { _ = c.Close() })
		lim, err := limiter.NewRedisTokenBucket(c, testPolicy, limiter.WithTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		runSuite(t, lim, limiter.Central)
	})

	t.Run("closed client is 503", func(t *testing.T) {
		c := newClusterClient(l.ClientOptions())
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

// TestServe runs the `ratelab gateway` body end to end on a cluster the test owns: a real
// listener, a burst and a 429, then a graceful stop on ctx's end.
func TestServe(t *testing.T) {
	t.Parallel()
	l := clustertest.Start(t, cluster.Options{Primaries: 1, Replicas: cluster.NoReplicas})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, l.ClientOptions(), ServeOptions{
			Listen: "127.0.0.1:0", Rate: 0.1, Burst: 2, Timeout: time.Second,
			Logf:    t.Logf,
			Ready:   func(addr string) { ready <- addr },
			Version: "v9.9.9", Commit: "c0ffee",
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("Serve returned before serving: %v", err)
	}
	url := "http://" + addr
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		resp, body := get(t, url+"/search", "Authorization", "Bearer serve-tenant")
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
	_, body := get(t, url+MetricsPath)
	for _, want := range []string{
		`ratelab_gateway_decisions_total{endpoint="search",outcome="allowed",source="central"} 2`,
		`ratelab_gateway_decisions_total{endpoint="search",outcome="denied",source="central"} 1`,
		`ratelab_build_info{commit="c0ffee",go="` + runtime.Version() + `",version="v9.9.9"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v, want nil", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Errorf("%s still accepts connections after Serve returned", addr)
	}
}

func TestServeRefusesBadOptions(t *testing.T) {
	t.Parallel()
	// Addresses nothing listens on: every case fails before Serve dials anything.
	redisOpts := &redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}
	for _, tc := range []struct {
		name      string
		redisOpts *redis.ClusterOptions
		have      ServeOptions
		is        error
	}{
		{"remote listen", redisOpts, ServeOptions{Listen: "0.0.0.0:8080"}, ErrNotLoopback},
		{"all interfaces", redisOpts, ServeOptions{Listen: ":8080"}, ErrNotLoopback},
		{"bad burst", redisOpts, ServeOptions{Burst: -1}, nil},
		{"bad timeout", redisOpts, ServeOptions{Timeout: -time.Second}, nil},
		{"bad upstream", redisOpts, ServeOptions{Upstream: "127.0.0.1:9000"}, nil},
		{"no redis options", nil, ServeOptions{}, nil},
		{"no redis address", &redis.ClusterOptions{}, ServeOptions{}, nil},
	} {
		err := Serve(t.Context(), tc.redisOpts, tc.have)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Serve = %v, want an error (is %v)", tc.name, err, tc.is)
		}
	}
}

// TestNewClusterClientFailsFast: the client Serve decides through never retries, dials once
// and honours deadlines, and the caller's options are left as they were.
func TestNewClusterClientFailsFast(t *testing.T) {
	t.Parallel()
	have := &redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, Password: "pw"}
	c := newClusterClient(have)
	defer c.Close()
	o := c.Options()
	if o.MaxRetries != -1 || o.DialerRetries != 1 || !o.ContextTimeoutEnabled || o.Password != "pw" {
		t.Errorf("client options MaxRetries %d DialerRetries %d ContextTimeoutEnabled %v Password %q, want -1, 1, true, pw",
			o.MaxRetries, o.DialerRetries, o.ContextTimeoutEnabled, o.Password)
	}
	if have.MaxRetries != 0 || have.DialerRetries != 0 || have.ContextTimeoutEnabled {
		t.Errorf("the caller's options changed: %+v", have)
	}
}
