-- The gateway section's wrk script: every connection cycles through gatewayTenants API keys
-- (X-API-Key: tenant-0 .. tenant-N-1) on one path, requests formatted once in init so that the
-- load costs wrk the same for every variant, and done prints one JSON line that Go parses.
local tenants = tonumber(os.getenv("RATELAB_WRK_TENANTS") or "1000")
local path = os.getenv("RATELAB_WRK_PATH") or "/api"
local reqs = {}
local n = 0

init = function(args)
  for i = 0, tenants - 1 do
    reqs[i] = wrk.format("GET", path, {["X-API-Key"] = "tenant-" .. i})
  end
end

request = function()
  n = (n + 1) % tenants
  return reqs[n]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RATELAB_WRK {"requests":%.0f,"duration_us":%.0f,"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f,"p50_us":%.0f,"p99_us":%.0f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
