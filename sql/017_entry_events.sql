-- 017_entry_events.sql: the draw's entry.waitlisted event (issues 26 and 28).
-- A draw that puts an entrant on the waitlist (outcome waitlisted or
-- skipped) appends one entry.waitlisted event per such entrant, in ticket
-- order, in the draw's own transaction, beside its winners' order.won: the
-- outbox of 010 carries entries as well as orders.
--
-- An entry has no order, yet the webhooks deliver in order per order id
-- (webhook_deliveries.order_id, the deliverer's window), and a waitlisted
-- entrant served later gets an order whose order.won must not overtake its
-- entry.waitlisted at a failing endpoint. So the draw reserves, for each
-- entrant it waitlists, the id of the order the waitlist will give it
-- (made by the same generator as the winners' ids, never used twice), keeps
-- it in draw_entries.waitlist_order_id, and keys the entry's event by it
-- (order_events.order_id): the entry's event and every event of its later
-- order share one key, so the deliverer's per-order rule (a later event
-- waits behind an earlier one that failed, both go to the dead-letter
-- together) holds across them, with no change to the deliverer, the
-- deliveries table or the feed's paging. The reserved id is not an order:
-- the API's entry shows order_id null until the order exists; an entrant
-- never served leaves its reserved id unused.
--
-- The two checks are added NOT VALID: checked for every row written from
-- now on, without a scan of the tables' existing rows under the ACCESS
-- EXCLUSIVE lock of the ALTER (order_events is as long as the shop's
-- history, and the feed and the deliverer read it), which every row meets
-- by construction (the column is new, so null; the list of types only
-- grows). They are not validated here: a migration is one transaction, so
-- a VALIDATE CONSTRAINT here would scan under that same lock; an operator
-- may run it later, in a transaction of its own, under a lock that lets
-- reads and writes go on (docs/WEBHOOKS.md, "Upgrading to entry events").
ALTER TABLE draw_entries
    ADD COLUMN waitlist_order_id bigint,
    ADD CONSTRAINT draw_entries_reserved CHECK (waitlist_order_id IS NULL
        OR outcome IN ('waitlisted', 'skipped', 'won_from_waitlist')) NOT VALID;

ALTER TABLE order_events DROP CONSTRAINT order_events_type_check,
    ADD CONSTRAINT order_events_type_check CHECK (type IN ('order.persisted', 'order.won',
        'order.paid', 'order.cancelled', 'order.expired', 'order.returned',
        'entry.waitlisted')) NOT VALID;

COMMENT ON COLUMN order_events.order_id IS
    'The order the event is of; for an entry.* event, the id reserved for the entrant''s order '
    '(draw_entries.waitlist_order_id): the key of the webhooks'' order per order';
COMMENT ON COLUMN order_events.order_row IS
    'to_jsonb of the orders row as of the change; for an entry.* event, the draw_entries row''s '
    'columns the feed shows (not its ticket), as of the change';

-- The entry.waitlisted events of a draw of item's round, in two steps, so
-- that the outbox's lock (010: ids in commit order, which every order event
-- of the system waits for) is held for an INSERT of ready rows and not for
-- the reading of the entries and the making of their payloads, which grow
-- with the entrants (a 10,000-entrant draw waitlists 9,000).
--
-- entry_events_stage, before the lock (the draw calls it before its
-- orders' insert, whose trigger takes the lock when it has winners): its
-- waitlisted and skipped entrants, each entry as of now (what the feed
-- shows of it, not its ticket), into a temporary table dropped at the
-- commit. Returns their count.
CREATE FUNCTION entry_events_stage(item bigint, draw_round bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    staged bigint;
BEGIN
    CREATE TEMPORARY TABLE entry_events_staged ON COMMIT DROP AS
    SELECT d.position, d.waitlist_order_id AS order_id, d.item_id,
           jsonb_build_object('item_id', d.item_id, 'round', d.round, 'user_id', d.user_id,
                              'entrant', d.entrant, 'quantity', d.quantity,
                              'entered_at', d.entered_at, 'position', d.position,
                              'outcome', d.outcome) AS entry
    FROM draw_entries d
    WHERE d.item_id = item AND d.round = draw_round AND d.outcome IN ('waitlisted', 'skipped');
    GET DIAGNOSTICS staged = ROW_COUNT;
    RETURN staged;
END $$;

-- entry_events_waitlisted, the draw's last statement: the staged rows'
-- events, one INSERT for them all, under the outbox's lock, held from
-- here (or from the orders' insert) to the commit.
--
-- Their ids go in position (ticket) order without a sort: under the lock
-- no other transaction draws an id, so the function takes one id, moves
-- the sequence past every position staged, and gives the entrant at
-- position p the id first + p - 1. The winners' positions leave gaps,
-- which the feed allows (a rollback leaves one too): a consumer keeps the
-- last id it handled, never counts them.
CREATE FUNCTION entry_events_waitlisted() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    first bigint;
    last_position bigint;
    written bigint;
BEGIN
    SELECT max(s.position) INTO last_position FROM entry_events_staged s;
    IF last_position IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(111546413966700);
    first := nextval('order_events_ids');
    PERFORM setval('order_events_ids', first + last_position - 1);
    INSERT INTO order_events (id, type, order_id, item_id, order_row)
    SELECT first + s.position - 1, 'entry.waitlisted', s.order_id, s.item_id, s.entry
    FROM entry_events_staged s;
    GET DIAGNOSTICS written = ROW_COUNT;
    PERFORM pg_notify('order_events', '');
    RETURN written;
END $$;
