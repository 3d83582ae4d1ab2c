package gateway

import (
	"net/http"
	"net/textproto"
	"strconv"
	"time"

	"ratelab/limiter"
)

// The response headers the middleware sets. RateLimit-* are the names of the IETF draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers, the three-field
// form); their values are integers: tokens, and seconds for the reset.
const (
	HeaderLimit      = "RateLimit-Limit"
	HeaderRemaining  = "RateLimit-Remaining"
	HeaderReset      = "RateLimit-Reset"
	HeaderRetryAfter = "Retry-After"
	HeaderSource     = "X-RateLimit-Source"
	HeaderAPIKey     = "X-API-Key"
)

// Canonical forms of the header names (textproto.CanonicalMIMEHeaderKey, as Header.Get looks
// them up), for writing the header map directly without canonicalising on every request.
var (
	keyLimit      = textproto.CanonicalMIMEHeaderKey(HeaderLimit)
	keyRemaining  = textproto.CanonicalMIMEHeaderKey(HeaderRemaining)
	keyReset      = textproto.CanonicalMIMEHeaderKey(HeaderReset)
	keyRetryAfter = textproto.CanonicalMIMEHeaderKey(HeaderRetryAfter)
	keySource     = textproto.CanonicalMIMEHeaderKey(HeaderSource)
	keyAPIKey     = textproto.CanonicalMIMEHeaderKey(HeaderAPIKey)
)

// ceilSeconds rounds d up to whole seconds: 1 ms -> 1, 1 s -> 1, 1001 ms -> 2, <= 0 -> 0.
// HTTP's delay-seconds are integers, and a client told to come back before the token exists
// would be denied again, so the rounding is always up.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// RetryAfterSeconds is the Retry-After value of a denied decision: RetryAfter rounded up to
// whole seconds and at least 1 (a denial with RetryAfter 0, e.g. a cost above the burst or a
// fail-closed decision without a hint, still tells the client to wait).
func RetryAfterSeconds(d limiter.Decision) int64 {
	return max(1, ceilSeconds(d.RetryAfter))
}

// ResetSeconds is the RateLimit-Reset value: ResetAfter (until the bucket is full again)
// rounded up to whole seconds; 0 when the bucket is already full.
func ResetSeconds(d limiter.Decision) int64 { return ceilSeconds(d.ResetAfter) }

// smallInts holds the decimal strings of 0..len-1, so that the common header values cost no
// allocation.
var smallInts = func() (s [1024]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// itoa is strconv.FormatInt(n, 10) without an allocation for 0 <= n < 1024.
func itoa(n int64) string {
	if n >= 0 && n < int64(len(smallInts)) {
		return smallInts[n]
	}
	return strconv.FormatInt(n, 10)
}

// sourceValues are the X-RateLimit-Source values, one slice per limiter.Source, shared by
// every response (net/http only reads header values).
var sourceValues = func() (v [limiter.FailClosed + 1][]string) {
	for i := range v {
		v[i] = []string{limiter.Source(i).String()}
	}
	return v
}()

// scratch is one response's header values and 429 body, allocated together: the one
// allocation of a decided request (net/http keeps the header value slices until the response
// is written, so they cannot live on the stack).
type scratch struct {
	vals [4]string
	// body fits {"error":"rate limited","retry_after_ms":N}\n for any int64 N (41+19+2 bytes).
	body [64]byte
}

// setDecisionHeaders writes the RateLimit headers of d, and Retry-After when d is a denial,
// with values in sc. limit is the policy's burst in tokens; limit <= 0 (unknown) omits
// RateLimit-Limit.
func setDecisionHeaders(h http.Header, sc *scratch, d limiter.Decision, limit int64) {
	vals := &sc.vals
	vals[0] = itoa(max(0, d.Remaining))
	vals[1] = itoa(ResetSeconds(d))
	h[keyRemaining] = vals[0:1:1]
	h[keyReset] = vals[1:2:2]
	if limit > 0 {
		vals[2] = itoa(limit)
		h[keyLimit] = vals[2:3:3]
	}
	if !d.Allowed {
		vals[3] = itoa(RetryAfterSeconds(d))
		h[keyRetryAfter] = vals[3:4:4]
	}
	if int(d.Source) < len(sourceValues) {
		h[keySource] = sourceValues[d.Source]
	} else {
		h[keySource] = []string{d.Source.String()}
	}
}
