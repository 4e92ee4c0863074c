-- heartbeat.lua: a worker's heartbeat, which is also its claim on its id.
-- Refreshes the key when it is free or already this run's; another run's
-- heartbeat (a live worker with the same id, or a crashed run not yet
-- expired) is left alone and reported.
--
-- KEYS[1] the heartbeat; ARGV[1] this run's token, ARGV[2] the TTL in ms.
-- Returns {1} when refreshed, {0, holder's token, its PTTL} when not.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return {0, v, redis.call('PTTL', KEYS[1])} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1}
