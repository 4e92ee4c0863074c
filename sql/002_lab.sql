-- 002_lab.sql: the oversell laboratory's tables (service/src/lab_strategy.h).
-- No foreign key to items: the unsafe strategies must be able to record
-- whatever they sell, and a truncation of items must not need CASCADE; an
-- item's rows are deleted when the item is created or reset.

-- One row per unit sold by a PostgreSQL strategy (db_*, pg_lock_table),
-- written in the statement that takes the unit: the audit's orders.
CREATE TABLE lab_sales (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id  bigint NOT NULL,
    strategy text   NOT NULL,
    sold_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lab_sales_item ON lab_sales (item_id, strategy);

-- The lock of pg_lock_table: a row is the lock (insert to take it, delete
-- to free it); the primary key lets only one holder in.
CREATE TABLE lab_locks (
    item_id  bigint NOT NULL,
    strategy text   NOT NULL,
    owner    text   NOT NULL,
    taken_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, strategy)
);
