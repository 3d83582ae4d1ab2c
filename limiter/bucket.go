package limiter

import (
	"fmt"
	"math"
	"time"
)

// BucketPolicy is a token-bucket policy: Rate tokens per second refill a bucket of Burst tokens.
//
// Units, shared by lua/token_bucket.lua, the in-memory twin and the overspend envelope:
// time is integer Unix milliseconds; tokens are float64 and are stored in Redis as the double
// itself (struct.pack('<dd', tokens, updated_at), one string with its TTL), so the Lua script and
// Go do the same IEEE arithmetic in the same order and agree decision by decision.
type BucketPolicy struct {
	// Rate is the refill rate in tokens per second; > 0.
	Rate float64
	// Burst is the bucket capacity in tokens; >= 1.
	Burst int64
}

// Validate reports a policy that no bucket can implement.
func (p BucketPolicy) Validate() error {
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
		return fmt.Errorf("rate %v: must be a finite number of tokens per second > 0", p.Rate)
	}
	if p.Burst < 1 {
		return fmt.Errorf("burst %d: must be >= 1 token", p.Burst)
	}
	return nil
}

// PerMs is the refill rate in tokens per millisecond, the unit passed to the Lua script.
func (p BucketPolicy) PerMs() float64 { return p.Rate / 1000 }

// TTL is how long an idle key must live: the time to refill from empty, at least one second.
// After it the bucket is full again, so deleting the key changes no decision.
func (p BucketPolicy) TTL() time.Duration {
	ms := int64(math.Ceil(float64(p.Burst) / p.PerMs()))
	return time.Duration(max(ms, 1000)) * time.Millisecond
}

// BucketState is one key's bucket: 16 bytes. LastMs == 0 means the key has no state yet
// (a new or expired key starts full).
type BucketState struct {
	Tokens float64
	LastMs int64
}

// Refill brings s forward to nowMs. The stored time never goes backwards: a nowMs older than
// s.LastMs refills nothing (this is the clamp that protects the bucket from skewed gateway clocks).
// tokens = min(burst, tokens + elapsed_ms * rate_per_ms).
func (p BucketPolicy) Refill(s BucketState, nowMs int64) BucketState {
	if s.LastMs == 0 {
		return BucketState{Tokens: float64(p.Burst), LastMs: nowMs}
	}
	now := max(nowMs, s.LastMs)
	elapsed := float64(now - s.LastMs)
	// The explicit float64 conversion forbids fusing the multiply-add into one FMA instruction
	// (the Go spec allows fusing otherwise, and does it with GOAMD64=v3 and on arm64): Redis's
	// Lua rounds the product and the sum separately, and so must we to agree bit for bit.
	return BucketState{Tokens: math.Min(float64(p.Burst), s.Tokens+float64(elapsed*p.PerMs())), LastMs: now}
}
