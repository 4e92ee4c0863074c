-- queue_move.lua: the worker takes the rest of a batch in one call. Moves up
-- to ARGV[1] orders from the queue's tail (the oldest) to the head of the
-- worker's processing list, leaving both lists as that many
-- LMOVE queue processing RIGHT LEFT would: an order is in exactly one of
-- them at every moment.
--
-- KEYS[1] the queue, KEYS[2] the worker's processing list; ARGV[1] how many.
-- Returns the moved orders newest first (list order). unpack() takes at most
-- a few thousand values, hence the chunks.
local items = redis.call('LRANGE', KEYS[1], -tonumber(ARGV[1]), -1)
if #items == 0 then return items end
redis.call('LTRIM', KEYS[1], 0, -#items - 1)
local i = #items
while i >= 1 do
  local chunk = {}
  for j = i, math.max(1, i - 999), -1 do chunk[#chunk + 1] = items[j] end
  redis.call('LPUSH', KEYS[2], unpack(chunk))
  i = i - 1000
end
return items
