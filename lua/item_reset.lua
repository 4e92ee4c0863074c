-- item_reset.lua: starts a sale round of an item in Redis (on create and on
-- reset): the stock, the round PostgreSQL assigned, the sale window and the
-- per-buyer limit, no restocks, no returns, no buyers. Orders of an older round still on
-- the queue are persisted under their own round by the worker.
--
-- KEYS[1] item state hash, KEYS[2] item buyers hash, KEYS[3] the round's
-- returned orders, KEYS[4] the units its buyers gave back
-- ARGV[1] stock, ARGV[2] round, ARGV[3] start (Unix ms, 0: none),
-- ARGV[4] end (Unix ms, 0: none), ARGV[5] per-buyer limit, ARGV[6] the
-- item's segments (keys.h; each segment's state says how many there are),
-- ARGV[7] the round's units over every segment (default ARGV[1]).
--
-- An archived item stays archived (`archived` survives): a reset that
-- PostgreSQL let through just before the archive must not put it back on
-- sale when its Redis half lands after the archive's.
local archived = redis.call('HGET', KEYS[1], 'archived')
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'initial', ARGV[1], 'round', ARGV[2],
    'restocks', 0, 'restocked', 0, 'returns', 0, 'returned', 0, 'starts', ARGV[3], 'ends', ARGV[4], 'limit', ARGV[5],
    'segments', ARGV[6] or 1, 'total', ARGV[7] or ARGV[1])
if archived then
    redis.call('HSET', KEYS[1], 'archived', archived)
end
return 1
