-- reserve_batch.lua: the purchases of one item that one turn of a server's
-- loop gathered, settled buyer after buyer in one script call (group commit).
-- Each buyer gets its own answer, in the order the buyers were gathered; one
-- buyer's refusal never fails another's purchase, and a refusal changes
-- nothing. Redis pays the cost of a script call once for the batch rather
-- than once per buyer (docs/PERFORMANCE.md, issue 11).
--
-- KEYS[1] item state hash                            ({item:N}:state)
--         {stock, initial, round, restocks, restocked, starts, ends, limit,
--          segments, total, archived}
-- KEYS[2] item buyers hash {user_id -> units bought this round}
--                                                    ({item:N}:buyers)
-- KEYS[3] the item's order queue                     (seckill:{item:N}:queue)
-- KEYS[4] its orders accepted and not yet persisted  (seckill:{item:N}:pending)
-- KEYS[5] units the buyers gave back this round      ({item:N}:given_back)
--         {user_id -> units of their cancelled and expired orders, and of
--          their released holds}
-- KEYS[5 + i] buyer i's order lock, when ARGV[4] > 0 (seckill:{item:N}:lock:
--         <user id>)
-- ARGV[1] item id, ARGV[2] the most orders KEYS[4] may hold (0: no bound),
-- ARGV[3] the key id of these keys (keys.h: the item id, or one of its
-- segments'), ARGV[4] the TTL in ms of a buyer's order lock (0: no lock,
-- order_guard = script), then four per buyer i, from ARGV[5 + 4 * (i - 1)]:
-- user id, order id, mode, quantity.
--
-- The order lock guards the creation of one buyer's order, from its
-- reservation until the worker has it in PostgreSQL: KEYS[5 + i],
-- seckill:{item:K}:lock:<user id> (K = ARGV[3], in the slot of the rest),
-- holding the order id, taken with PX ARGV[4] for each buyer counted here
-- (modes 0 and h) whose order is queued or held; while it stands, the
-- buyer's next purchase is answered in_progress and changes nothing. The
-- worker deletes it after its commit, only while it still holds the order
-- id (compare-and-delete), and it expires when no worker comes.
-- The mode:
--   0   a buyer counted here (an item of one segment)
--   1   an anonymous buyer (its order id stands for it; nobody is counted)
--       of an item of one segment: refused (buyer_required) when the
--       limit is below the round's units, where anonymity would let one
--       person buy past the limit
--   a   an anonymous buyer of a segmented item, sent here by a server that
--       knows the segments: the same as 1
--   h   a buyer of a segmented item whose home segment this is: counted
--       here, and when this segment cannot supply the quantity the units
--       are held against the limit (outcome held) while the server looks
--       for them on the other segments
--   t<first_unit>:<home key id>:<round>  take the units for a buyer held
--       at home in that round: no limit here, the order numbered as home
--       said; a hold of another round (a reset between) takes nothing and
--       is answered sold_out
--   r<round>  release a hold of that round the other segments could not
--       fill (one of another round changes nothing): the units leave
--       the buyer's count, and join those given back (KEYS[5]), so that
--       their numbers are never handed out again (an order the same buyer
--       placed while the hold stood is numbered after them); the buyer's
--       order lock goes too, when it still holds this order id
-- A buyer of an item whose state says admission = room (the waiting room,
-- issue 27) is let in only with the admission the server checked: modes 0,
-- 1, a and h then end in "+<round>:<expiry ms>" (the admission token's),
-- and without it the outcome is admission_missing, of another round
-- admission_wrong_round, past its expiry by Redis's clock admission_expired
-- (after the window's refusals, before the stock's).
-- A buyer of an item whose state says admission = draw (issue 28) is
-- refused draw_item, whoever it is: its units go to the draw's winners.
--
-- Returns seven entries about the item, then three per buyer:
--   {now_ms, round, changes, starts_ms, ends_ms, per_buyer_limit, segments,
--    outcome, remaining, bought, ...}
-- now_ms is Redis's clock, the one authority on the sale window for every
-- server: nothing is sold before starts_ms or from ends_ms on (0: no bound).
-- changes counts the round's restocks and returns: with the round, the
-- version of the stock that the servers' sold-out flags belong to.
-- outcome: queued, not_started, ended, in_progress (the buyer's order lock
-- stands: an order of theirs is still being created), sold_out,
-- limit_reached (the buyer's
-- units plus the quantity would pass the limit), insufficient_stock (fewer
-- remain than the quantity: no partial fills), queue_full (KEYS[4] holds
-- ARGV[2] orders: PostgreSQL is behind), unknown_item, archived (the item is
-- off sale for good: every mode but a release), buyer_required (an
-- anonymous buyer where the limit is below the round's units), held (bought is then
-- the held order's first unit), released, or segmented (mode 0 or 1 on an
-- item of several segments: the server did not know; nothing done).
-- remaining is the stock of these keys after the buyer, bought the buyer's
-- units of the round after it (0 for modes 1, a and t).
--
-- An order's acceptance time is now_ms, and first_unit numbers its units
-- among the buyer's of the round (1 for the first), counting the units the
-- buyer gave back (KEYS[5]): PostgreSQL keeps (item, round, buyer,
-- first_unit) unique among live orders, so two orders starting at the same
-- unit of a buyer (a Redis that forgot its buyers) are never both persisted.
-- An order of a segmented item also names the segment its units came from
-- and its buyer's home ("segment" and "home", key ids), where a return gives
-- them back.
local n = (#ARGV - 4) / 4
local lock_ttl = tonumber(ARGV[4]) or 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('HMGET', KEYS[1], 'stock', 'round', 'restocks', 'starts', 'ends', 'limit',
    'returns', 'segments', 'initial', 'restocked', 'total', 'archived', 'admission')
local out = {now, 0, 0, 0, 0, 0, 1}
if not s[1] then
    for i = 1, n do
        out[5 + 3 * i], out[6 + 3 * i], out[7 + 3 * i] = 'unknown_item', 0, 0
    end
    return out
end
local stock = tonumber(s[1])
local round = tonumber(s[2])
local starts = tonumber(s[4] or '0') or 0
local ends = tonumber(s[5] or '0') or 0
local limit = tonumber(s[6] or '1') or 1
local changes = (tonumber(s[3] or '0') or 0) + (tonumber(s[7] or '0') or 0)
local segments = tonumber(s[8] or '1') or 1
out[2], out[3], out[4], out[5], out[6], out[7] = round, changes, starts, ends, limit, segments
local archived = s[12] ~= false
local room = s[13] == 'room'
-- A draw's units go to its winners (lua/draw_grant.lua), never to a purchase.
local draw = s[13] == 'draw'
-- The round's units over every segment, restocks included: an item of one
-- segment has them in its own fields; a segment keeps the whole in `total`
-- (the server writes it at each round and restock), and without it (a state
-- rebuilt without it) a bound from above: each segment holds its share of
-- the initial stock to a unit.
local initial = tonumber(s[9] or '0') or 0
local restocked = tonumber(s[10] or '0') or 0
local units = initial + restocked
if segments > 1 then
    units = tonumber(s[11] or '') or ((initial + 1) * segments - 1 + restocked)
end
-- An order of a segmented item says where its units came from and where its
-- buyer is counted.
local function placed(home)
    if segments <= 1 then
        return ''
    end
    return string.format(',"segment":%s,"home":%s', ARGV[3], home)
end
local window = nil
if starts > 0 and now < starts then
    window = 'not_started'
elseif ends > 0 and now >= ends then
    window = 'ended'
end
local bound = tonumber(ARGV[2]) or 0
local waiting = 0
if bound > 0 then
    waiting = redis.call('HLEN', KEYS[4])
end
-- Each buyer's units, read once a batch and written once at the end.
local bought, changed = {}, {}
local function units_of(user)
    local have = bought[user]
    if have == nil then
        have = tonumber(redis.call('HGET', KEYS[2], user) or '0') or 0
        -- A round started before quantities kept the buyer's order id here:
        -- that buyer has one unit.
        if have > 1000000 then
            have = 1
        end
        bought[user] = have
    end
    return have
end
-- Units given back are rare: read a buyer's only when the round has some.
local any_given_back = redis.call('EXISTS', KEYS[5]) == 1
local function numbered_after(user, have)
    if not any_given_back then
        return have
    end
    return have + (tonumber(redis.call('HGET', KEYS[5], user) or '0') or 0)
end
local taken = 0
local queued, pending = {}, {}
-- Takes quantity units for an order; home: the key id counting the buyer.
local function take(user, order_id, quantity, first_unit, home)
    stock = stock - quantity
    taken = taken + quantity
    waiting = waiting + 1
    local order = string.format(
        '{"order_id":"%s","item_id":%s,"user_id":%s,"round":%d,"created_ms":%d,' ..
        '"quantity":%d,"first_unit":%d%s}',
        order_id, ARGV[1], user, round, now, quantity, first_unit, placed(home))
    queued[#queued + 1] = order
    pending[#pending + 1] = order_id
    pending[#pending + 1] = order
end
local function count(user, have)
    if not changed[user] then
        changed[user] = true
        changed[#changed + 1] = user
    end
    bought[user] = have
end
-- Why a room's buyer may not buy (mode: the buyer's), or nil when they may.
local function unadmitted(mode)
    local adm_round, expiry = string.match(mode, '%+(%d+):(%d+)$')
    if not adm_round then
        return 'admission_missing'
    elseif tonumber(adm_round) ~= round then
        return 'admission_wrong_round'
    elseif tonumber(expiry) <= now then
        return 'admission_expired'
    end
    return nil
end
-- Why these keys cannot supply quantity units now, or nil when they can.
local function refusal(quantity)
    if window then
        return window
    elseif stock <= 0 then
        return 'sold_out'
    elseif quantity > stock then
        return 'insufficient_stock'
    elseif bound > 0 and waiting >= bound then
        return 'queue_full'
    end
    return nil
end
for i = 1, n do
    local a = 5 + 4 * (i - 1)
    local user, order_id, mode = ARGV[a], ARGV[a + 1], ARGV[a + 2]
    local quantity = tonumber(ARGV[a + 3])
    local kind = string.sub(mode, 1, 1)
    local have = 0
    local outcome
    if archived and kind ~= 'r' then
        -- Off sale for good; a release still gives a hold back.
        outcome = 'archived'
    elseif kind == 't' then
        local first, home, held = string.match(mode, '^t(%d+):(%d+):(%d+)$')
        outcome = refusal(quantity)
        if not outcome and tonumber(held) ~= round then
            outcome = 'sold_out'
        end
        if not outcome then
            take(user, order_id, quantity, tonumber(first), home)
            outcome = 'queued'
        end
    elseif kind == 'r' then
        if tonumber(string.sub(mode, 2)) == round then
            have = math.max(units_of(user) - quantity, 0)
            count(user, have)
            redis.call('HINCRBY', KEYS[5], user, quantity)
            any_given_back = true
        end
        if lock_ttl > 0 and redis.call('GET', KEYS[5 + i]) == order_id then
            redis.call('DEL', KEYS[5 + i])
        end
        outcome = 'released'
    elseif (kind == '0' or kind == '1') and segments > 1 then
        outcome = 'segmented'
    else
        local anonymous = kind == '1' or kind == 'a'
        local guarded = lock_ttl > 0 and not anonymous
        if not anonymous then
            have = units_of(user)
        end
        -- For a plain buyer an empty stock comes first; a buyer held at
        -- home needs the limit's room first, the stock may be elsewhere.
        if draw then
            outcome = 'draw_item'
        elseif anonymous and limit < units then
            outcome = 'buyer_required'
        elseif window then
            outcome = window
        elseif room and unadmitted(mode) then
            outcome = unadmitted(mode)
        elseif guarded and redis.call('EXISTS', KEYS[5 + i]) == 1 then
            outcome = 'in_progress'
        elseif stock <= 0 and kind ~= 'h' then
            outcome = 'sold_out'
        elseif have + quantity > limit then
            outcome = 'limit_reached'
        else
            outcome = refusal(quantity)
        end
        if kind == 'h' and (outcome == 'sold_out' or outcome == 'insufficient_stock') then
            outcome = 'held'
        end
        if not outcome or outcome == 'held' then
            local first = (anonymous and 0 or numbered_after(user, have)) + 1
            if not outcome then
                take(user, order_id, quantity, first, ARGV[3])
                outcome = 'queued'
            end
            have = have + quantity
            if not anonymous then
                count(user, have)
            end
            if guarded then
                redis.call('SET', KEYS[5 + i], order_id, 'PX', lock_ttl)
            end
            if outcome == 'held' then
                have = first
            end
        end
    end
    out[5 + 3 * i], out[6 + 3 * i], out[7 + 3 * i] = outcome, stock, have
end
-- One write of each key for the whole batch; LPUSH of several values pushes
-- them one after another, so the queue keeps the order of the buyers.
if taken > 0 then
    redis.call('HINCRBY', KEYS[1], 'stock', -taken)
end
if #changed > 0 then
    local units = {}
    for _, user in ipairs(changed) do
        units[#units + 1] = user
        units[#units + 1] = bought[user]
    end
    redis.call('HSET', KEYS[2], unpack(units))
end
if #queued > 0 then
    redis.call('LPUSH', KEYS[3], unpack(queued))
    redis.call('HSET', KEYS[4], unpack(pending))
end
return out
