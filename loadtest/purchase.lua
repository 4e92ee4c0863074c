-- purchase.lua: wrk script that makes every request a different buyer.
-- Usage: wrk -t2 -c256 -d10s -s loadtest/purchase.lua http://127.0.0.1:8080 -- <items> [seed] [count]
-- <items> is an item id, or several separated by commas: the requests go to each in turn.
--
-- The buyers are named from 2^62 up, never a real shop's: above 2^53 - 1, the most a buyer token
-- can name and a JavaScript number can hold. A buyer id is P * 10^9 + n, sent as a JSON string
-- (Lua's numbers are doubles): n counts the thread's requests (below 10^9), P is
-- 4611686019 + (seed mod 2^28) * 16 + the thread's number (at most 16 threads), so that every
-- buyer id lies in [4611686019000000000, 8906653314999999999], within [2^62, 2^63 - 1], no two
-- requests share a buyer, and runs with different seeds (any integer >= 0) use different buyers.
--
-- With "count" as the third argument, the answers are tallied by status and by the body's
-- "error" (or "status") and printed at the end as lines "answers: <n> <status> <name>" (it costs
-- wrk a Lua call an answer, so the benchmarks leave it out).
local counter = 0
local prefix = "4611686019"
local paths = {}
local threads = {}

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

function init(args)
    for item in string.gmatch(args[1] or "1", "[^,]+") do
        table.insert(paths, "/api/v1/items/" .. item .. "/purchase")
    end
    local seed = math.floor(tonumber(args[2]) or 0) % 268435456
    prefix = string.format("%.0f", 4611686019 + seed * 16 + id % 16)
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    answers = {}
    if args[3] == "count" then
        response = function(status, headers, body)
            local name = string.match(body or "", '"error":"([a-z_]+)"')
                or string.match(body or "", '"status":"([a-z_]+)"') or "-"
            local key = status .. " " .. name
            answers[key] = (answers[key] or 0) + 1
        end
    end
end

function request()
    counter = counter + 1
    local buyer = prefix .. string.format("%09d", counter % 1000000000)
    return wrk.format(nil, paths[counter % #paths + 1], nil, '{"user_id":"' .. buyer .. '"}')
end

function done(summary, latency, requests)
    local all = {}
    for _, thread in ipairs(threads) do
        for key, n in pairs(thread:get("answers") or {}) do
            all[key] = (all[key] or 0) + n
        end
    end
    for key, n in pairs(all) do
        io.write(string.format("answers: %d %s\n", n, key))
    end
end
