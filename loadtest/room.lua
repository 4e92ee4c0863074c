-- room.lua: wrk script of the waiting room's bench rows (issue 27).
-- Usage: wrk -t2 -c256 -d10s -s loadtest/room.lua http://127.0.0.1:8080 -- join <item> [seed]
--        wrk -t2 -c256 -d10s -s loadtest/room.lua http://127.0.0.1:8080 -- poll <item> [seed] [buyers]
-- join: every request a different buyer joins the item's line (POST /api/v1/items/<item>/queue).
-- poll: each thread asks again and again for the line (GET ...?user_id=) of <buyers> (default
-- 1000) of the first buyers it joined (from its second) in a join run with the same seed and
-- the same thread count.
-- Buyers are named as loadtest/purchase.lua names them (P * 10^9 + n, from 2^62 up, sent as a
-- JSON string): n counts the thread's requests, P is 4611686019 + (seed mod 2^28) * 16 + the
-- thread's number, so that no two joins share a buyer and other seeds give other buyers.
local counter = 0
local prefix = "4611686019"
local threads = {}
local mode, path, buyers

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

function init(args)
    mode = args[1] or "join"
    path = "/api/v1/items/" .. (args[2] or "1") .. "/queue"
    local seed = math.floor(tonumber(args[3]) or 0) % 268435456
    buyers = math.floor(tonumber(args[4]) or 1000)
    prefix = string.format("%.0f", 4611686019 + seed * 16 + id % 16)
    if mode == "join" then
        wrk.method = "POST"
        wrk.headers["Content-Type"] = "application/json"
    end
end

function request()
    if mode == "join" then
        counter = counter + 1
        local buyer = prefix .. string.format("%09d", counter % 1000000000)
        return wrk.format(nil, path, nil, '{"user_id":"' .. buyer .. '"}')
    end
    -- From buyer 2: wrk checks the script by a call of request() in the first thread's own state
    -- (script_verify_request) whose request is never sent, so that thread's buyer 1 never joined.
    counter = counter % buyers + 1
    return wrk.format("GET", path .. "?user_id=" .. prefix .. string.format("%09d", counter + 1))
end
