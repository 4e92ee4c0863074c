-- sweep_recover.lua: a dead worker's processing list back onto the queue, in
-- one atomic call, so that an order is always in exactly one of the two lists,
-- and a worker that takes its id back in between keeps its list.
--
-- KEYS[1] the processing list, KEYS[2] the queue, KEYS[3] the worker's
-- heartbeat. The newest entry (head) goes first to the queue's tail, where
-- workers take from, so the list's oldest ends up at the tail: taken first,
-- in the order they were accepted.
-- Returns how many orders moved, or -2 when the worker is alive.
if redis.call('EXISTS', KEYS[3]) == 1 then return -2 end
local n = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do n = n + 1 end
return n
