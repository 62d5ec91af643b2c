-- wrk script of the server benchmark: POSTs the JSON bodies of the file $BODIES (one per line)
-- to $ROUTE (default /v1/embeddings), round robin, and prints one line "WRK_JSON {...}" with the
-- request count, the status codes, socket errors and latency percentiles in microseconds.
local route = os.getenv("ROUTE") or "/v1/embeddings"
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do
  if #line > 0 then bodies[#bodies + 1] = line end
end
local threads = {}
local next_body = 0

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  statuses = {}
end

function request()
  next_body = next_body % #bodies + 1
  return wrk.format("POST", route, { ["Content-Type"] = "application/json" }, bodies[next_body])
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local merged = {}
  for _, t in ipairs(threads) do
    for code, n in pairs(t:get("statuses")) do merged[code] = (merged[code] or 0) + n end
  end
  local parts = {}
  for code, n in pairs(merged) do parts[#parts + 1] = string.format('"%d":%d', code, n) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"statuses":{%s},"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, table.concat(parts, ","), e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
