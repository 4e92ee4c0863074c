-- room_poll.lua: the admission of an item's waiting room (issue 27), and
-- one buyer's standing in it. Every call first lets in the places due by
-- Redis's clock: admitted(t) = min(joined, burst + floor(per_s * (t -
-- starts))) places, never while the item is sold out or the sale over, and
-- never more than max_active unexpired admissions at once (those past their
-- expiry leave first, counted as expired_unused; a purchase takes its
-- buyer's out, server side). A place let in gets its admission, an expiry
-- written once (HSETNX): every later call, on any server, reads the same.
-- At most ARGV[4] places are let in a call; the next call goes on. The
-- first call at or after the start sets the room's `started`, as a join's
-- does (lua/room_join.lua).
--
-- KEYS[1] the room's hash, KEYS[2] places (ZSET entrant -> score),
-- KEYS[3] admissions (hash entrant -> expiry ms), KEYS[4] active admissions
-- (ZSET entrant -> expiry ms), KEYS[5] the item's state hash (its stock)
-- ARGV[1] the round the server asks of, ARGV[2] the buyer's entrant handle
-- ("": only the admission), ARGV[3] the units remaining over the item's
-- segments when the server counted them (-1: KEYS[5]'s stock), ARGV[4] the
-- most places let in by this call
--
-- Returns {outcome, now_ms, admitted, joined, active, rank (0-based; -1: not
-- joined), expiry (ms; 0: not admitted), sold_out (1/0), prestart (1/0)};
-- outcome: ok, not_a_room, stale (another round).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 'round', 'starts', 'ends', 'per_s', 'burst',
    'max_active', 'ttl', 'joined', 'admitted', 'started')
if not r[1] then
    return {'not_a_room', now, 0, 0, 0, -1, 0, 0, 0}
elseif r[1] ~= ARGV[1] then
    return {'stale', now, 0, 0, 0, -1, 0, 0, 0}
end
local starts, ends = tonumber(r[2]) or 0, tonumber(r[3]) or 0
local per_s, burst = tonumber(r[4]) or 1, tonumber(r[5]) or 0
local max_active, ttl = tonumber(r[6]) or 0, tonumber(r[7]) or 120
local joined, admitted = tonumber(r[8]) or 0, tonumber(r[9]) or 0
if r[10] ~= '1' and now >= starts then
    redis.call('HSET', KEYS[1], 'started', 1)
end
local gone = redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if gone > 0 then
    redis.call('HINCRBY', KEYS[1], 'expired_unused', gone)
end
local active = redis.call('ZCARD', KEYS[4])
local stock = tonumber(ARGV[3]) or -1
if stock < 0 then
    stock = tonumber(redis.call('HGET', KEYS[5], 'stock') or '0') or 0
end
local sold_out = stock <= 0
if now >= starts and not sold_out and not (ends > 0 and now >= ends) then
    local due = math.min(joined, burst + math.floor(per_s * (now - starts) / 1000))
    local k = math.min(due - admitted, tonumber(ARGV[4]) or 1000)
    if max_active > 0 then
        k = math.min(k, max_active - active)
    end
    if k > 0 then
        local expiry = now + ttl * 1000
        local places = redis.call('ZRANGE', KEYS[2], admitted, admitted + k - 1)
        for _, e in ipairs(places) do
            if redis.call('HSETNX', KEYS[3], e, expiry) == 1 then
                redis.call('ZADD', KEYS[4], expiry, e)
            end
        end
        admitted = admitted + #places
        active = active + #places
        redis.call('HSET', KEYS[1], 'admitted', admitted)
    end
end
local rank, expiry, prestart = -1, 0, 0
if ARGV[2] ~= '' then
    local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
    if score then
        rank = redis.call('ZRANK', KEYS[2], ARGV[2])
        expiry = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0') or 0
        prestart = tonumber(score) < 4503599627370496 and 1 or 0
    end
end
return {'ok', now, admitted, joined, active, rank, expiry, sold_out and 1 or 0, prestart}
