-- fixed_window.lua: one fixed-window decision, atomic on one window's counter key.
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the window's counter key, rl:{tenant}:endpoint:fw:<index>
--   ARGV[1]  now_ms     the gateway's clock, integer Unix milliseconds
--   ARGV[2]  window_ms  the window length W, integer ms >= 1
--   ARGV[3]  index      floor(now_ms / W), the window KEYS[1] counts (the caller computed it)
--   ARGV[4]  limit      L, integer requests (cost units) per window, >= 1
--   ARGV[5]  cost       units this request takes, integer >= 0 (may exceed limit)
--   ARGV[6]  ttl_ms     PEXPIRE for the key: W plus a slack for skewed gateway clocks
-- Stored value: the integer count of cost units allowed in the window.
-- Returns {allowed, remaining, retry_after_ms, reset_after_ms}, all integers:
--   allowed         1 if count + cost <= L (then INCRBY cost and PEXPIRE ttl), else 0
--   remaining       L - count after the decision (never below 0)
--   retry_after_ms  0 if allowed; -1 if cost > L (never); else the time to the window's end
--   reset_after_ms  the time to the window's end, (index + 1) * W - now; 0 if count is 0
--
-- A DENIED request does not count and writes nothing (no INCRBY, no PEXPIRE): a client that
-- retries in a loop cannot push the window's count, or its TTL, any further.
--
-- Time. Each window has its own key, so a key holds no time that could move backwards; a gateway
-- whose clock runs behind counts in its older window's key (while that key lives) and can spend
-- what that window left, never the current window twice. limiter.FixedWindow, the in-memory
-- twin, does the same integer arithmetic and returns the same decisions.
--
-- Every number is an integer below 2^53, so the Lua doubles are exact.

local now = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
local idx = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
if not (now and w and idx and limit and cost and ttl) then
  return redis.error_reply('ERR fixed_window: ARGV must be 6 numbers: now_ms window_ms index limit cost ttl_ms')
end
if w < 1 or limit < 1 or cost < 0 or ttl < 1 then
  return redis.error_reply('ERR fixed_window: need window_ms >= 1, limit >= 1, cost >= 0, ttl_ms >= 1')
end
if now < idx * w or now >= (idx + 1) * w then
  return redis.error_reply('ERR fixed_window: index must be floor(now_ms / window_ms)')
end

local count = tonumber(redis.call('GET', KEYS[1])) or 0
local to_end = (idx + 1) * w - now

local allowed = 0
local retry_after = 0
if count + cost <= limit then
  count = redis.call('INCRBY', KEYS[1], cost)
  redis.call('PEXPIRE', KEYS[1], ttl)
  allowed = 1
elseif cost > limit then
  retry_after = -1
else
  retry_after = to_end
end

local reset_after = 0
if count > 0 then
  reset_after = to_end
end
return {allowed, math.max(0, limit - count), retry_after, reset_after}
