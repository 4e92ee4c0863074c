-- room_join.lua: a buyer joins an item's waiting room (issue 27). Before
-- the sale's start the place score is the server's (the HMAC of the round's
-- secret over the buyer's entrant handle: the shuffle); from the start on a
-- joiner goes behind everyone, in order of arrival (2^52 + a counter). A
-- buyer who joined already keeps the score they have: joining again answers
-- the same place.
--
-- KEYS[1] the room's hash, KEYS[2] its places (ZSET entrant -> score)
-- ARGV[1] the round the server's score is of, ARGV[2] the entrant handle,
-- ARGV[3] its pre-start score
--
-- Returns {outcome, now_ms, prestart (1: a pre-start joiner), rank (0-based,
-- final from the start on), joined}; outcome: joined, not_a_room (no room
-- of this item), stale (the room is of another round: the server reads it
-- again), not_open (before prequeue_opens_at), ended (from ends_at on).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'round', 'prequeue', 'starts', 'ends')
if not r[1] then
    return {'not_a_room', now, 0, 0, 0}
elseif r[1] ~= ARGV[1] then
    return {'stale', now, 0, 0, 0}
end
local prequeue, starts, ends = tonumber(r[2]) or 0, tonumber(r[3]) or 0, tonumber(r[4]) or 0
if now < prequeue then
    return {'not_open', now, 0, 0, 0}
elseif ends > 0 and now >= ends then
    return {'ended', now, 0, 0, 0}
end
local late = 4503599627370496
local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not score then
    if now < starts then
        score = ARGV[3]
    else
        score = string.format('%d', late + redis.call('HINCRBY', KEYS[1], 'seq', 1))
    end
    redis.call('ZADD', KEYS[2], score, ARGV[2])
    redis.call('HINCRBY', KEYS[1], 'joined', 1)
end
local prestart = tonumber(score) < late and 1 or 0
local joined = tonumber(redis.call('HGET', KEYS[1], 'joined'))
return {'joined', now, prestart, redis.call('ZRANK', KEYS[2], ARGV[2]), joined}
