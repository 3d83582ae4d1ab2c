package gateway

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"time"
	"unsafe"

	"ratelab/limiter"
)

// The response headers the middleware sets. RateLimit-Policy and RateLimit are the structured
// fields of the current IETF draft "RateLimit header fields for HTTP"
// (draft-ietf-httpapi-ratelimit-headers): one policy named "burst" with its quota q (the burst,
// in tokens) and window w (seconds for an empty bucket to refill), and the remaining tokens r and
// seconds t until the bucket is full again, e.g.
//
//	RateLimit-Policy: "burst";q=200;w=2
//	RateLimit: "burst";r=17;t=2
//
// RateLimit-Limit, -Remaining and -Reset are the draft's earlier three-field form, which many
// clients still read; both are sent.
const (
	HeaderPolicy     = "RateLimit-Policy"
	HeaderRateLimit  = "RateLimit"
	HeaderLimit      = "RateLimit-Limit"
	HeaderRemaining  = "RateLimit-Remaining"
	HeaderReset      = "RateLimit-Reset"
	HeaderRetryAfter = "Retry-After"
	HeaderSource     = "X-RateLimit-Source"
	HeaderAPIKey     = "X-API-Key"
	// HeaderFailure names the kind of the store failure behind a fail policy's answer or a 503
	// (limiter.ErrorKind's name: timeout, conn, clusterdown, ...); absent when the store decided.
	HeaderFailure = "X-RateLimit-Failure"
	// HeaderUnknown is "1" when the store may have debited the request although its answer never
	// came (limiter.MayHaveDebited): a driver books it as an unknown outcome.
	HeaderUnknown = "X-RateLimit-Unknown"
	// HeaderWaitShort is "1" on the store's decision whose WAIT came back short of its replicas
	// (limiter.Decision.Unreplicated).
	HeaderWaitShort = "X-RateLimit-Wait-Short"
)

// Canonical forms of the header names (textproto.CanonicalMIMEHeaderKey, as Header.Get looks
// them up), for writing the header map directly without canonicalising on every request.
var (
	keyPolicy     = textproto.CanonicalMIMEHeaderKey(HeaderPolicy)
	keyRateLimit  = textproto.CanonicalMIMEHeaderKey(HeaderRateLimit)
	keyLimit      = textproto.CanonicalMIMEHeaderKey(HeaderLimit)
	keyRemaining  = textproto.CanonicalMIMEHeaderKey(HeaderRemaining)
	keyReset      = textproto.CanonicalMIMEHeaderKey(HeaderReset)
	keyRetryAfter = textproto.CanonicalMIMEHeaderKey(HeaderRetryAfter)
	keySource     = textproto.CanonicalMIMEHeaderKey(HeaderSource)
	keyAPIKey     = textproto.CanonicalMIMEHeaderKey(HeaderAPIKey)
	keyFailure    = textproto.CanonicalMIMEHeaderKey(HeaderFailure)
	keyUnknown    = textproto.CanonicalMIMEHeaderKey(HeaderUnknown)
	keyWaitShort  = textproto.CanonicalMIMEHeaderKey(HeaderWaitShort)
)

// kindValues are the HeaderFailure values, one slice per limiter.ErrorKind; one is the "1" of
// the flags. Shared by every response (net/http only reads header values).
var (
	kindValues = func() (v [limiter.NumErrorKinds][]string) {
		for i := range v {
			v[i] = []string{limiter.ErrorKind(i).String()}
		}
		return v
	}()
	one = []string{"1"}
)

// setFailureHeaders writes what a driver needs to classify the answer as the gateway saw it: the
// store failure's kind and whether the store may have debited (a fail policy's answer, a 503),
// and a short WAIT.
func setFailureHeaders(h http.Header, kind limiter.ErrorKind, failed, unknown, waitShort bool) {
	if failed && int(kind) < len(kindValues) {
		h[keyFailure] = kindValues[kind]
	}
	if unknown {
		h[keyUnknown] = one
	}
	if waitShort {
		h[keyWaitShort] = one
	}
}

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
	vals [6]string
	// body fits {"error":"rate limited","retry_after_ms":N}\n for any int64 N (41+19+2 bytes).
	body [64]byte
	// sf holds the two structured fields' bytes: "burst";q=N;w=N and "burst";r=N;t=N, each at
	// most 14+2*19 bytes.
	sf [128]byte
}

// WindowSeconds is the RateLimit-Policy window of a bucket: the seconds an empty bucket takes to
// refill to its burst, rounded up (at least 1); 0 when the policy is unknown.
func WindowSeconds(p limiter.BucketPolicy) int64 {
	if p.Burst <= 0 || !(p.Rate > 0) {
		return 0
	}
	return max(1, int64(math.Ceil(float64(p.Burst)/p.Rate)))
}

// structured appends `"burst";<a>=<x>;<b>=<y>` to buf and returns the field as a string that
// shares buf's bytes (sc lives until the response is written, and net/http only reads it).
func structured(buf []byte, a string, x int64, b string, y int64) ([]byte, string) {
	start := len(buf)
	buf = append(buf, `"burst";`...)
	buf = append(buf, a...)
	buf = strconv.AppendInt(append(buf, '='), x, 10)
	buf = append(append(buf, ';'), b...)
	buf = strconv.AppendInt(append(buf, '='), y, 10)
	field := buf[start:]
	return buf, unsafe.String(unsafe.SliceData(field), len(field))
}

// setDecisionHeaders writes the RateLimit headers of d, and Retry-After when d is a denial,
// with values in sc. p is the policy that decided (its burst and rate); a zero p (unknown)
// omits RateLimit-Limit and RateLimit-Policy.
func setDecisionHeaders(h http.Header, sc *scratch, d limiter.Decision, p limiter.BucketPolicy) {
	vals := &sc.vals
	remaining, reset := max(0, d.Remaining), ResetSeconds(d)
	vals[0] = itoa(remaining)
	vals[1] = itoa(reset)
	h[keyRemaining] = vals[0:1:1]
	h[keyReset] = vals[1:2:2]
	buf := sc.sf[:0]
	buf, vals[4] = structured(buf, "r", remaining, "t", reset)
	h[keyRateLimit] = vals[4:5:5]
	if p.Burst > 0 {
		vals[2] = itoa(p.Burst)
		h[keyLimit] = vals[2:3:3]
		if w := WindowSeconds(p); w > 0 {
			_, vals[5] = structured(buf, "q", p.Burst, "w", w)
			h[keyPolicy] = vals[5:6:6]
		}
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
