-- wrk script: POSTs distinct gzip bodies from a file written by `kbtd-bench bodies`
-- (4-byte big-endian length, then the body; repeated). Each wrk thread sends its
-- own share of the bodies once; when a thread's share runs out it starts over and
-- those answers count as "repeated": kbtd answers a repeated batch 200 duplicate
-- without storing anything, so they are not counted; VictoriaMetrics ingests a
-- repeated body in full (same parse, same rows), so with REPEATS_COUNT=1 its
-- acceptances of repeated bodies count too.
--   BODIES=file TARGET=/v1/batches wrk -t2 -c32 -d10s -s Benchmarks/ingest-bodies.lua http://127.0.0.1:PORT
-- Prints: accepted N (202 or 204), other N, repeated N, samples/s (100 per counted acceptance).
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path = assert(os.getenv("BODIES"), "BODIES must name the body file")
  local target = os.getenv("TARGET") or "/v1/batches"
  local share = tonumber(os.getenv("THREADS") or "2")
  local file = assert(io.open(path, "rb"))
  local data = file:read("*a")
  file:close()
  local headers = { ["Content-Type"] = "application/json", ["Content-Encoding"] = "gzip" }
  requests = {}
  local pos, i = 1, 0
  while pos + 3 <= #data do
    local b1, b2, b3, b4 = data:byte(pos, pos + 3)
    local length = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
    if i % share == id then
      requests[#requests + 1] = wrk.format("POST", target, headers, data:sub(pos + 4, pos + 3 + length))
    end
    pos = pos + 4 + length
    i = i + 1
  end
  data = nil
  nextRequest = 1
  accepted, other, repeated = 0, 0, 0
  sent = 0
end

function request()
  local r = requests[nextRequest]
  sent = sent + 1
  nextRequest = nextRequest + 1
  if nextRequest > #requests then nextRequest = 1 end
  return r
end

function response(status, headers, body)
  if sent > #requests then
    if status == 202 or status == 204 or status == 200 then repeated = repeated + 1 else other = other + 1 end
  elseif status == 202 or status == 204 then
    accepted = accepted + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local a, o, r = 0, 0, 0
  for _, thread in ipairs(threads) do
    a = a + thread:get("accepted")
    o = o + thread:get("other")
    r = r + thread:get("repeated")
  end
  local seconds = summary.duration / 1e6
  local counted = a
  if os.getenv("REPEATS_COUNT") == "1" then counted = a + r end
  io.write(string.format("accepted %d other %d repeated %d in %.2f s: %.0f samples/s; latency p50 %.2f ms p99 %.2f ms\n",
    a, o, r, seconds, counted * 100 / seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
