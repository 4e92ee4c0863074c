-- room_join.lua: buyers join an item's waiting room (issue 27), as many as
-- a batch holds (room_joins.h: the joins an instance gathered while its last
-- batch was on its way): Redis pays for one script call a batch, not a join.
-- Before the sale's start the place score is the server's (the HMAC of the
-- round's secret over the buyer's entrant handle: the shuffle); from the
-- start on a joiner goes behind everyone, in order of arrival (2^52 + a
-- counter; a batch's joiners in their order in it). A buyer who joined
-- already keeps the score they have: joining again (in the same batch too)
-- answers the same place.
--
-- The first call at or after the start (by this node's clock: the item's
-- master's) sets the room's `started`; from then on no join counts as
-- pre-start, whatever the clock says later, and K may be shown (the item's
-- detail and audit show it only once `started` is set: room_store.h). A
-- call without joiners only does that (room_store_started).
--
-- KEYS[1] the room's hash, KEYS[2] its places (ZSET entrant -> score)
-- ARGV[1] the round the server's scores are of, then for each joiner:
-- ARGV[2i] the entrant handle, ARGV[2i+1] its pre-start score
--
-- Returns {outcome, now_ms, joined (new joiners of this batch), started
-- (1: the joiners of this call were placed after the pre-start ones; 0:
-- before the start)}; outcome
-- (the same for every joiner: they join one room at one time): joined,
-- not_a_room (no room of this item), stale (the room is of another round:
-- the server reads it again), not_open (before prequeue_opens_at), ended
-- (from ends_at on).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'round', 'prequeue', 'starts', 'ends', 'started')
if not r[1] then
    return {'not_a_room', now, 0, 0}
elseif r[1] ~= ARGV[1] then
    return {'stale', now, 0, 0}
end
local prequeue, starts, ends = tonumber(r[2]) or 0, tonumber(r[3]) or 0, tonumber(r[4]) or 0
local started = r[5] == '1'
if not started and now >= starts then
    redis.call('HSET', KEYS[1], 'started', 1)
    started = true
end
local flag = started and 1 or 0
if now < prequeue then
    return {'not_open', now, 0, flag}
elseif ends > 0 and now >= ends then
    return {'ended', now, 0, flag}
end
local late = 4503599627370496
local added = 0
for i = 2, #ARGV - 1, 2 do
    if not started then
        added = added + redis.call('ZADD', KEYS[2], 'NX', ARGV[i + 1], ARGV[i])
    elseif not redis.call('ZSCORE', KEYS[2], ARGV[i]) then
        local score = string.format('%d', late + redis.call('HINCRBY', KEYS[1], 'seq', 1))
        added = added + redis.call('ZADD', KEYS[2], score, ARGV[i])
    end
end
if added > 0 then
    redis.call('HINCRBY', KEYS[1], 'joined', added)
end
return {'joined', now, added, flag}
