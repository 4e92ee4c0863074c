-- lab_reentrant_lock.lua: takes or re-enters a reentrant lock (document
-- 001's Redisson lock): a hash {owner -> hold count} that expires after the
-- lease unless its watchdog renews it.
--
-- KEYS[1] the lock hash; ARGV[1] the owner, ARGV[2] the lease (ms).
-- Returns 0 when taken or re-entered (the count is incremented and the
-- lease restarted), else the milliseconds the current holder's lease still
-- runs (at least 1): how long a waiter may sleep without a wake-up.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
    redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 0
end
local left = redis.call('PTTL', KEYS[1])
if left < 1 then
    return 1
end
return left
