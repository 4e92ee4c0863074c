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
CREATE FUNCTION order_events_append() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
    kind  text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        kinds := kinds || 'order.persisted'::text;
    ELSE
        IF NEW.status IS DISTINCT FROM OLD.status AND NEW.status <> 'persisted' THEN
            kinds := kinds || ('order.' || NEW.status);
        END IF;
        IF OLD.returned_at IS NULL AND NEW.returned_at IS NOT NULL THEN
            kinds := kinds || 'order.returned'::text;
        END IF;
    END IF;
    IF cardinality(kinds) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(111546413966700);
    FOREACH kind IN ARRAY kinds LOOP
        INSERT INTO order_events (id, type, order_id, item_id, order_row)
        VALUES (nextval('order_events_ids'), kind, NEW.id, NEW.item_id, to_jsonb(NEW));
    END LOOP;
    -- One wake-up per transaction: identical notifications fold into one.
    PERFORM pg_notify('order_events', '');
    RETURN NULL;
END $$;

CREATE TRIGGER order_events_on_insert AFTER INSERT ON orders
    FOR EACH ROW EXECUTE FUNCTION order_events_append();
CREATE TRIGGER order_events_on_change AFTER UPDATE OF status, returned_at ON orders
    FOR EACH ROW EXECUTE FUNCTION order_events_append();
