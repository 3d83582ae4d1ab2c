package gateway

import (
	"net/http"
	"strings"
	"time"

	"ratelab/limiter"
)

// DefaultCost is the tokens one request takes unless WithCost or WithCostFunc says otherwise.
const DefaultCost = 1

// RootEndpoint is the endpoint DefaultEndpoint gives a request for "/" (no first segment).
const RootEndpoint = "root"

// Option configures Middleware and NewServer.
type Option func(*config)

type config struct {
	tenantOf   func(apiKey string) (tenant string, ok bool)
	endpointOf func(*http.Request) string
	costOf     func(*http.Request) int64
	limitOf    limiter.PolicyFunc
	metrics    *Metrics
	hotKeys    *HotKeys
	now        func() time.Time
	maxHeader  int
	timeouts   Timeouts
}

func newConfig(opts []Option) config {
	c := config{
		endpointOf: DefaultEndpoint,
		now:        time.Now,
		maxHeader:  DefaultMaxHeaderBytes,
		timeouts:   DefaultTimeouts(),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// DefaultEndpoint is the request's first path segment: /search/x -> "search", /search ->
// "search", / -> RootEndpoint.
func DefaultEndpoint(r *http.Request) string {
	p := strings.TrimPrefix(r.URL.Path, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[:i]
	}
	if p == "" {
		return RootEndpoint
	}
	return p
}

// WithTenantFunc maps an API key to its tenant; ok false answers 401 (unknown key). The
// default tenant is the key itself.
func WithTenantFunc(f func(apiKey string) (tenant string, ok bool)) Option {
	return func(c *config) { c.tenantOf = f }
}

// WithKeyMap maps API keys to tenants from a copy of m; a key not in m answers 401.
func WithKeyMap(m map[string]string) Option {
	cp := make(map[string]string, len(m))
	for k, v := range m {
		cp[k] = v
	}
	return WithTenantFunc(func(key string) (string, bool) {
		t, ok := cp[key]
		return t, ok
	})
}

// WithEndpointFunc names the endpoint of a request (the limiter key's second part and the
// metrics' endpoint label). Default DefaultEndpoint.
func WithEndpointFunc(f func(*http.Request) string) Option {
	return func(c *config) { c.endpointOf = f }
}

// WithCost makes every request take n tokens. Default DefaultCost (1).
func WithCost(n int64) Option {
	return WithCostFunc(func(*http.Request) int64 { return n })
}

// WithCostFunc computes each request's cost in tokens (>= 0; the limiter refuses a negative
// cost and the middleware answers 400).
func WithCostFunc(f func(*http.Request) int64) Option {
	return func(c *config) { c.costOf = f }
}

// WithPolicy tells the middleware the limiter's policy, so that RateLimit-Limit carries its
// burst. Without WithPolicy or WithPolicyFunc the header is omitted (the limit is unknown).
func WithPolicy(p limiter.BucketPolicy) Option {
	return WithPolicyFunc(func(string, string) limiter.BucketPolicy { return p })
}

// WithPolicyFunc is WithPolicy for per-tenant, per-endpoint policies.
func WithPolicyFunc(f limiter.PolicyFunc) Option {
	return func(c *config) { c.limitOf = f }
}

// WithMetrics records every decision in m. Without it the middleware records nothing;
// NewServer creates a Metrics when none is given.
func WithMetrics(m *Metrics) Option {
	return func(c *config) { c.metrics = m }
}

// WithHotKeys counts every identified request's (tenant, endpoint) in h, a top-K sketch.
// NewServer creates one (DefaultHotKeys) when none is given and serves it at HotKeysPath.
func WithHotKeys(h *HotKeys) Option {
	return func(c *config) { c.hotKeys = h }
}

// WithClock sets the clock whose time goes into limiter.Request.Now. Default time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithTimeouts sets the Server's timeouts (zero fields keep DefaultTimeouts' values).
func WithTimeouts(t Timeouts) Option {
	return func(c *config) {
		d := DefaultTimeouts()
		if t.ReadHeader > 0 {
			d.ReadHeader = t.ReadHeader
		}
		if t.Read > 0 {
			d.Read = t.Read
		}
		if t.Write > 0 {
			d.Write = t.Write
		}
		if t.Idle > 0 {
			d.Idle = t.Idle
		}
		c.timeouts = d
	}
}

// WithMaxHeaderBytes sets the Server's http.Server.MaxHeaderBytes. Default DefaultMaxHeaderBytes.
func WithMaxHeaderBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxHeader = n
		}
	}
}
