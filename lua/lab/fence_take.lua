-- lab_fence_take.lua: the fenced write of redis_lock_fenced's stock: sets
-- the units left to what the holder computed, unless a newer token has been
-- seen since (its lock expired and another holder read the stock).
--
-- KEYS[1] the stock string, KEYS[2] the newest token seen for the item;
-- ARGV[1] the holder's token, ARGV[2] the units left after the sale.
-- Returns {1, units left}, or {0, newest token seen} when fenced off.
local newest = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < newest then
    return {0, newest}
end
redis.call('SET', KEYS[2], token)
redis.call('SET', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[2])}
