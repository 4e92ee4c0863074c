-- lab_reentrant_unlock.lua: leaves a reentrant lock once. The last exit
-- deletes it and announces it on the lock's channel, so that waiters wake
-- up at once instead of polling.
--
-- KEYS[1] the lock hash; ARGV[1] the owner, ARGV[2] the lease (ms),
-- ARGV[3] the channel.
-- Returns the holds left (0: freed), or -1 when the owner does not hold it
-- (its lease ran out and nobody renewed it).
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return left
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 0
