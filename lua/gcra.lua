-- gcra.lua: one GCRA (generic cell rate algorithm) decision, atomic on one key.
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the key, rl:{tenant}:endpoint:gcra
--   ARGV[1]  now_ms       the gateway's clock, integer Unix milliseconds
--   ARGV[2]  interval_ms  the emission interval T = 1000 / rate ms, > 0, written as a shortest
--                         round-trip decimal so it parses to the very double Go holds
--   ARGV[3]  burst        integer units that may pass at once, >= 1
--   ARGV[4]  cost         units this request takes, integer >= 0 (may exceed burst)
--   ARGV[5]  ttl_ms       PEXPIRE for the key: the time to drain a full burst, >= 1000
-- Stored hash fields:
--   tat         float theoretical arrival time in ms, written with %.17g (round-trips exactly)
--   updated_at  integer ms of the last decision; never moves backwards
-- Returns {allowed, remaining, retry_after_ms, reset_after_ms}, all integers:
--   allowed         1 if allow_at <= now (then tat = new_tat), else 0
--   remaining       max(0, floor((now - (tat - T * burst)) / T)): units that could pass now
--   retry_after_ms  0 if allowed; -1 if cost > burst (never); else ceil(allow_at - now)
--   reset_after_ms  ceil(tat - now): until a full burst may pass again
--
-- Arithmetic, in the same IEEE double order as limiter.decideGCRA (the in-memory twin):
--   missing key (or updated_at 0)  -> tat = now
--   now      = max(now_ms, updated_at)                 (a skewed clock gains nothing)
--   tat      = max(tat, now)
--   new_tat  = tat + T * cost
--   allow_at = new_tat - T * burst                     (the tolerance tau = T * (burst - 1), plus T)
-- This is "allow if now >= tat + T * (cost - 1) - tau": a cost of c units is c cells at once.
--
-- A DENIED request also writes (tat = max(tat, now), updated_at = now) and PEXPIREs the key, so
-- the stored time never moves backwards and every call leaves the key with a TTL.

local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
if not (now and interval and burst and cost and ttl) then
  return redis.error_reply('ERR gcra: ARGV must be 5 numbers: now_ms interval_ms burst cost ttl_ms')
end
if not (interval > 0) or burst < 1 or cost < 0 or ttl < 1 then
  return redis.error_reply('ERR gcra: need interval_ms > 0, burst >= 1, cost >= 0, ttl_ms >= 1')
end

local state = redis.call('HMGET', KEYS[1], 'tat', 'updated_at')
local tat = tonumber(state[1])
local last = tonumber(state[2])
if tat == nil or last == nil or last == 0 then
  tat = now
elseif now < last then
  now = last
end
tat = math.max(tat, now)

local dvt = interval * burst
local new_tat = tat + interval * cost
local allow_at = new_tat - dvt

local allowed = 0
local retry_after = 0
if allow_at <= now then
  tat = new_tat
  allowed = 1
elseif cost > burst then
  retry_after = -1
else
  retry_after = math.ceil(allow_at - now)
end

redis.call('HSET', KEYS[1], 'tat', string.format('%.17g', tat), 'updated_at', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], ttl)

return {allowed, math.max(0, math.floor((now - (tat - dvt)) / interval)), retry_after, math.ceil(tat - now)}
