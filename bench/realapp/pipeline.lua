-- wrk script for the pipelined plaintext run of bench/realapp/driver.py:
-- DEPTH copies of wrk's request in one write, as TechEmpower's plaintext
-- test pipelines them (`wrk -s pipeline.lua URL -- 16`).  wrk counts the
-- requests in what request() returns and waits for that many responses
-- before it writes the next batch; each response's latency runs from the
-- batch's write.
local batch

function init(args)
  local depth = tonumber(args[1]) or 1
  batch = string.rep(wrk.format(), depth)
end

function request()
  return batch
end
