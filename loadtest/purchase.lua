-- purchase.lua: wrk script that makes every request a different buyer.
-- Usage: wrk -t2 -c256 -d10s -s loadtest/purchase.lua http://127.0.0.1:8080 -- <item> [first_user]
-- Each wrk thread takes its own block of user ids, so no two requests share a buyer.
local counter = 0
local item, base = 1, 1
local threads = {}

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

function init(args)
    item = tonumber(args[1]) or 1
    base = (tonumber(args[2]) or 1) + id * 1000000000
    path = "/api/v1/items/" .. item .. "/purchase"
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
end

function request()
    counter = counter + 1
    return wrk.format(nil, path, nil, '{"user_id":' .. (base + counter) .. '}')
end
