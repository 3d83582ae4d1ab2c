package attack

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// epochFloor separates the two forms of a reset header: a value at or above it is a Unix time
// in seconds (X-RateLimit-Reset as GitHub sends it), below it seconds from now.
const epochFloor = 1_000_000_000

// claims are the rate-limit statements of one answer, read from its headers.
type claims struct {
	retry, remaining, reset, limit bool
	// retryDate: Retry-After was an HTTP-date (retryAt); else retrySecs from the decision.
	retryDate bool
	retrySecs float64
	retryAt   time.Time
	rem, lim  int64
	// resetAbs: the reset was a Unix time (resetAt); else resetSecs from the decision.
	resetAbs  bool
	resetSecs float64
	resetAt   time.Time
}

// any reports whether the answer said anything about its limit.
func (c claims) any() bool { return c.retry || c.remaining || c.reset || c.limit }

// readClaims reads h's rate-limit headers: Retry-After (delay-seconds or HTTP-date); the draft's
// RateLimit structured field ("name";r=R;t=T, the item with the least r when several) with
// RateLimit-Policy's q for the same name; otherwise RateLimit-Remaining/-Reset/-Limit, then
// X-RateLimit-Remaining/-Reset/-Limit.
func readClaims(h http.Header) claims {
	var c claims
	if v := h.Get("Retry-After"); v != "" {
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && n >= 0 && !math.IsInf(n, 0) {
			c.retry, c.retrySecs = true, n
		} else if t, err := http.ParseTime(v); err == nil {
			c.retry, c.retryDate, c.retryAt = true, true, t
		}
	}
	if v := h.Get("RateLimit"); v != "" {
		if name, r, t, ok := parseRateLimitField(v); ok {
			c.remaining, c.rem = r >= 0, r
			if t >= 0 {
				c.reset, c.resetSecs = true, float64(t)
			}
			if q, ok := policyQuota(h.Get("RateLimit-Policy"), name); ok {
				c.limit, c.lim = true, q
			}
		}
	}
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		if !c.remaining {
			c.rem, c.remaining = leadingInt(h.Get(prefix + "Remaining"))
		}
		if !c.limit {
			c.lim, c.limit = leadingInt(h.Get(prefix + "Limit"))
		}
		if !c.reset {
			c.readReset(h.Get(prefix + "Reset"))
		}
	}
	return c
}

// readReset reads a reset header: seconds from now, or a Unix time at or above epochFloor.
func (c *claims) readReset(v string) {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if v == "" || err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return
	}
	c.reset = true
	if n >= epochFloor {
		c.resetAbs, c.resetAt = true, time.Unix(0, int64(n*1e9))
		return
	}
	c.resetSecs = n
}

// leadingInt reads the integer a header value starts with ("100" and the older drafts'
// "100, 100;w=60" both give 100).
func leadingInt(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	n, err := strconv.ParseInt(v[:end], 10, 64)
	return n, err == nil
}

// sfItem is one item of a structured-field list: its name (a string or token) and its integer
// parameters.
type sfItem struct {
	name   string
	params map[string]int64
}

// parseSFList reads a structured-field list of the RateLimit kind, e.g.
// `"burst";r=17;t=2, "day";r=900;t=3600`; items it cannot read are skipped.
func parseSFList(v string) []sfItem {
	var out []sfItem
	for _, item := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(item), ";")
		it := sfItem{name: strings.Trim(strings.TrimSpace(parts[0]), `"`), params: map[string]int64{}}
		for _, p := range parts[1:] {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64); ok && err == nil {
				it.params[strings.TrimSpace(k)] = n
			}
		}
		if it.name != "" {
			out = append(out, it)
		}
	}
	return out
}

// parseRateLimitField reads the RateLimit field: the item with the least r (the binding limit),
// its name, r and t (-1 when absent).
func parseRateLimitField(v string) (name string, r, t int64, ok bool) {
	r, t = -1, -1
	for _, it := range parseSFList(v) {
		ri, has := it.params["r"]
		if !has || (ok && ri >= r) {
			continue
		}
		name, r, ok = it.name, ri, true
		if ti, has := it.params["t"]; has {
			t = ti
		} else {
			t = -1
		}
	}
	return name, r, t, ok
}

// policyQuota is the q of RateLimit-Policy's item called name.
func policyQuota(v, name string) (int64, bool) {
	for _, it := range parseSFList(v) {
		if q, has := it.params["q"]; has && it.name == name {
			return q, true
		}
	}
	return 0, false
}
