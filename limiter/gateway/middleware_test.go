package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"ratelab/limiter"
)

// failing is a limiter whose store is down: every decision errors.
type failing struct{ err error }

func (f failing) Allow(context.Context, limiter.Request) (limiter.Decision, error) {
	return limiter.Decision{}, f.err
}

// fixed answers every request with d and records the last request.
type fixed struct {
	d    limiter.Decision
	last chan limiter.Request
}

func (f fixed) Allow(_ context.Context, r limiter.Request) (limiter.Decision, error) {
	f.last <- r
	return f.d, nil
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestMiddlewareNoopPassesThrough(t *testing.T) {
	t.Parallel()
	var hits int
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("upstream " + r.URL.Path))
	})
	url := serve(t, Middleware(limiter.Noop{})(up))
	for i := range 5 {
		resp, body := get(t, url+"/any/path", HeaderAPIKey, "k")
		if resp.StatusCode != http.StatusTeapot || body != "upstream /any/path" {
			t.Fatalf("request %d: status %d body %q, want the upstream's 418", i, resp.StatusCode, body)
		}
		if have := resp.Header.Get(HeaderSource); have != "local" {
			t.Errorf("%s = %q, want local", HeaderSource, have)
		}
		if have := resp.Header.Get(HeaderLimit); have != "" {
			t.Errorf("%s = %q without a policy, want it omitted", HeaderLimit, have)
		}
	}
	if hits != 5 {
		t.Errorf("upstream saw %d requests, want 5", hits)
	}
}

func TestMiddlewareLimiterErrorIs503(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	up := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("upstream called after a limiter error") })
	for _, tc := range []struct {
		have error
		want int
	}{
		{errors.New("limiter: token bucket rl:{k}:x: dial tcp 127.0.0.1:1: connect: connection refused"), http.StatusServiceUnavailable},
		{context.DeadlineExceeded, http.StatusServiceUnavailable},
		{limiter.ErrBadRequest, http.StatusBadRequest},
	} {
		url := serve(t, Middleware(failing{tc.have}, WithMetrics(m))(up))
		resp, body := get(t, url+"/x", HeaderAPIKey, "secret-key")
		if resp.StatusCode != tc.want || strings.Contains(body, "secret-key") || strings.Contains(body, "127.0.0.1") {
			t.Errorf("limiter error %v: status %d body %q, want %d without internals", tc.have, resp.StatusCode, body, tc.want)
		}
		if resp.Header.Get(HeaderRetryAfter) != "" {
			t.Errorf("limiter error %v: Retry-After set; only a decision sets it", tc.have)
		}
	}
	if have := testCount(m, "x", outcomeError); have != 3 {
		t.Errorf("error outcomes = %v, want 3", have)
	}
}

func TestMiddlewareRequestFields(t *testing.T) {
	t.Parallel()
	lim := fixed{d: limiter.Decision{Allowed: true}, last: make(chan limiter.Request, 1)}
	h := Middleware(lim,
		WithKeyMap(map[string]string{"key-1": "acme", "key-2": "acme"}),
		WithEndpointFunc(func(r *http.Request) string { return r.Method + r.URL.Path }),
		WithCost(7), WithClock(frozenClock))(EchoUpstream())
	url := serve(t, h)
	for _, tc := range []struct {
		key, path  string
		wantStatus int
		want       limiter.Request
	}{
		{"key-1", "/a", http.StatusOK, limiter.Request{Tenant: "acme", Endpoint: "GET/a", Cost: 7, Now: testNow}},
		{"key-2", "/b", http.StatusOK, limiter.Request{Tenant: "acme", Endpoint: "GET/b", Cost: 7, Now: testNow}},
		{"key-3", "/a", http.StatusUnauthorized, limiter.Request{}},
	} {
		resp, body := get(t, url+tc.path, HeaderAPIKey, tc.key)
		if resp.StatusCode != tc.wantStatus {
			t.Fatalf("key %s: status %d body %q, want %d", tc.key, resp.StatusCode, body, tc.wantStatus)
		}
		if tc.wantStatus != http.StatusOK {
			if strings.Contains(body, tc.key) {
				t.Errorf("401 body %q echoes the key", body)
			}
			continue
		}
		if have := <-lim.last; have != tc.want {
			t.Errorf("key %s: limiter saw %+v, want %+v", tc.key, have, tc.want)
		}
	}
}

