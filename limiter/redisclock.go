package limiter

// clockRedis is token_bucket.lua's optional ARGV[6]: take now from the server's TIME.
const clockRedis = "redis"

// WithRedisClock makes RedisTokenBucket take each decision's time from Redis (the script's
// redis.call('TIME'), in ms) instead of the request's r.Now: the `clock: redis` choice. Gateway
// clocks then cannot skew refills, in either direction; r.Now is still checked (it must be after
// the epoch, or zero) but not used. Decisions of one key are then timed by the one node that owns
// its slot; after a failover, by the promoted replica's clock (the stored time still never goes
// backwards). Decision.At is the TIME the script read (whole ms, before that clamp), which the
// script returns beside the decision, so a checker judges the decision at Redis's time.
//
// Only RedisTokenBucket and CoalescingBucket use it. The in-memory twin (which has no server),
// the window limiters and LeaseLimiter (which takes no Option) ignore it; NewTwoTier and
// NewRedisTwoTier refuse it (their quota window is chosen by the gateway's clock).
func WithRedisClock() Option { return func(c *config) { c.redisClock = true } }
