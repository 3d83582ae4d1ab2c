-- sliding_window.lua: one sliding-window-counter decision, atomic on two window counter keys.
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the current window's counter, rl:{tenant}:endpoint:sw:<index>
--   KEYS[2]  the previous window's counter, rl:{tenant}:endpoint:sw:<index - 1>
--            (the same {tenant} hash tag: one slot, one node)
--   ARGV[1]  now_ms     the gateway's clock, integer Unix milliseconds
--   ARGV[2]  window_ms  the window length W, integer ms >= 1
--   ARGV[3]  index      floor(now_ms / W), the window KEYS[1] counts (the caller computed it)
--   ARGV[4]  limit      L, integer cost units per sliding window, >= 1
--   ARGV[5]  cost       units this request takes, integer >= 0 (may exceed limit)
--   ARGV[6]  ttl_ms     PEXPIRE for KEYS[1]: 2 W (it is read as the previous window during the
--                       next one) plus a slack for skewed gateway clocks
-- Stored value: the integer count of cost units allowed in the window.
-- The estimate weighs the previous window by the part of it the sliding window still covers:
--   elapsed  = now - index * W                          (0..W-1 ms into the current window)
--   estimate = prev * (1 - elapsed / W) + cur           (IEEE doubles, in this order)
-- Returns {allowed, remaining, retry_after_ms, reset_after_ms}, all integers:
--   allowed         1 if estimate + cost <= L (then INCRBY KEYS[1] cost and PEXPIRE it), else 0
--   remaining       max(0, floor(L - estimate)), the estimate taken after the decision
--   retry_after_ms  0 if allowed; -1 if cost > L (never); else when estimate + cost <= L first
--                   holds if nothing else is allowed: in this window while cur + cost <= L,
--                     ceil(W * (1 - (L - cur - cost) / prev) - elapsed),
--                   else after the window's end (W - elapsed), when cur has become the previous
--                   window: + max(0, ceil(W * (1 - (L - cost) / cur))); at least 1
--   reset_after_ms  until the estimate is 0: W - elapsed + W if cur > 0, W - elapsed if only
--                   prev > 0, else 0
--
-- A DENIED request does not count and writes nothing. Time: each window has its own key, so a
-- clock that runs behind counts in its older windows' keys (while they live). The arithmetic is
-- the one of limiter.decideSlidingWindow, the in-memory twin, step by step.

local now = tonumber(ARGV[1])
local w = tonumber(ARGV[2])
local idx = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
if not (now and w and idx and limit and cost and ttl) then
  return redis.error_reply('ERR sliding_window: ARGV must be 6 numbers: now_ms window_ms index limit cost ttl_ms')
end
if w < 1 or limit < 1 or cost < 0 or ttl < 1 then
  return redis.error_reply('ERR sliding_window: need window_ms >= 1, limit >= 1, cost >= 0, ttl_ms >= 1')
end
if now < idx * w or now >= (idx + 1) * w then
  return redis.error_reply('ERR sliding_window: index must be floor(now_ms / window_ms)')
end

local cur = tonumber(redis.call('GET', KEYS[1])) or 0
local prev = tonumber(redis.call('GET', KEYS[2])) or 0
local elapsed = now - idx * w
local to_end = w - elapsed
local est = prev * (1 - elapsed / w) + cur

local allowed = 0
local retry_after = 0
if est + cost <= limit then
  cur = redis.call('INCRBY', KEYS[1], cost)
  redis.call('PEXPIRE', KEYS[1], ttl)
  est = prev * (1 - elapsed / w) + cur
  allowed = 1
elseif cost > limit then
  retry_after = -1
else
  if cur + cost <= limit then
    retry_after = math.ceil(w * (1 - (limit - cur - cost) / prev) - elapsed)
  else
    retry_after = to_end + math.max(0, math.ceil(w * (1 - (limit - cost) / cur)))
  end
  retry_after = math.max(1, retry_after)
end

local reset_after = 0
if cur > 0 then
  reset_after = to_end + w
elseif prev > 0 then
  reset_after = to_end
end
return {allowed, math.max(0, math.floor(limit - est)), retry_after, reset_after}
