package limiter

import (
	"fmt"
	"strings"
	"time"
)

// requestMs checks a request and returns its time in Unix milliseconds. It reports a negative
// cost, a tenant with a brace (it would break the key's hash tag) and a time before the Unix
// epoch; a zero Now means time.Now(). It allocates only when it fails. TokenBucket.Allow and
// RedisTokenBucket.Allow both call it, so the twins refuse the same requests.
func requestMs(r Request) (int64, error) {
	if r.Cost < 0 {
		return 0, fmt.Errorf("%w: cost %d: must be >= 0 tokens (1 for an ordinary request)", ErrBadRequest, r.Cost)
	}
	if strings.ContainsAny(r.Tenant, "{}") {
		return 0, fmt.Errorf("%w: tenant %q: must not contain '{' or '}' (the key's hash tag is {tenant})", ErrBadRequest, r.Tenant)
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	ms := now.UnixMilli()
	if ms < 1 {
		return 0, fmt.Errorf("%w: now %v: must be after the Unix epoch (pass the gateway clock, or zero for time.Now)", ErrBadRequest, r.Now)
	}
	return ms, nil
}

// decidedAt is Decision.At for a request decided at nowMs (requestMs's result) on the gateway
// clock: r.Now itself, or the millisecond requestMs read when r.Now is zero.
func decidedAt(r Request, nowMs int64) time.Time {
	if r.Now.IsZero() {
		return time.UnixMilli(nowMs)
	}
	return r.Now
}