func TestProxyUpstream(t *testing.T) {
	t.Parallel()
	backend := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("backend " + r.URL.Path + " " + r.Header.Get("X-Forwarded-Host")))
	}))
	up, err := ProxyUpstream(backend)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer("127.0.0.1:0", limiter.Noop{}, up)
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, srv.Handler())
	resp, body := get(t, url+"/orders/42", HeaderAPIKey, "k")
	want := "backend /orders/42 " + strings.TrimPrefix(url, "http://")
	if resp.StatusCode != http.StatusOK || body != want {
		t.Errorf("through the proxy: status %d body %q, want 200 %q", resp.StatusCode, body, want)
	}
	for _, bad := range []string{"", "127.0.0.1:9000", "ftp://x", "http://", "://x"} {
		if _, err := ProxyUpstream(bad); err == nil {
			t.Errorf("ProxyUpstream(%q) accepted a URL it cannot proxy to", bad)
		}
	}
}

func TestNewServerSettings(t *testing.T) {
	t.Parallel()
	if _, err := NewServer("127.0.0.1:0", nil, nil); err == nil {
		t.Error("NewServer with a nil limiter: want an error")
	}
	s, err := NewServer("127.0.0.1:0", limiter.Noop{}, nil, WithMaxHeaderBytes(4096), WithTimeouts(Timeouts{Write: 3e9}))
	if err != nil {
		t.Fatal(err)
	}
	h := s.HTTPServer()
	d := DefaultTimeouts()
	have := Timeouts{h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout}
	want := Timeouts{d.ReadHeader, d.Read, 3e9, d.Idle}
	if have != want || h.MaxHeaderBytes != 4096 {
		t.Errorf("server settings %+v max header %d, want %+v and 4096", have, h.MaxHeaderBytes, want)
	}
}

func TestMetricsEndpointLabelsAreBounded(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.maxEndpoints = 2
	for _, ep := range []string{"a", "b", "c", "d", "a", "\xff"} {
		m.record(ep, outcomeAllowed, sourceIndex(limiter.Local), 0)
	}
	for _, tc := range []struct {
		endpoint string
		want     float64
	}{{"a", 2}, {"b", 1}, {OtherEndpoint, 3}, {"c", 0}, {"d", 0}} {
		if have := testCount(m, tc.endpoint, outcomeAllowed); have != tc.want {
			t.Errorf("allowed{endpoint=%q} = %v, want %v", tc.endpoint, have, tc.want)
		}
	}
	if len(m.endpoints) != 3 {
		t.Errorf("%d cached endpoints, want 3 (a, b, other)", len(m.endpoints))
	}
	var nilMetrics *Metrics
	nilMetrics.record("a", outcomeAllowed, sourceNoneIndex, 0) // must not panic
	nilMetrics.unauthorized()
}

func TestMetricsLabelSourceOutcomeAndBuild(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.record("a", outcomeAllowed, sourceIndex(limiter.FailOpen), time.Millisecond)
	m.record("a", outcomeDenied, sourceIndex(limiter.FailClosed), time.Millisecond)
	m.record("a", outcomeAllowed, sourceIndex(limiter.Source(200)), time.Millisecond)
	m.record("a", outcomeError, sourceNoneIndex, time.Millisecond)
	m.SetBuildInfo("v1.2.3", "abc123")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`ratelab_gateway_decisions_total{endpoint="a",outcome="allowed",source="fail-open"} 1`,
		`ratelab_gateway_decisions_total{endpoint="a",outcome="denied",source="fail-closed"} 1`,
		`ratelab_gateway_decisions_total{endpoint="a",outcome="allowed",source="unknown"} 1`,
		`ratelab_gateway_decisions_total{endpoint="a",outcome="error",source="none"} 1`,
		`ratelab_gateway_decision_seconds_count{outcome="allowed"} 2`,
		`ratelab_gateway_decision_seconds_count{outcome="error"} 1`,
		`ratelab_build_info{commit="abc123",go="` + runtime.Version() + `",version="v1.2.3"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if n := strings.Count(body, "ratelab_build_info{"); n != 1 {
		t.Errorf("%d ratelab_build_info series, want 1 (SetBuildInfo replaces the default)", n)
	}
	if want := []string{"central", "lease", "local", "fail-open", "fail-closed", "unknown", SourceNone}; !slices.Equal(sourceNames, want) {
		t.Errorf("source labels %v, want %v", sourceNames, want)
	}
}
