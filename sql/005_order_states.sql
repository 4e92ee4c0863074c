-- 005_order_states.sql: orders that live: awaiting payment, paid, cancelled or
-- expired, and the units of the last two given back on sale exactly once.

-- Seconds an order of the item may wait for payment (0: no payment step, a
-- persisted order is final). Items made before keep 0: they sold that way.
ALTER TABLE items
    ADD COLUMN payment_timeout_s integer NOT NULL DEFAULT 0
        CHECK (payment_timeout_s BETWEEN 0 AND 604800);

-- status: persisted (awaiting payment until pay_by, or final when pay_by is
-- null), then paid, cancelled or expired, each decided here once
-- (UPDATE ... WHERE status = 'persisted'). returned_at: when the units of a
-- cancelled or expired order were given back to Redis (or found to belong
-- to a round that is over); null while the return is owed, which the
-- worker's expiry sweep finishes after a crash.
ALTER TABLE orders
    ADD COLUMN status text NOT NULL DEFAULT 'persisted'
        CHECK (status IN ('persisted', 'paid', 'cancelled', 'expired')),
    ADD COLUMN pay_by timestamptz,
    ADD COLUMN paid_at timestamptz,
    ADD COLUMN ended_at timestamptz,
    ADD COLUMN returned_at timestamptz,
    ADD CONSTRAINT orders_ended CHECK ((status IN ('cancelled', 'expired')) = (ended_at IS NOT NULL)),
    DROP CONSTRAINT orders_units_once;

-- A buyer's units are numbered once: among the orders that still hold units
-- no two of a buyer's round start at the same unit. A cancelled or expired
-- order holds none, and the buyer's next orders number theirs after it
-- (lua/reserve_batch.lua counts the units given back).
CREATE UNIQUE INDEX orders_units_once ON orders (item_id, round, user_id, first_unit)
    WHERE status IN ('persisted', 'paid');

-- An item's round, whatever its orders' states: the item view, reconcile and
-- the cascade from items (the index above covers only orders holding units).
CREATE INDEX orders_of_round ON orders (item_id, round) INCLUDE (status, quantity, returned_at);

-- The expiry sweep's two questions, and a buyer's orders newest first.
CREATE INDEX orders_awaiting_payment ON orders (pay_by)
    WHERE status = 'persisted' AND pay_by IS NOT NULL;
CREATE INDEX orders_returns_owed ON orders (ended_at)
    WHERE status IN ('cancelled', 'expired') AND returned_at IS NULL;
CREATE INDEX orders_of_buyer ON orders (user_id, id DESC);
