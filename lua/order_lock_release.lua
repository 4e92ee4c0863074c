-- order_lock_release.lua: frees buyers' order locks (lua/reserve_batch.lua
-- takes them) once their orders are in PostgreSQL, each by compare-and-
-- delete: a lock goes only while it still holds the order id it was taken
-- with, so a late worker (or a cancel, a sweep, a rebuild) never frees the
-- lock of a newer order of the same buyer.
--
-- KEYS[i] a buyer's lock (seckill:{item:K}:lock:<user id>), all in one slot;
-- ARGV[i] the id of the order it guarded.
-- Returns how many locks were freed.
local freed = 0
for i = 1, #KEYS do
    if redis.call('GET', KEYS[i]) == ARGV[i] then
        freed = freed + redis.call('DEL', KEYS[i])
    end
end
return freed
