-- wrk script of the abusive-client load test (tests/server/abuse_test.py): every connection POSTs
-- the body in $BODY to /embed; an answer counts as correct when it is 200 and byte for byte the
-- answer in $EXPECTED (which the driver checked against the CLI's vectors). Prints one line
-- "WRK_JSON {...}": requests, correct and wrong answers, socket errors, latency percentiles (µs).
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  correct, wrong = 0, 0
  expected = slurp(os.getenv("EXPECTED"))
  wrk.method = "POST"
  wrk.path = "/embed"
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = slurp(os.getenv("BODY"))
end

function response(status, headers, body)
  if status == 200 and body == expected then
    correct = correct + 1
  else
    wrong = wrong + 1
    if wrong <= 3 then io.stderr:write(string.format("wrong answer: %d %s\n", status, string.sub(body, 1, 200))) end
  end
end

function done(summary, latency, requests)
  local c, w = 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("correct")
    w = w + t:get("wrong")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"correct":%d,"wrong":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},' ..
    '"latency_us":{"p50":%d,"p99":%d,"max":%d}}\n',
    summary.requests, c, w, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), latency.max))
end
