-- lab_reentrant_renew.lua: the watchdog's renewal: restarts the lease of a
-- reentrant lock, but only while its owner still holds it.
--
-- KEYS[1] the lock hash; ARGV[1] the owner, ARGV[2] the lease (ms).
-- Returns 1 when renewed, 0 when the owner no longer holds the lock.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
