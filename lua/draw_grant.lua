-- draw_grant.lua: the units of draw orders of one item taken from its stock,
-- each order's once (issue 28).
--
-- PostgreSQL decides first (the draw, or the waitlist, committed the order
-- with its draw_position and granted_at null); this script then takes the
-- order's units unless it already marked that order id, so a grant retried,
-- run by two nodes or finished by the worker's draw chore after a crash takes
-- nothing twice. A return that came first (lua/order_return.lua marks the
-- order 0) leaves nothing to take. An order of another round takes nothing:
-- its units went with its round.
--
-- KEYS[1] item state hash, KEYS[2] item buyers hash {user -> units held},
-- KEYS[3] granted orders {order id -> units}
-- ARGV: four per order: order id, round, user id, quantity.
--
-- Returns {round, stock, units}: the item's round, its stock after the call
-- and the units this call took (0: nothing new). An unknown item (no state:
-- Redis lost it, or a rebuild holds it off sale) returns {0, 0, 0}: nothing
-- was taken, the grants stay owed.
local s = redis.call('HMGET', KEYS[1], 'stock', 'round')
if not s[1] then
    return {0, 0, 0}
end
local round = s[2]
local stock = tonumber(s[1])
local units = 0
for a = 1, #ARGV, 4 do
    local order_id, user, quantity = ARGV[a], ARGV[a + 2], tonumber(ARGV[a + 3])
    -- Marked and taken together: should a later command fail (Redis keeps a
    -- script's writes before an error), no order is marked without its units.
    if ARGV[a + 1] == round and redis.call('HSETNX', KEYS[3], order_id, quantity) == 1 then
        stock = redis.call('HINCRBY', KEYS[1], 'stock', -quantity)
        redis.call('HINCRBY', KEYS[2], user, quantity)
        units = units + quantity
    end
end
return {tonumber(round), stock, units}
