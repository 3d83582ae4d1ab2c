package lua

import _ "embed"

// TokenBucket is the source of token_bucket.lua: one atomic token-bucket decision on KEYS[1]
// with ARGV now_ms, rate_per_ms, capacity, cost, ttl_ms, returning
// {allowed, remaining, retry_after_ms, reset_after_ms}. The contract is written at the top of
// the script; limiter.RedisTokenBucket runs it and limiter.TokenBucket is its in-memory twin.
//
//go:embed token_bucket.lua
var TokenBucket string
