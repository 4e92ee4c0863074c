-- reserve.lua: one purchase, atomically. Checks the stock, refuses a repeat
-- buyer, decrements, records the buyer and queues the order, so a reservation
-- never exists without its queued order or the other way round.
--
-- KEYS[1] item state hash {stock, initial, round}   ({item:N}:state)
-- KEYS[2] item buyers hash {user_id -> order_id}     ({item:N}:buyers)
-- KEYS[3] the buyer's lock                           ({item:N}:lock:U)
-- KEYS[4] the order queue                            (seckill:queue)
-- KEYS[5] orders accepted and not yet persisted      (seckill:pending)
--         {order_id -> order}; the worker removes them after its commit
-- ARGV[1] item id, ARGV[2] user id, ARGV[3] lock token, ARGV[4] order id,
-- ARGV[5] acceptance time (Unix ms), ARGV[6] "1" for an anonymous buyer,
-- ARGV[7] (optional) "1": free the buyer's lock before returning (see below),
-- ARGV[8] (optional) the most orders KEYS[5] may hold; missing or 0: no bound
--
-- Returns {outcome, remaining, round}: outcome is queued, sold_out,
-- already_purchased, in_progress (the lock is not ours), queue_full (KEYS[5]
-- holds ARGV[8] orders: PostgreSQL is behind; nothing changed) or
-- unknown_item.
--
-- The queue and pending keys are shared by all items, so on Redis Cluster
-- they would have to move into the item's slot ({item:N}:queue): the key
-- names are passed in, never built here.
local state = redis.call('HMGET', KEYS[1], 'stock', 'round')
-- With ARGV[7] = '1' the script also frees the buyer's lock, on every path
-- where the lock is this request's: the server's one round trip is then two
-- commands (SET NX, this script) instead of three, and Redis runs one script
-- call per purchase instead of two.
local release = ARGV[7] == '1' and ARGV[6] ~= '1'
local function answer(outcome, remaining, round, ours)
    if release and (ours or redis.call('GET', KEYS[3]) == ARGV[3]) then
        redis.call('DEL', KEYS[3])
    end
    return {outcome, remaining, round}
end
if not state[1] then
    return answer('unknown_item', 0, 0, false)
end
local stock = tonumber(state[1])
if stock <= 0 then
    return answer('sold_out', 0, tonumber(state[2]), false)
end
-- The lock guards order creation: only the request holding it may buy.
if ARGV[6] ~= '1' and redis.call('GET', KEYS[3]) ~= ARGV[3] then
    return {'in_progress', stock, tonumber(state[2])}
end
-- The bound keeps Redis's memory finite while PostgreSQL is down: past it a
-- buyer is refused before anything changes, rather than accepted into a
-- queue that could grow until Redis runs out of memory.
local bound = tonumber(ARGV[8] or '0') or 0
if bound > 0 and redis.call('HLEN', KEYS[5]) >= bound then
    return answer('queue_full', stock, tonumber(state[2]), true)
end
if ARGV[6] ~= '1' then
    if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[4]) == 0 then
        return answer('already_purchased', stock, tonumber(state[2]), true)
    end
end
local remaining = redis.call('HINCRBY', KEYS[1], 'stock', -1)
local order = string.format(
    '{"order_id":"%s","item_id":%s,"user_id":%s,"round":%s,"created_ms":%s}',
    ARGV[4], ARGV[1], ARGV[2], state[2], ARGV[5])
redis.call('LPUSH', KEYS[4], order)
redis.call('HSET', KEYS[5], ARGV[4], order)
return answer('queued', remaining, tonumber(state[2]), true)
