-- token_bucket.lua: one token-bucket decision, atomic on one key (read, refill, decide, write).
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the bucket key, rl:{tenant}:endpoint (the hash tag puts all of a tenant in one slot)
--   KEYS[2]  OPTIONAL. The audit counter, rl:{tenant}:endpoint:debited[:run] (limiter.AuditKey:
--            same slot; the run names the counters of one run, so runs on one cluster never
--            share one; the script does not look at the name). Present: an allowed decision with cost > 0 also INCRBYs it by cost and sets
--            its PEXPIRE to AUDIT_TTL_MS (one hour, limiter.AuditTTL), in this same atomic run, so
--            the counter is replicated, or lost in a failover, exactly with the debit. Absent:
--            nothing else is read or written (the one-key contract).
--   ARGV[1]  now_ms       the gateway's clock, integer Unix milliseconds
--   ARGV[2]  rate_per_ms  refill rate in tokens per millisecond, > 0, written as a shortest
--                         round-trip decimal so it parses to the very double Go holds
--   ARGV[3]  capacity     the burst, integer tokens, >= 1
--   ARGV[4]  cost         tokens this request takes, integer >= 0 (may exceed capacity)
--   ARGV[5]  ttl_ms       the key's TTL (SET PX): the time to refill from empty, >= 1000
--   ARGV[6]  clock        OPTIONAL. Absent: now is ARGV[1] (the gateway's clock; the 5-ARGV
--                         contract). "redis": now is the server's TIME in integer ms,
--                         sec * 1000 + floor(usec / 1000), and ARGV[1] is ignored (it must still
--                         be a number). Any other value is an error. Redis 7 replicates a
--                         script's effects, not the script, so reading TIME is safe.
-- Stored: one 16-byte string, struct.pack('<dd', tokens, updated_at), written with its TTL in one
-- SET PX, which a replica receives as one SET (a hash and PEXPIRE reached it as MULTI, HSET,
-- PEXPIREAT, EXEC, and cost the primary two writes and a float format):
--   tokens      float tokens left, the double itself, so it round-trips exactly
--   updated_at  integer ms of the last decision (exact in a double); never moves backwards
-- Returns {allowed, remaining, retry_after_ms, reset_after_ms}, all integers, and with ARGV[6]
-- "redis" a fifth, now_ms:
--   allowed         1 if tokens >= cost (then cost is debited), else 0
--   remaining       floor(tokens after the decision)
--   retry_after_ms  0 if allowed; -1 if cost > capacity (never); else ceil((cost - tokens) / rate)
--   reset_after_ms  ceil((capacity - tokens) / rate): until the bucket is full again
--   now_ms          the server's TIME in ms that the decision was made at, before the clamp below:
--                   the caller cannot know it otherwise, and judges the decision at it (with the
--                   gateway's clock the caller already has it: ARGV[1])
--
-- The arithmetic is the one of limiter/bucket.go (BucketPolicy.Refill) and limiter.Decide, step
-- by step in the same IEEE double order, so limiter.TokenBucket (the in-memory twin) returns the
-- same decision for the same sequence of calls:
--   missing key (or updated_at 0)  -> full bucket at now
--   now     = max(now_ms, updated_at)                    (a skewed clock never refills;
--                                                         now_ms is TIME with ARGV[6] "redis")
--   tokens  = min(capacity, tokens + (now - updated_at) * rate_per_ms)
--
-- A DENIED request also writes the refilled state (tokens, updated_at = now) with the key's TTL:
-- every call refills exactly once at its own time, like the overspend envelope does, and every
-- call leaves the key with a TTL.

local AUDIT_TTL_MS = 3600000

local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
if not (now and rate and capacity and cost and ttl) then
  return redis.error_reply('ERR token_bucket: ARGV must be 5 numbers: now_ms rate_per_ms capacity cost ttl_ms')
end
if not (rate > 0) or capacity < 1 or cost < 0 or ttl < 1 then
  return redis.error_reply('ERR token_bucket: need rate_per_ms > 0, capacity >= 1, cost >= 0, ttl_ms >= 1')
end
if KEYS[2] ~= nil and cost ~= math.floor(cost) then
  return redis.error_reply('ERR token_bucket: with KEYS[2] (audit) the cost must be an integer')
end
if ARGV[6] ~= nil then
  if ARGV[6] ~= 'redis' then
    return redis.error_reply('ERR token_bucket: ARGV[6] (clock) must be absent or "redis"')
  end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local clock_ms = now

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

local allowed = 0
local retry_after = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
elseif cost > capacity then
  retry_after = -1
else
  retry_after = math.ceil((cost - tokens) / rate)
end

redis.call('SET', KEYS[1], struct.pack('<dd', tokens, now), 'PX', ttl)
if KEYS[2] ~= nil and allowed == 1 and cost > 0 then
  redis.call('INCRBY', KEYS[2], string.format('%d', cost))
  redis.call('PEXPIRE', KEYS[2], AUDIT_TTL_MS)
end

if ARGV[6] ~= nil then
  return {allowed, math.floor(tokens), retry_after, math.ceil((capacity - tokens) / rate), clock_ms}
end
return {allowed, math.floor(tokens), retry_after, math.ceil((capacity - tokens) / rate)}
