-- 006_segments.sql: a hot item's stock split over segments (issue 14): each
-- segment is a set of Redis keys in a slot of its own (keys.h keys_segment),
-- so that on a Redis Cluster the item's purchases spread over several
-- masters.

-- How many segments the item's stock is split over (1: not split). Fixed
-- for the item's life: every process computes the segments' keys from it.
ALTER TABLE items
    ADD COLUMN segments integer NOT NULL DEFAULT 1 CHECK (segments BETWEEN 1 AND 64);

-- An order of a segmented item: segment_id, the key id of the segment its
-- units came from (where a return gives them back), and home_id, the key id
-- of its buyer's home segment (where the buyer's units are counted). Both
-- null for an order of an item of one segment: its own keys; never one
-- without the other, or a return would give back to one set of keys and
-- not the other. The check is NOT VALID: the rows already there hold null
-- in both (new columns), and validating them would scan the whole table
-- under the ALTER's lock.
ALTER TABLE orders
    ADD COLUMN segment_id bigint,
    ADD COLUMN home_id bigint,
    ADD CONSTRAINT orders_segment_and_home CHECK ((segment_id IS NULL) = (home_id IS NULL)) NOT VALID;
