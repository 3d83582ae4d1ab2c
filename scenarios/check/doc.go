// Package check owns the overspend envelopes: for every key, what the configured policy
// allows, and a verdict on each decision a limiter made — conforming, overspend (let through
// beyond the limit), false deny (refused although the limit had room) or denied. Bucket judges
// token-bucket and GCRA limiters against an exact bucket with the Lua script's arithmetic,
// Window the window limiters ("at most limit in any window"), TwoTier both tiers of the
// two-tier limiter.
//
// It never decides a request, never talks to Redis and never reads a scenario: callers map
// tenant x endpoint to dense key indices and hand each decision in with its time.
package check
