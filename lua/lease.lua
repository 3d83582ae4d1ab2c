-- lease.lua: take a lease of up to `want` tokens from one token bucket, atomically on one key.
--
-- The bucket is the one of token_bucket.lua: same key, same stored value, same arithmetic, so a
-- key may be decided by both scripts. A gateway spends the granted tokens in memory
-- (limiter.LeaseLimiter) and comes back when its lease is empty.
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the bucket key, rl:{tenant}:endpoint
--   ARGV[1]  now_ms       the gateway's clock, integer Unix milliseconds
--   ARGV[2]  rate_per_ms  refill rate in tokens per millisecond, > 0 (shortest round-trip decimal)
--   ARGV[3]  capacity     the burst, integer tokens, >= 1
--   ARGV[4]  want         the lease size asked for, integer tokens, >= min
--   ARGV[5]  min          the fewest tokens worth taking, integer >= 1: a smaller grant is none
--   ARGV[6]  ttl_ms       the key's TTL (SET PX): the time to refill from empty, >= 1000
-- Stored (as token_bucket.lua): a 16-byte string, struct.pack('<dd', tokens, updated_at):
--   tokens      float tokens left, the double itself, so it round-trips exactly
--   updated_at  integer ms of the last call (exact in a double); never moves backwards
-- Returns {granted, remaining, retry_after_ms, reset_after_ms}, all integers:
--   granted         g = min(want, floor(tokens)) if g >= min (then g is debited), else 0
--   remaining       floor(tokens after the call)
--   retry_after_ms  0 if granted; -1 if min > capacity (never); else ceil((min - tokens) / rate)
--   reset_after_ms  ceil((capacity - tokens) / rate): until the bucket is full again
--
-- Refill, as token_bucket.lua and limiter.BucketPolicy.Refill, in the same IEEE double order:
--   missing key (or updated_at 0)  -> full bucket at now
--   now     = max(now_ms, updated_at)                    (a skewed clock never refills)
--   tokens  = min(capacity, tokens + (now - updated_at) * rate_per_ms)
-- Only whole tokens are leased (floor), so the fraction stays in the bucket and keeps refilling.
-- Every call, granted or not, writes the refilled state with the key's TTL.

local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local min = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
if not (now and rate and capacity and want and min and ttl) then
  return redis.error_reply('ERR lease: ARGV must be 6 numbers: now_ms rate_per_ms capacity want min ttl_ms')
end
if not (rate > 0) or capacity < 1 or min < 1 or want < min or ttl < 1 then
  return redis.error_reply('ERR lease: need rate_per_ms > 0, capacity >= 1, min >= 1, want >= min, ttl_ms >= 1')
end

local tokens, last
local state = redis.call('GET', KEYS[1])
if state then
  tokens, last = struct.unpack('<dd', state)
end
if tokens == nil or last == nil or last == 0 then
  tokens = capacity
else
  if now < last then
    now = last
  end
  tokens = math.min(capacity, tokens + (now - last) * rate)
end

local granted = math.min(want, math.floor(tokens))
local retry_after = 0
if granted >= min then
  tokens = tokens - granted
else
  granted = 0
  if min > capacity then
    retry_after = -1
  else
    retry_after = math.ceil((min - tokens) / rate)
  end
end

redis.call('SET', KEYS[1], struct.pack('<dd', tokens, now), 'PX', ttl)

return {granted, math.floor(tokens), retry_after, math.ceil((capacity - tokens) / rate)}
