-- reserve_batch.lua: the purchases of one item that one turn of a server's
-- loop gathered, settled buyer after buyer in one script call (group commit).
-- Each buyer gets the answer reserve.lua would have given it, in the order
-- the buyers were gathered; one buyer's refusal never fails another's
-- purchase. Redis pays the cost of a script call once for the batch rather
-- than once per buyer (docs/PERFORMANCE.md, issue 11).
--
-- KEYS[1] item state hash {stock, initial, round}   ({item:N}:state)
-- KEYS[2] item buyers hash {user_id -> order_id}     ({item:N}:buyers)
-- KEYS[3] the order queue                            (seckill:queue)
-- KEYS[4] orders accepted and not yet persisted      (seckill:pending)
-- KEYS[4 + i] buyer i's lock                         ({item:N}:lock:U)
-- ARGV[1] item id, ARGV[2] the most orders KEYS[4] may hold (0: no bound),
-- then four per buyer i, from ARGV[3 + 4 * (i - 1)]: user id, order id,
-- acceptance time (Unix ms), "1" for an anonymous buyer.
--
-- Returns three entries per buyer, {outcome, remaining, round, ...}, with the
-- outcomes of reserve.lua: queued, sold_out, already_purchased, in_progress,
-- queue_full, unknown_item.
--
-- The buyer's lock: while the script runs, every buyer of the batch holds its
-- lock (nothing else runs in Redis meanwhile), so the lock is not written: a
-- buyer whose lock another request holds (SET NX by reserve.lua's caller), or
-- who came twice in this batch, is in_progress, as a concurrent twin is with
-- reserve.lua. Nothing is left locked when the script returns.
local n = #KEYS - 4
local out = {}
local state = redis.call('HMGET', KEYS[1], 'stock', 'round')
if not state[1] then
    for i = 1, n do
        out[3 * i - 2], out[3 * i - 1], out[3 * i] = 'unknown_item', 0, 0
    end
    return out
end
local stock = tonumber(state[1])
local round = tonumber(state[2])
local bound = tonumber(ARGV[2]) or 0
local waiting = 0
if bound > 0 then
    waiting = redis.call('HLEN', KEYS[4])
end
local seen = {}
local queued, pending = {}, {}
for i = 1, n do
    local a = 3 + 4 * (i - 1)
    local user, order_id, anonymous = ARGV[a], ARGV[a + 1], ARGV[a + 3] == '1'
    local outcome
    if stock <= 0 then
        outcome = 'sold_out'
    elseif not anonymous and (seen[user] or redis.call('EXISTS', KEYS[4 + i]) == 1) then
        outcome = 'in_progress'
    elseif bound > 0 and waiting >= bound then
        outcome = 'queue_full'
    elseif not anonymous and redis.call('HSETNX', KEYS[2], user, order_id) == 0 then
        outcome = 'already_purchased'
    else
        stock = stock - 1
        waiting = waiting + 1
        local order = string.format(
            '{"order_id":"%s","item_id":%s,"user_id":%s,"round":%s,"created_ms":%s}',
            order_id, ARGV[1], user, state[2], ARGV[a + 2])
        queued[#queued + 1] = order
        pending[#pending + 1] = order_id
        pending[#pending + 1] = order
        outcome = 'queued'
    end
    if not anonymous then
        seen[user] = true
    end
    out[3 * i - 2], out[3 * i - 1], out[3 * i] = outcome, stock, round
end
-- One write of each key for the whole batch; LPUSH of several values pushes
-- them one after another, so the queue keeps the order of the buyers.
if #queued > 0 then
    redis.call('HINCRBY', KEYS[1], 'stock', -#queued)
    redis.call('LPUSH', KEYS[3], unpack(queued))
    redis.call('HSET', KEYS[4], unpack(pending))
end
return out
