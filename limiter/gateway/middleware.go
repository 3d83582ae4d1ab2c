package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"ratelab/limiter"
)

// The fixed JSON bodies of the answers that carry no numbers. They name no key and no tenant.
var (
	bodyNoIdentity = []byte(`{"error":"missing API key: send X-API-Key: <key> or Authorization: Bearer <key>"}` + "\n")
	bodyUnknownKey = []byte(`{"error":"unknown API key"}` + "\n")
	bodyBadRequest = []byte(`{"error":"bad request: the limiter refused the tenant or the cost"}` + "\n")
	bodyLimiterErr = []byte(`{"error":"rate limiter unavailable"}` + "\n")
)

// jsonContentType is shared by every JSON answer (net/http only reads header values).
var (
	jsonContentType = []string{"application/json"}
	nosniff         = []string{"nosniff"}
)

// Middleware limits every request with lim before it reaches the next handler:
//
//   - identity: the X-API-Key header, else "Authorization: Bearer <key>"; none -> 401 with a
//     JSON error. The tenant is the key (WithTenantFunc/WithKeyMap map it; an unknown key -> 401);
//   - endpoint: DefaultEndpoint (first path segment) or WithEndpointFunc; cost: 1 or WithCost;
//   - allowed -> the next handler, with RateLimit-Policy and RateLimit-Limit (if the policy is known), RateLimit, RateLimit-Remaining,
//     RateLimit-Reset and X-RateLimit-Source;
//   - denied -> 429 with Retry-After (seconds, rounded up, >= 1), the same headers and
//     {"error":"rate limited","retry_after_ms":N};
//   - a limiter error -> 503 (400 for limiter.ErrBadRequest: a tenant or cost the limiter
//     refuses). The fail policy is limiter.FailSafe's: a FailSafe-wrapped limiter returns
//     decisions with Source fail-open / fail-closed instead of errors, and they show in
//     X-RateLimit-Source;
//   - a store failure (a 503, or a fail policy's answer) names its kind in X-RateLimit-Failure,
//     and X-RateLimit-Unknown: 1 says the store may have debited the request all the same; a
//     decision whose WAIT came back short carries X-RateLimit-Wait-Short: 1. A driver reading
//     them classifies the answer as one that saw the decision in process.
//
// No answer and no metric carries the key or the tenant.
func Middleware(lim limiter.Limiter, opts ...Option) func(http.Handler) http.Handler {
	c := newConfig(opts)
	return func(next http.Handler) http.Handler {
		return &middleware{lim: lim, next: next, c: c}
	}
}

type middleware struct {
	lim  limiter.Limiter
	next http.Handler
	c    config
}

// apiKey returns the request's API key: X-API-Key, else the token of "Authorization: Bearer".
// The scheme is case-insensitive (RFC 9110 section 11.1).
func apiKey(r *http.Request) string {
	// Direct map lookups with canonical keys: Header.Get of "X-API-Key" would canonicalise
	// (and allocate) on every request.
	if v := r.Header[keyAPIKey]; len(v) > 0 {
		if k := strings.TrimSpace(v[0]); k != "" {
			return k
		}
	}
	var auth string
	if v := r.Header["Authorization"]; len(v) > 0 {
		auth = v[0]
	}
	const scheme = "bearer "
	if len(auth) > len(scheme) && strings.EqualFold(auth[:len(scheme)], scheme) {
		return strings.TrimSpace(auth[len(scheme):])
	}
	return ""
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := apiKey(r)
	if key == "" {
		m.c.metrics.unauthorized()
		w.Header()["Www-Authenticate"] = []string{`Bearer realm="ratelab"`}
		writeJSON(w, http.StatusUnauthorized, bodyNoIdentity)
		return
	}
	tenant := key
	if m.c.tenantOf != nil {
		t, ok := m.c.tenantOf(key)
		if !ok {
			m.c.metrics.unauthorized()
			writeJSON(w, http.StatusUnauthorized, bodyUnknownKey)
			return
		}
		tenant = t
	}
	endpoint := m.c.endpointOf(r)
	if m.c.hotKeys != nil {
		m.c.hotKeys.Observe(tenant, endpoint)
	}
	cost := int64(DefaultCost)
	if m.c.costOf != nil {
		cost = m.c.costOf(r)
	}

	start := time.Now()
	d, err := m.lim.Allow(r.Context(), limiter.Request{Tenant: tenant, Endpoint: endpoint, Cost: cost, Now: m.c.now()})
	elapsed := time.Since(start)

	if err != nil {
		m.c.metrics.record(endpoint, outcomeError, sourceNoneIndex, elapsed)
		if errors.Is(err, limiter.ErrBadRequest) {
			writeJSON(w, http.StatusBadRequest, bodyBadRequest)
			return
		}
		setFailureHeaders(w.Header(), limiter.ClassifyError(err), true, limiter.MayHaveDebited(err), false)
		writeJSON(w, http.StatusServiceUnavailable, bodyLimiterErr)
		return
	}
	var policy limiter.BucketPolicy
	if m.c.limitOf != nil {
		policy = m.c.limitOf(tenant, endpoint)
	}
	h := w.Header()
	sc := new(scratch)
	setDecisionHeaders(h, sc, d, policy)
	setFailureHeaders(h, d.Failure.Kind, d.Failure.Failed, d.Failure.MayHaveDebited, d.Unreplicated)
	if !d.Allowed {
		m.c.metrics.record(endpoint, outcomeDenied, sourceIndex(d.Source), elapsed)
		writeJSON(w, http.StatusTooManyRequests, deniedBody(sc.body[:0], d))
		return
	}
	m.c.metrics.record(endpoint, outcomeAllowed, sourceIndex(d.Source), elapsed)
	m.next.ServeHTTP(w, r)
}

// deniedBody appends {"error":"rate limited","retry_after_ms":N} to dst, N being RetryAfter in
// whole milliseconds rounded up (a client that waits N ms finds the token there).
func deniedBody(dst []byte, d limiter.Decision) []byte {
	ms := int64((max(d.RetryAfter, 0) + time.Millisecond - 1) / time.Millisecond)
	dst = append(dst, `{"error":"rate limited","retry_after_ms":`...)
	dst = strconv.AppendInt(dst, ms, 10)
	return append(dst, "}\n"...)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
