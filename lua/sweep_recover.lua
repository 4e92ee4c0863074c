-- sweep_recover.lua: a dead worker's processing list of one item back onto
-- the item's queue, in one atomic call, so that an order is always in
-- exactly one of the two lists, and a worker that takes its id back in
-- between keeps its list.
--
-- KEYS[1] the processing list, KEYS[2] the queue, KEYS[3] the worker's claim
-- on the list (all three in the item's slot; the heartbeat is in another,
-- so the sweep reads it before this call); ARGV[1] the claim the sweep read
-- before it found the heartbeat gone ("" for none). A run of that worker
-- claims its list (a new token) before it reads or moves into it, so a
-- claim that changed means a live run holds the list now. The newest entry
-- (head) goes first to the queue's tail, where workers take from, so the
-- list's oldest ends up at the tail: taken first, in the order they were
-- accepted.
-- Returns how many orders moved, or -2 when the list was claimed meanwhile.
if (redis.call('GET', KEYS[3]) or '') ~= ARGV[1] then return -2 end
local n = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do n = n + 1 end
redis.call('DEL', KEYS[3])
return n
