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
-- A joiner may bring a proof-of-work's solution (pow_gate.h): its
-- used-solution key is asked first, whatever else the call answers, so a
-- solution used once (in an earlier round too) places nobody; and it is
-- marked used only once the joiner is placed, so that a refusal (not_open,
-- ended, ...) leaves the solution to the buyer. The same key twice in one
-- batch is used by its first joiner.
--
-- KEYS[1] the room's hash, KEYS[2] its places (ZSET entrant -> score),
-- then the used-solution keys of the joiners that bring one, in order
-- ARGV[1] the round the server's scores are of, then for each joiner:
-- ARGV[3i-1] the entrant handle, ARGV[3i] its pre-start score, ARGV[3i+1]
-- the seconds its used-solution key is kept ('0': the joiner brings none)
--
-- Returns {outcome, now_ms, joined (new joiners of this batch), started
-- (1: the joiners of this call were placed after the pre-start ones; 0:
-- before the start), replayed (a character a joiner: '1' when its solution
-- was used already, and it was not placed; else '0')}; outcome
-- (the same for every joiner: they join one room at one time): joined,
-- not_a_room (no room of this item), stale (the room is of another round:
-- the server reads it again), not_open (before prequeue_opens_at), ended
-- (from ends_at on).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local used, replayed, seen, k = {}, {}, {}, 3
for i = 2, #ARGV - 2, 3 do
    local key, flag = false, '0'
    if ARGV[i + 2] ~= '0' then
        key, k = KEYS[k], k + 1
        if seen[key] or redis.call('EXISTS', key) == 1 then
            flag = '1'
        end
        seen[key] = true
    end
    used[#used + 1] = flag == '0' and key
    replayed[#replayed + 1] = flag
end
local flags = table.concat(replayed)
local r = redis.call('HMGET', KEYS[1], 'round', 'prequeue', 'starts', 'ends', 'started')
if not r[1] then
    return {'not_a_room', now, 0, 0, flags}
elseif r[1] ~= ARGV[1] then
    return {'stale', now, 0, 0, flags}
end
local prequeue, starts, ends = tonumber(r[2]) or 0, tonumber(r[3]) or 0, tonumber(r[4]) or 0
local started = r[5] == '1'
if not started and now >= starts then
    redis.call('HSET', KEYS[1], 'started', 1)
    started = true
end
local flag = started and 1 or 0
if now < prequeue then
    return {'not_open', now, 0, flag, flags}
elseif ends > 0 and now >= ends then
    return {'ended', now, 0, flag, flags}
end
local late = 4503599627370496
local added, j = 0, 0
for i = 2, #ARGV - 2, 3 do
    j = j + 1
    if replayed[j] == '1' then
        -- a solution used already: the joiner is not placed
    elseif not started then
        added = added + redis.call('ZADD', KEYS[2], 'NX', ARGV[i + 1], ARGV[i])
    elseif not redis.call('ZSCORE', KEYS[2], ARGV[i]) then
        local score = string.format('%d', late + redis.call('HINCRBY', KEYS[1], 'seq', 1))
        added = added + redis.call('ZADD', KEYS[2], score, ARGV[i])
    end
    if used[j] then
        redis.call('SET', used[j], 1, 'EX', ARGV[i + 2])
    end
end
if added > 0 then
    redis.call('HINCRBY', KEYS[1], 'joined', added)
end
return {'joined', now, added, flag, flags}
