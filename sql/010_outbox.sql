-- 010_outbox.sql: the orders' events (issue 26), written by PostgreSQL itself
-- in the transaction that changes an order: an event exists if and only if
-- its change committed, and no code path (the worker's batch, a server's
-- persist-to-cancel, a payment, the expiry sweep, a return) can forget one.
-- The pull feed (GET /api/v1/events) and the webhooks read them in id order.

CREATE TABLE order_events (
    id         bigint PRIMARY KEY,
    type       text   NOT NULL CHECK (type IN ('order.persisted', 'order.paid', 'order.cancelled',
                                               'order.expired', 'order.returned')),
    order_id   bigint NOT NULL,
    item_id    bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The order's row as of the change (to_jsonb of orders): the feed renders
    -- it as GET /api/v1/orders/{id} would have then.
    order_row  jsonb  NOT NULL
);

CREATE SEQUENCE order_events_ids OWNED BY order_events.id;

-- An item's orders in id order (GET /api/v1/items/{id}/orders).
CREATE INDEX orders_of_item ON orders (item_id, id);

-- Ids in commit order. A reader that has seen event n must never later
-- find a smaller id committed: a consumer keeps only the last id it
-- handled. A sequence alone does not promise that (a transaction that took
-- id 10 may commit after the one that took 11), so the ids are drawn under
-- a transaction-scoped advisory lock held to the commit: the transactions
-- that change orders commit one after the other from their first event on.
-- Each of them writes its events last (one statement, then COMMIT), so the
-- lock is held for about a commit. A rolled-back transaction leaves a gap,
-- never a late id. The key is "outbox" in ASCII.
--
-- The triggers are statement-level, over the rows the statement changed (its
-- transition tables): the worker's insert of a batch of 500 orders appends
-- its 500 events in one INSERT, not in 500 calls of a row trigger. Within a
-- statement the events go in order id order, and an order's status event
-- before its return.
CREATE FUNCTION order_events_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(111546413966700);
    INSERT INTO order_events (id, type, order_id, item_id, order_row)
    SELECT nextval('order_events_ids'), 'order.persisted', x.id, x.item_id, x.order_row
    FROM (SELECT n.id, n.item_id, to_jsonb(n) AS order_row FROM new_rows n ORDER BY n.id) x;
    -- One wake-up per transaction: identical notifications fold into one.
    PERFORM pg_notify('order_events', '');
    RETURN NULL;
END $$;

-- An UPDATE's events: an order whose status changed (but to persisted), an
-- order whose units came back; an order's two events of one statement in
-- that order. Nothing to write (a pay_by moved): no lock taken.
CREATE FUNCTION order_events_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE (n.status IS DISTINCT FROM o.status AND n.status <> 'persisted')
       OR (o.returned_at IS NULL AND n.returned_at IS NOT NULL)
    LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(111546413966700);
    INSERT INTO order_events (id, type, order_id, item_id, order_row)
    SELECT nextval('order_events_ids'), x.type, x.id, x.item_id, x.order_row
    FROM (SELECT n.id, n.item_id, to_jsonb(n) AS order_row, e.type
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          CROSS JOIN LATERAL (VALUES
              (CASE WHEN n.status IS DISTINCT FROM o.status AND n.status <> 'persisted'
                    THEN 'order.' || n.status END, 1),
              (CASE WHEN o.returned_at IS NULL AND n.returned_at IS NOT NULL
                    THEN 'order.returned' END, 2)) AS e(type, rank)
          WHERE e.type IS NOT NULL
          ORDER BY n.id, e.rank) x;
    PERFORM pg_notify('order_events', '');
    RETURN NULL;
END $$;

CREATE TRIGGER order_events_on_insert AFTER INSERT ON orders
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION order_events_inserted();
-- Every UPDATE (a statement trigger with transition tables takes no column
-- list): one that changes no status and no return (a pay_by moved) finds
-- no event to write and takes no lock.
CREATE TRIGGER order_events_on_change AFTER UPDATE ON orders
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION order_events_changed();
