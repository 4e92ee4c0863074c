-- purchase.lua: wrk script that makes every request a different buyer.
-- Usage: wrk -t2 -c256 -d10s -s loadtest/purchase.lua http://127.0.0.1:8080 -- <items> [first_user]
-- <items> is an item id, or several separated by commas: the requests go to each in turn.
-- Each wrk thread takes its own block of user ids, so no two requests share a buyer.
local counter = 0
local base = 1
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
    base = (tonumber(args[2]) or 1) + id * 1000000000
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
end

function request()
    counter = counter + 1
    return wrk.format(nil, paths[counter % #paths + 1], nil, '{"user_id":' .. (base + counter) .. '}')
end
