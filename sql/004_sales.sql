-- 004_sales.sql: sales, not just items: a sale window, a limit per buyer and
-- orders of several units, restocks, and orders that outlive their round.

-- The window (null: no bound), the units one buyer may have in a round, and
-- what restocks added to the round (restocks counts them: the version that
-- lets a restock be applied to Redis exactly once, lua/restock.lua). An
-- item holds at most 10^12 units a round, exact in Redis's Lua numbers; NOT
-- VALID leaves rows of older versions as they were.
ALTER TABLE items
    ADD COLUMN starts_at timestamptz,
    ADD COLUMN ends_at timestamptz,
    ADD COLUMN per_buyer_limit integer NOT NULL DEFAULT 1
        CHECK (per_buyer_limit BETWEEN 1 AND 1000),
    ADD COLUMN restocked bigint NOT NULL DEFAULT 0 CHECK (restocked >= 0),
    ADD COLUMN restocks integer NOT NULL DEFAULT 0 CHECK (restocks >= 0),
    ADD CONSTRAINT items_window CHECK (ends_at > starts_at),
    ADD CONSTRAINT items_units CHECK (initial_stock + restocked <= 1000000000000) NOT VALID;

-- An order holds quantity units, the buyer's units first_unit to
-- first_unit + quantity - 1 of its round. A reset no longer deletes orders:
-- they keep their round, and "no buyer twice" becomes "no two orders of a
-- buyer's round starting at the same unit": with a limit of one, one order
-- per buyer and round, as before. (With larger quantities, orders made by a
-- Redis that forgot its buyers could still overlap from their second unit;
-- such a Redis is what seckill-admin reconcile reports.)
ALTER TABLE orders
    ADD COLUMN quantity integer NOT NULL DEFAULT 1 CHECK (quantity BETWEEN 1 AND 1000),
    ADD COLUMN first_unit bigint NOT NULL DEFAULT 1 CHECK (first_unit >= 1),
    DROP CONSTRAINT orders_item_id_user_id_key,
    ADD CONSTRAINT orders_units_once UNIQUE (item_id, round, user_id, first_unit);
