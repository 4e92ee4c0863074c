-- lab_fence_read.lua: the fenced read of redis_lock_fenced's stock (the
-- resource side of Kleppmann's fencing tokens). A token older than the
-- newest one the stock has seen is refused; otherwise the token becomes
-- the newest seen, so a holder whose lock expired and whose successor has
-- already read can no longer write what it read before.
--
-- KEYS[1] the stock string, KEYS[2] the newest token seen for the item;
-- ARGV[1] the holder's token, ARGV[2] the initial stock (used when the
-- stock string does not exist yet).
-- Returns {1, units left}, or {0, newest token seen} when fenced off.
local newest = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < newest then
    return {0, newest}
end
redis.call('SET', KEYS[2], token)
local stock = redis.call('GET', KEYS[1])
if not stock then
    redis.call('SET', KEYS[1], ARGV[2])
    stock = ARGV[2]
end
return {1, tonumber(stock)}
