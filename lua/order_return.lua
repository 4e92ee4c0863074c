-- order_return.lua: the units of cancelled and expired orders of one item
-- back on sale, each order's once.
--
-- PostgreSQL decides first (the order's state moved from persisted to
-- cancelled or expired, which happens once); this script gives the units
-- back unless it already did for that order id, so a retried return, a
-- return run by two nodes or one finished by the sweep after a crash adds
-- nothing twice. An order of another round gives nothing back: its units
-- went with its round (a reset set the stock anew).
--
-- A draw's order (issue 28) took its units by its grant (lua/draw_grant.lua),
-- after PostgreSQL committed it: one returned before its grant gives nothing
-- back. Its return first marks it 0 in the granted orders; if that mark is
-- new (or is the 0 of an earlier return) its units never left the stock, and
-- the grant, should it run later, takes nothing.
--
-- KEYS[1] item state hash, KEYS[2] item buyers hash {user -> units held},
-- KEYS[3] returned orders {order id -> units}, KEYS[4] units the buyers
-- gave back {user -> units}, KEYS[5] granted draw orders {order id ->
-- units, 0: returned before its grant} (needed only for a part draw)
-- ARGV: five per order: order id, round, user id, quantity, and the part of
-- the return these keys take: all (the order's units came from these keys
-- and its buyer is counted here), stock (only its units: the buyer is
-- counted on another segment, keys.h), buyer (only the buyer's count: the
-- units came from another segment) or draw (all of a draw order's: a draw
-- item has one segment). Each part is marked in KEYS[3] of its own keys, so
-- each happens once.
--
-- Returns {round, changes, remaining, units}: the item's round, its stock
-- changes of the round (restocks and returns: the stock version's low part),
-- the stock after the call and the units this call gave back (0: nothing
-- new). An unknown item returns {0, 0, 0, 0}.
local s = redis.call('HMGET', KEYS[1], 'stock', 'round', 'restocks', 'returns')
if not s[1] then
    return {0, 0, 0, 0}
end
local round = s[2]
local changes = (tonumber(s[3] or '0') or 0) + (tonumber(s[4] or '0') or 0)
local units = 0
local stock = tonumber(s[1])
for a = 1, #ARGV, 5 do
    local order_id, user, quantity, part = ARGV[a], ARGV[a + 2], tonumber(ARGV[a + 3]), ARGV[a + 4]
    local taken = ARGV[a + 1] == round
    if taken and part == 'draw' then
        redis.call('HSETNX', KEYS[5], order_id, 0)
        taken = redis.call('HGET', KEYS[5], order_id) ~= '0'
    end
    -- The order is marked and its units added together: should a later
    -- command fail (Redis keeps a script's writes before an error), no order
    -- is marked returned without its units.
    if taken and redis.call('HSETNX', KEYS[3], order_id, quantity) == 1 then
        if part ~= 'buyer' then
            stock = redis.call('HINCRBY', KEYS[1], 'stock', quantity)
            units = units + quantity
        end
        -- An anonymous buyer has no count; a round started before
        -- quantities kept an order id there: one unit.
        local have = tonumber(redis.call('HGET', KEYS[2], user) or '0') or 0
        if have > 1000000 then
            have = 1
        end
        if have > 0 and part ~= 'stock' then
            redis.call('HSET', KEYS[2], user, math.max(have - quantity, 0))
            redis.call('HINCRBY', KEYS[4], user, quantity)
        end
    end
end
if units > 0 then
    redis.call('HINCRBY', KEYS[1], 'returned', units)
    redis.call('HINCRBY', KEYS[1], 'returns', 1)
    changes = changes + 1
end
return {tonumber(round), changes, stock, units}
