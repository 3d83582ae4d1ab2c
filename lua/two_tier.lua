-- two_tier.lua: one two-tier decision, atomic on a tenant's quota counter and one of its buckets.
--
-- Tier 1 is the short burst: the token bucket of token_bucket.lua (same stored value, same
-- arithmetic) on the tenant's endpoint. Tier 2 is the long quota: a fixed window per tenant
-- (as fixed_window.lua) counting cost units in the window the caller named. A request passes only
-- if BOTH tiers have room; a request denied by either tier debits neither.
--
-- Contract. The caller builds every name and number; this script builds no key names.
--   KEYS[1]  the quota counter, rl:{tenant}:quota:<index>
--   KEYS[2]  the bucket key, rl:{tenant}:endpoint (the same {tenant} hash tag: one slot)
--   ARGV[1]  now_ms           the gateway's clock, integer Unix milliseconds
--   ARGV[2]  rate_per_ms      bucket refill rate in tokens per millisecond, > 0 (shortest
--                             round-trip decimal, so it parses to the very double Go holds)
--   ARGV[3]  capacity         the bucket's burst, integer tokens, >= 1
--   ARGV[4]  cost             units this request takes from both tiers, integer >= 0
--   ARGV[5]  bucket_ttl_ms    the TTL of KEYS[2] (SET PX): the time to refill from empty, >= 1000
--   ARGV[6]  quota_limit      Q, integer cost units per quota window, >= 1
--   ARGV[7]  quota_ttl_ms     PEXPIRE for KEYS[1]: the window plus a slack for skewed clocks
--   ARGV[8]  quota_window_ms  the quota window W, integer ms >= 1
--   ARGV[9]  quota_index      floor(now_ms / W), the window KEYS[1] counts (the caller computed it)
-- Stored: KEYS[2] struct.pack('<dd', tokens, updated_at) as token_bucket.lua (updated_at in ms,
--         never moves backwards);
--         KEYS[1] the integer count of cost units allowed in the window.
--
-- Arithmetic (IEEE doubles, in the order of limiter.decideTwoTier, the in-memory twin):
--   bucket: missing key (or updated_at 0) -> full at now; now_b = max(now_ms, updated_at);
--           tokens = min(capacity, tokens + (now_b - updated_at) * rate_per_ms)
--   quota:  count = GET KEYS[1] or 0; to_end = (index + 1) * W - now_ms   (1..W ms)
--   bucket_ok = tokens >= cost;  quota_ok = count + cost <= Q
--   allowed iff bucket_ok and quota_ok: then tokens -= cost and INCRBY KEYS[1] cost + PEXPIRE.
-- Returns {allowed, remaining, retry_after_ms, reset_after_ms, tier_denied}, all integers:
--   remaining       of the tighter tier: min(floor(tokens), max(0, Q - count)) after the decision
--   retry_after_ms  0 if allowed; else when both tiers could pass if nothing else is allowed:
--                   -1 (never) if cost > capacity or cost > Q; else the larger of the bucket's
--                   ceil((cost - tokens) / rate) (0 if bucket_ok) and the quota's to_end (0 if
--                   quota_ok)
--   reset_after_ms  of the tier remaining came from: the quota's (to_end, 0 if count is 0) when
--                   its remaining is strictly smaller, else the bucket's ceil((capacity - tokens) / rate)
--   tier_denied     0 allowed; 1 the bucket lacked tokens (whatever the quota); 2 only the quota
--
-- A DENIED request still writes the bucket's refilled state with its TTL to KEYS[2] (the rule of
-- token_bucket.lua: every call refills once at its own time), and writes nothing to the quota.
-- Every number is below 2^53, so the Lua doubles hold the integers exactly.

local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local bttl = tonumber(ARGV[5])
local limit = tonumber(ARGV[6])
local qttl = tonumber(ARGV[7])
local w = tonumber(ARGV[8])
local idx = tonumber(ARGV[9])
if not (now and rate and capacity and cost and bttl and limit and qttl and w and idx) then
  return redis.error_reply('ERR two_tier: ARGV must be 9 numbers: now_ms rate_per_ms capacity cost bucket_ttl_ms quota_limit quota_ttl_ms quota_window_ms quota_index')
end
if not (rate > 0) or capacity < 1 or cost < 0 or bttl < 1 or limit < 1 or qttl < 1 or w < 1 then
  return redis.error_reply('ERR two_tier: need rate_per_ms > 0, capacity >= 1, cost >= 0, bucket_ttl_ms >= 1, quota_limit >= 1, quota_ttl_ms >= 1, quota_window_ms >= 1')
end
if now < idx * w or now >= (idx + 1) * w then
  return redis.error_reply('ERR two_tier: quota_index must be floor(now_ms / quota_window_ms)')
end

-- Tier 1: the bucket, refilled to its own (clamped) now.
local tokens, last
local state = redis.call('GET', KEYS[2])
if state then
  tokens, last = struct.unpack('<dd', state)
end
local bnow = now
if tokens == nil or last == nil or last == 0 then
  tokens = capacity
else
  if bnow < last then
    bnow = last
  end
  tokens = math.min(capacity, tokens + (bnow - last) * rate)
end

-- Tier 2: the quota window's count.
local count = tonumber(redis.call('GET', KEYS[1])) or 0
local to_end = (idx + 1) * w - now

local bucket_ok = tokens >= cost
local quota_ok = count + cost <= limit
local allowed = 0
local retry_after = 0
local tier = 0
if bucket_ok and quota_ok then
  tokens = tokens - cost
  count = redis.call('INCRBY', KEYS[1], cost)
  redis.call('PEXPIRE', KEYS[1], qttl)
  allowed = 1
else
  if bucket_ok then
    tier = 2
  else
    tier = 1
  end
  if cost > capacity or cost > limit then
    retry_after = -1
  else
    local bretry = 0
    if not bucket_ok then
      bretry = math.ceil((cost - tokens) / rate)
    end
    local qretry = 0
    if not quota_ok then
      qretry = to_end
    end
    retry_after = math.max(bretry, qretry)
  end
end

redis.call('SET', KEYS[2], struct.pack('<dd', tokens, bnow), 'PX', bttl)

local remaining = math.floor(tokens)
local reset_after = math.ceil((capacity - tokens) / rate)
local qremaining = math.max(0, limit - count)
if qremaining < remaining then
  remaining = qremaining
  reset_after = 0
  if count > 0 then
    reset_after = to_end
  end
end
return {allowed, remaining, retry_after, reset_after, tier}
