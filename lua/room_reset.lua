-- room_reset.lua: starts an item's waiting room for a new round (issue 27),
-- or clears it for an item that sells as a race: the room's hash, its places,
-- its admissions and its active admissions, all in the item's own slot
-- (keys.h: keys_room), whatever the item's segments.
--
-- KEYS[1] the room's hash, KEYS[2] places (ZSET entrant -> score),
-- KEYS[3] admissions (hash entrant -> expiry ms), KEYS[4] active admissions
-- (ZSET entrant -> expiry ms)
-- ARGV[1] round, ARGV[2] K in hex ("": no room), ARGV[3] prequeue_opens_at
-- (Unix ms, 0: open now), ARGV[4] starts_at, ARGV[5] ends_at (0: none),
-- ARGV[6] admit_per_s, ARGV[7] admit_burst, ARGV[8] max_active (0: none),
-- ARGV[9] admission_ttl_s, ARGV[10] '1': only when the room's hash is missing
-- (a room that Redis lost, started again from PostgreSQL by whichever instance
-- noticed first: a second one must not wipe the joins made since), else '0'
-- Returns 1 (started), 0 (cleared: a race) or 2 (kept: it was there).
if ARGV[10] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
    return 2
end
redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if ARGV[2] == '' then
    return 0
end
redis.call('HSET', KEYS[1], 'round', ARGV[1], 'secret', ARGV[2], 'prequeue', ARGV[3],
    'starts', ARGV[4], 'ends', ARGV[5], 'per_s', ARGV[6], 'burst', ARGV[7],
    'max_active', ARGV[8], 'ttl', ARGV[9], 'seq', 0, 'joined', 0, 'admitted', 0,
    'expired_unused', 0)
return 1
