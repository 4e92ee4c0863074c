-- item_reset.lua: sets an item's (or a segment's) state hash in Redis, the one
-- place its layout is written: on create and on reset a new sale round (the
-- stock, the round PostgreSQL assigned, the sale window and the per-buyer
-- limit, no restocks, no returns, no buyers), and on a rebuild
-- (reconcile_rebuild.c) the state the books say, whose buyers and marks the
-- rebuild then renames in. Orders of an older round still on the queue are
-- persisted under their own round by the worker.
--
-- KEYS[1] item state hash, KEYS[2] item buyers hash, KEYS[3] the round's
-- returned orders, KEYS[4] the units its buyers gave back, KEYS[5] (when
-- given) its granted draw orders (issue 28: lua/draw_grant.lua's marks; a
-- new round's orders have none, and an older round's order is neither
-- granted nor returned in this round: both scripts check the round first)
-- ARGV[1] stock, ARGV[2] round, ARGV[3] start (Unix ms, 0: none),
-- ARGV[4] end (Unix ms, 0: none), ARGV[5] per-buyer limit, ARGV[6] the
-- item's segments (keys.h; each segment's state says how many there are),
-- ARGV[7] the round's units over every segment (default ARGV[1]);
-- for a rebuild: ARGV[8] the initial stock (default ARGV[1]), ARGV[9]
-- restocks, ARGV[10] units restocked, ARGV[11] returns, ARGV[12] units
-- returned (default 0 each); ARGV[13] the item's admission ("race",
-- "room": lua/reserve_batch.lua lets a room's buyer in only with an
-- admission, or "draw": it refuses every purchase), kept as it was when not
-- given.
--
-- The keys are UNLINKed: a rebuilt item's buyers hash may hold a million
-- fields, freed in the background. An archived item stays archived
-- (`archived` survives): a reset that PostgreSQL let through just before the
-- archive must not put it back on sale when its Redis half lands after the
-- archive's.
local archived = redis.call('HGET', KEYS[1], 'archived')
local admission = ARGV[13] or redis.call('HGET', KEYS[1], 'admission')
redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if KEYS[5] then
    redis.call('UNLINK', KEYS[5])
end
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'initial', ARGV[8] or ARGV[1], 'round', ARGV[2],
    'restocks', ARGV[9] or 0, 'restocked', ARGV[10] or 0, 'returns', ARGV[11] or 0,
    'returned', ARGV[12] or 0, 'starts', ARGV[3], 'ends', ARGV[4], 'limit', ARGV[5],
    'segments', ARGV[6] or 1, 'total', ARGV[7] or ARGV[1])
if archived then
    redis.call('HSET', KEYS[1], 'archived', archived)
end
if admission then
    redis.call('HSET', KEYS[1], 'admission', admission)
end
return 1
