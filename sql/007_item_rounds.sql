-- 007_item_rounds.sql: an item's rounds count for that item alone: 1 for a
-- new item, 2 after its first reset, and so on (they came from one sequence
-- for every item, so a new item could start at round 2). An item id is never
-- used twice (items are archived, never deleted), so a round number still
-- never comes back for the same item, which is what sold-out flags and
-- Redis's keys rely on. Items made before keep their rounds: their orders
-- and Redis's state name them, and each still grows by one at a reset.
-- The sequence stays: binaries of the release before this one, still
-- running while an upgrade migrates (docs/PRODUCTION.md), reset with it.
ALTER TABLE items ALTER COLUMN round SET DEFAULT 1;
