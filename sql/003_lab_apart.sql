-- 003_lab_apart.sql: the laboratory's columns leave items for a table of the
-- laboratory's own, and items made by the laboratory are marked as such.

-- The stock and version of the laboratory's PostgreSQL strategies (db_*,
-- pg_lock_table, pg_advisory), one row per item, set from the item's initial
-- stock at every new round. No CHECK on stock, so that the unsafe strategies
-- can show their oversell; no foreign key, as for lab_sales (002_lab.sql).
CREATE TABLE lab_stock (
    item_id bigint PRIMARY KEY,
    stock   bigint NOT NULL,
    version bigint NOT NULL DEFAULT 0
);
INSERT INTO lab_stock (item_id, stock, version) SELECT id, stock, version FROM items;
ALTER TABLE items DROP COLUMN stock, DROP COLUMN version;

-- An experiment's item, not a product: off the sale page and out of
-- GET /api/v1/items unless asked for (?lab=1).
ALTER TABLE items ADD COLUMN lab boolean NOT NULL DEFAULT false;
