package lua

import _ "embed"

// TokenBucket is the source of token_bucket.lua: one atomic token-bucket decision on KEYS[1]
// with ARGV now_ms, rate_per_ms, capacity, cost, ttl_ms and an optional clock ("redis": take now
// from the server's TIME instead of now_ms), returning
// {allowed, remaining, retry_after_ms, reset_after_ms}, plus now_ms (the TIME it decided at)
// with the "redis" clock. An optional KEYS[2] is an audit counter that each allowed decision
// adds its cost to (limiter.WithAudit; limiter.AuditKey names it, by run). The contract is written at the top of the script;
// limiter.RedisTokenBucket runs it and limiter.TokenBucket is its in-memory twin.
//
//go:embed token_bucket.lua
var TokenBucket string

// Lease is the source of lease.lua: take up to want tokens from the token bucket on KEYS[1]
// (same fields and arithmetic as token_bucket.lua) with ARGV now_ms, rate_per_ms, capacity,
// want, min, ttl_ms, returning {granted, remaining, retry_after_ms, reset_after_ms}.
// limiter.LeaseLimiter runs it and spends the grant in memory.
//
//go:embed lease.lua
var Lease string

// FixedWindow is the source of fixed_window.lua: one atomic fixed-window decision on the window's
// counter key KEYS[1] with ARGV now_ms, window_ms, index, limit, cost, ttl_ms, returning
// {allowed, remaining, retry_after_ms, reset_after_ms}. limiter.RedisFixedWindow runs it and
// limiter.FixedWindow is its in-memory twin.
//
//go:embed fixed_window.lua
var FixedWindow string

// GCRA is the source of gcra.lua: one atomic GCRA decision on KEYS[1] with ARGV now_ms,
// interval_ms, burst, cost, ttl_ms, returning {allowed, remaining, retry_after_ms,
// reset_after_ms}. limiter.RedisGCRA runs it and limiter.GCRA is its in-memory twin.
//
//go:embed gcra.lua
var GCRA string

// SlidingWindow is the source of sliding_window.lua: one atomic sliding-window-counter decision
// on KEYS[1] (the current window's counter) and KEYS[2] (the previous one) with ARGV now_ms,
// window_ms, index, limit, cost, ttl_ms, returning {allowed, remaining, retry_after_ms,
// reset_after_ms}. limiter.RedisSlidingWindow runs it; limiter.SlidingWindow is its twin.
//
//go:embed sliding_window.lua
var SlidingWindow string

// SlidingLog is the source of sliding_log.lua: one atomic sliding-log decision on the sorted set
// KEYS[1] with ARGV now_ms, window_ms, limit, cost, ttl_ms, id, returning {allowed, remaining,
// retry_after_ms, reset_after_ms}. limiter.RedisSlidingLog runs it; limiter.SlidingLog is its
// in-memory twin.
//
//go:embed sliding_log.lua
var SlidingLog string

// TwoTier is the source of two_tier.lua: one atomic two-tier decision on a tenant's quota
// counter KEYS[1] (a fixed window) and its endpoint's token bucket KEYS[2] (the hash of
// token_bucket.lua) with ARGV now_ms, rate_per_ms, capacity, cost, bucket_ttl_ms, quota_limit,
// quota_ttl_ms, quota_window_ms, quota_index, returning {allowed, remaining, retry_after_ms,
// reset_after_ms, tier_denied}. A request denied by either tier debits neither.
// limiter.RedisTwoTier runs it and limiter.TwoTier is its in-memory twin.
//
//go:embed two_tier.lua
var TwoTier string
