package gateway

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"ratelab/limiter"
)

// discard is a ResponseWriter that keeps nothing but a reusable header map, so that the
// benchmark measures the middleware, not httptest.ResponseRecorder.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }

// BenchmarkMiddleware measures one request through Middleware with metrics and the in-memory
// limiter.TokenBucket over 1024 tenants: allowed (burst 1000 refilled at 1e9/s on the real
// clock, so the bucket stays nearly full) or denied (burst 1, refill 1e-3/s, frozen clock).
func BenchmarkMiddleware(b *testing.B) {
	for _, bc := range []struct {
		name   string
		policy limiter.BucketPolicy
		clock  func() time.Time
		status int
	}{
		{"allowed", limiter.BucketPolicy{Rate: 1e9, Burst: 1000}, time.Now, http.StatusOK},
		{"denied", limiter.BucketPolicy{Rate: 1e-3, Burst: 1}, frozenClock, http.StatusTooManyRequests},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lim, err := limiter.NewTokenBucket(bc.policy)
			if err != nil {
				b.Fatal(err)
			}
			h := Middleware(lim, WithPolicy(bc.policy), WithMetrics(NewMetrics()), WithClock(bc.clock))(EchoUpstream())
			reqs := make([]*http.Request, 1024)
			for i := range reqs {
				reqs[i] = httptest.NewRequest(http.MethodGet, "/search/q", nil)
				reqs[i].Header.Set(HeaderAPIKey, "tenant-"+strconv.Itoa(i))
			}
			w := &discard{h: make(http.Header, 8)}
			for _, r := range reqs { // warm: create every key and counter; empty the denied buckets
				h.ServeHTTP(w, r)
				clear(w.h)
			}
			i := 0
			start := time.Now()
			for b.Loop() {
				h.ServeHTTP(w, reqs[i&1023])
				clear(w.h)
				i++
			}
			if w.status != bc.status && !(bc.status == http.StatusOK && w.status == 0) {
				b.Fatalf("last status %d, want %d", w.status, bc.status)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
