-- sliding_log.lua: one sliding-log decision, atomic on one sorted set of request timestamps.
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the log, rl:{tenant}:endpoint:sl: a ZSET, one member per cost unit allowed,
--            scored by the integer ms at which it was allowed
--   ARGV[1]  now_ms     the gateway's clock, integer Unix milliseconds
--   ARGV[2]  window_ms  the window length W, integer ms >= 1
--   ARGV[3]  limit      L, integer cost units in any window (now - W, now], >= 1
--   ARGV[4]  cost       units this request takes, integer >= 0 (may exceed limit)
--   ARGV[5]  ttl_ms     PEXPIRE for the key: W plus a slack
--   ARGV[6]  id         a string unique to this request; members are id:1 .. id:cost
-- Steps:
--   now    = max(now_ms, newest score)          (a skewed clock never ages entries out)
--   ZREMRANGEBYSCORE -inf (now - W)             (entries at or before now - W have left)
--   count  = ZCARD
-- Returns {allowed, remaining, retry_after_ms, reset_after_ms}, all integers:
--   allowed         1 if count + cost <= L (then cost members at score now, and PEXPIRE), else 0
--   remaining       max(0, L - count) after the decision
--   retry_after_ms  0 if allowed; -1 if cost > L (never); else s + W - now, where s is the score
--                   of the (count + cost - L)-th oldest entry: when enough entries have left
--   reset_after_ms  newest score + W - now: until the log is empty; 0 if it is empty
--
-- A DENIED request adds nothing (it only trims entries that have left the window). The
-- arithmetic (all integers) is the one of limiter.SlidingLog, the in-memory twin.

local now = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local id = ARGV[6]
if not (now and w and limit and cost and ttl and id) then
  return redis.error_reply('ERR sliding_log: ARGV must be now_ms window_ms limit cost ttl_ms id')
end
if w < 1 or limit < 1 or cost < 0 or ttl < 1 then
  return redis.error_reply('ERR sliding_log: need window_ms >= 1, limit >= 1, cost >= 0, ttl_ms >= 1')
end

local top = nil
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] then
  top = tonumber(newest[2])
  if now < top then
    now = top
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - w)
local count = redis.call('ZCARD', KEYS[1])

local allowed = 0
local retry_after = 0
if count + cost <= limit then
  for i = 1, cost do
    redis.call('ZADD', KEYS[1], now, id .. ':' .. i)
  end
  if cost > 0 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    top = now
  end
  count = count + cost
  allowed = 1
elseif cost > limit then
  retry_after = -1
else
  local k = count + cost - limit
  local e = redis.call('ZRANGE', KEYS[1], k - 1, k - 1, 'WITHSCORES')
  retry_after = tonumber(e[2]) + w - now
end

local reset_after = 0
if count > 0 then
  reset_after = top + w - now
end
return {allowed, math.max(0, limit - count), retry_after, reset_after}
