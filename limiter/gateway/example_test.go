package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"ratelab/limiter"
	"ratelab/limiter/gateway"
)

// Middleware in front of a handler, limiting each API key to a burst of 2 (in-memory bucket;
// use limiter.NewRedisTokenBucket for a shared one).
func ExampleMiddleware() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a fixed clock keeps the output exact
	policy := limiter.BucketPolicy{Rate: 0.5, Burst: 2}
	lim, err := limiter.NewTokenBucket(policy)
	if err != nil {
		panic(err)
	}
	h := gateway.Middleware(lim, gateway.WithPolicy(policy), gateway.WithClock(func() time.Time { return now }))(gateway.EchoUpstream())
	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/search?q=x", nil)
		r.Header.Set("Authorization", "Bearer alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d remaining=%s retry-after=%q\n", w.Code, w.Header().Get("RateLimit-Remaining"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 remaining=1 retry-after=""
	// 200 remaining=0 retry-after=""
	// 429 remaining=0 retry-after="2"
}
