// Package check owns the overspend envelopes: for every key, what the configured policy
// allows, and a verdict on each decision a limiter made — conforming, overspend (let through
// beyond the limit), false deny (refused although the limit had room) or denied. Bucket judges
// token-bucket and GCRA limiters against exact buckets with the Lua script's arithmetic,
// Window the window limiters ("at most limit in any window", each request at its own time),
// TwoTier both tiers of the two-tier limiter.
//
// What Totals' figures mean:
//
//   - Confirmed and possible. A decision that timed out may or may not have run in the limiter.
//     Each envelope judges every request under both extreme resolutions: N, no unknown outcome
//     debited, and D, every one debited. Confirmed overspend is judged on N (the most room, so
//     the least overspend), possible overspend on D; confirmed false denies on D, possible ones
//     on N. Verdicts are the confirmed ones.
//   - Burst excess. Cumulative overspend grows with every idle episode of a lease and is
//     bounded by nothing. The burst excess of a key is the smallest b' such that its allowed
//     stream conforms to (rate, b'), minus the burst: the deepest deficit of a bucket that
//     debits every allowed request, overspent ones included, and every unknown outcome — an
//     upper bound for every resolution. Totals gives its sum over keys and the worst key.
//     Window envelopes have no burst and report 0.
//
// It never decides a request, never talks to Redis and never reads a scenario: callers map
// tenant x endpoint to dense key indices and hand each decision in with its time. It imports
// only limiter and the standard library.
package check
