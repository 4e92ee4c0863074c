-- item_reset.lua: starts a sale round of an item in Redis (on create and on
-- reset): stock and initial stock to N, the round PostgreSQL assigned, no
-- buyers. Orders of an older round still on the queue are dropped by the
-- worker, which only persists orders of the item's current round.
--
-- KEYS[1] item state hash, KEYS[2] item buyers hash
-- ARGV[1] stock, ARGV[2] round
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'initial', ARGV[1], 'round', ARGV[2])
return 1
