package limiter

import (
	"fmt"
	"math"
	"time"
)

// RetryAfter sentinel: a request that costs more than the burst can never be allowed.
const RetryNever time.Duration = -1

// maxExactMs bounds the refill time from empty (Burst / rate_per_ms), and so every retry and
// reset the script returns: about 292 years, the longest time.Duration, and below 2^53, so the
// script's doubles hold each such millisecond count exactly.
const maxExactMs = math.MaxInt64 / int64(time.Millisecond)

// Decide makes one token-bucket decision on state s at nowMs for a request of cost tokens and
// returns the state to store. It is the arithmetic of lua/token_bucket.lua, operation by operation:
//
//	s         = p.Refill(s, nowMs)                 // now = max(nowMs, last); tokens = min(burst, tokens + elapsed_ms*rate_per_ms)
//	allowed   = tokens >= cost                     // then tokens -= cost
//	remaining = floor(tokens)
//	retry_ms  = 0 if allowed; -1 (RetryNever) if cost > burst; else ceil((cost - tokens) / rate_per_ms)
//	reset_ms  = ceil((burst - tokens) / rate_per_ms)   // until the bucket is full again
//
// A denied request still returns the refilled state, which callers store (as the script does).
// Decision.Source is left zero (Central) and Decision.At zero; callers set them. cost must be >= 0.
func Decide(p BucketPolicy, s BucketState, nowMs, cost int64) (BucketState, Decision) {
	s = p.Refill(s, nowMs)
	rate := p.PerMs()
	c := float64(cost)
	var d Decision
	switch {
	case s.Tokens >= c:
		s.Tokens -= c
		d.Allowed = true
	case cost > p.Burst:
		d.RetryAfter = RetryNever
	default:
		d.RetryAfter = msDuration(int64(math.Ceil((c - s.Tokens) / rate)))
	}
	d.Remaining = int64(math.Floor(s.Tokens))
	d.ResetAfter = msDuration(int64(math.Ceil((float64(p.Burst) - s.Tokens) / rate)))
	return s, d
}

// msDuration converts the script's millisecond counts to a Duration; negative means never.
func msDuration(ms int64) time.Duration {
	if ms < 0 {
		return RetryNever
	}
	return time.Duration(ms) * time.Millisecond
}

// checkPolicy is BucketPolicy.Validate plus the bounds under which the script's doubles are
// exact: Burst at most 2^53 tokens and the refill time from empty at most maxExactMs.
func checkPolicy(p BucketPolicy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: policy: %w", ErrBadConfig, err)
	}
	if p.Burst > 1<<53 {
		return fmt.Errorf("%w: policy burst %d: must be <= 2^53 tokens so a double holds it exactly", ErrBadConfig, p.Burst)
	}
	if refill := float64(p.Burst) / p.PerMs(); !(refill <= float64(maxExactMs)) {
		return fmt.Errorf("%w: policy rate %v/s with burst %d: refilling takes %.3g ms, more than %d; raise the rate",
			ErrBadConfig, p.Rate, p.Burst, refill, maxExactMs)
	}
	return nil
}
