// Package limiter holds the rate-limit algorithms ratelab measures: the Limiter interface and
// Decision, Redis-backed algorithms that run one Lua script per decision, and in-memory twins with
// identical arithmetic that serve as reference models and as the overspend envelope.
//
// The reference token bucket comes in two implementations that return the same Decision for the
// same sequence of requests: RedisTokenBucket runs lua/token_bucket.lua (EVALSHA, one EVAL on
// NOSCRIPT, no other retry, a deadline per decision), and TokenBucket is its in-memory twin
// (striped maps, no allocation per decision). Both use Decide, whose arithmetic is
// BucketPolicy.Refill; both store the refilled state on denied requests too; both clamp the
// gateway clock so a key's stored time never goes backwards. Keys are KeyFor(tenant, endpoint) =
// "rl:{tenant}:endpoint". ClassifyError is the one place that maps Redis and network errors to
// an ErrorKind. Noop allows everything, for measuring the load generator.
//
// The window algorithms (FixedWindow, GCRA, SlidingWindow, SlidingLog) follow the same pattern,
// each a lua/ script run by a RedisX limiter with an in-memory twin of identical arithmetic.
// TwoTier and RedisTwoTier check a tenant's long quota and its endpoint's burst bucket in one
// atomic decision that debits neither when either denies; WithRedisClock makes RedisTokenBucket
// take time from Redis instead of the gateway, and its script then returns that time.
//
// CoalescingBucket is RedisTokenBucket with concurrent decisions sent as one pipeline per
// primary. LeaseLimiter spends tokens leased from the central bucket (lua/lease.lua) in memory;
// OutstandingMax is the most tokens its leases held at once, which the overspend's burst excess
// stays within.
//
// Every Decision carries At, the time its arithmetic was done at: the request's Now on the
// gateway clock (twins and scripts alike), the script's TIME with WithRedisClock. A checker
// judges each decision at it.
//
// IsDecisionCommand tells a go-redis hook, from the command alone, whether a command a node
// receives makes or refills decisions (a run of one of these scripts, by SHA or body, NOSCRIPT
// retries and lease fetches included) or is something else (SCRIPT LOAD, PING, slot map
// reloads), whichever transport sent it.
//
// FailSafe wraps a Limiter with a per-endpoint fail policy (open, closed, local) under a decision
// budget, and Breaker is a per-node circuit breaker it consults.
//
// It never starts Redis, never generates load and never writes run outputs.
package limiter
