-- lock_release.lua: compare-and-delete. Frees the lock only when it still
-- holds our token: a holder whose lock expired and was taken by another
-- must not free the new holder's lock (seeds 002 and 004).
--
-- KEYS[1] the lock, ARGV[1] the token it was taken with.
-- Returns 1 when freed, 0 when it was not ours (or already gone).
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
