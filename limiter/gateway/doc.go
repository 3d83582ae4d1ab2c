// Package gateway is ratelab's HTTP face of a limiter.Limiter: a net/http middleware that turns
// each request into a limiter.Request (tenant from the API key, endpoint from the path, a cost)
// and each limiter.Decision into an HTTP answer — the next handler with RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset headers, or 429 with Retry-After and a small JSON
// body, or 503 when the limiter fails — plus Prometheus metrics on a registry of its own, a
// Server with timeouts, /metrics and /healthz, and Serve, the `ratelab gateway` command's body.
//
// It owns identity extraction, the mapping of decisions to status codes and headers, and the
// gateway's metrics. It never decides a request itself, never retries the limiter and never
// applies a fail policy (limiter.FailSafe does, and its Source shows in X-RateLimit-Source);
// it never puts an API key or a tenant id into a metric label or a log line. It never starts,
// attaches to or stops a Redis Cluster: Serve's caller owns the cluster and hands over the
// client options that reach it.
package gateway
