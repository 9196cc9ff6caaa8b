-- wrk script of scripts/bench/webhook.ts: a signed GitHub-style POST with a unique
-- X-GitHub-Delivery per request (a repeated id is answered as a duplicate by our gateway).
-- Arguments after `--`: <delivery-id prefix> <body file> <X-Hub-Signature-256> <X-GitHub-Event>.
-- done() prints one line `WRKJSON {...}` with the counts and latency percentiles (µs).

local threads = 0
local prefix, body, headers
local counter = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  prefix = args[1]
  local file = assert(io.open(args[2], "rb"))
  body = file:read("*a")
  file:close()
  headers = {
    ["Content-Type"] = "application/json",
    ["User-Agent"] = "GitHub-Hookshot/bench",
    ["X-Hub-Signature-256"] = args[3],
    ["X-GitHub-Event"] = args[4],
  }
end

function request()
  counter = counter + 1
  headers["X-GitHub-Delivery"] = prefix .. "-" .. tid .. "-" .. counter
  return wrk.format("POST", nil, headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"connect":%d,"read":%d,' ..
      '"write":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
