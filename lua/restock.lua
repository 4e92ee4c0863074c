-- restock.lua: adds units to the running round of an item, once.
--
-- PostgreSQL decides first (items_restock.c: the items row's restocks count and
-- restocked total, in a transaction still open while this runs); this
-- script applies that restock to Redis unless it already did, so a repeated
-- call adds nothing twice.
--
-- KEYS[1] item state hash
-- ARGV[1] round, ARGV[2] the round's restocks counting this one,
-- ARGV[3] the units this restock adds, ARGV[4] the round's restocked total
--
-- Returns {outcome, remaining, restocks, restocked, changes} with what
-- Redis holds after the call (changes: restocks and returns of the round, the
-- stock version's low part): outcome is added, already (restock ARGV[2] was applied
-- before: the caller compares the totals), other_round (Redis has another
-- round: nothing changed) or unknown_item.
local s = redis.call('HMGET', KEYS[1], 'stock', 'round', 'restocks', 'restocked', 'returns')
if not s[1] then
    return {'unknown_item', 0, 0, 0, 0}
end
local restocks = tonumber(s[3] or '0') or 0
local restocked = tonumber(s[4] or '0') or 0
local returns = tonumber(s[5] or '0') or 0
if s[2] ~= ARGV[1] then
    return {'other_round', tonumber(s[1]), restocks, restocked, restocks + returns}
end
if restocks >= tonumber(ARGV[2]) then
    return {'already', tonumber(s[1]), restocks, restocked, restocks + returns}
end
local remaining = redis.call('HINCRBY', KEYS[1], 'stock', ARGV[3])
redis.call('HSET', KEYS[1], 'restocks', ARGV[2], 'restocked', ARGV[4])
return {'added', remaining, tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[2]) + returns}
