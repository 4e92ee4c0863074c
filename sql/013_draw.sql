-- 013_draw.sql: the draw (issue 28). An item's admission may be "draw":
-- buyers enter once during [entries_open_at, entries_close_at), and after
-- the close an admin's draw orders the entrants by a ticket under the
-- round's secret K (committed when the round was made, as the room's) and a
-- public beacon, serves them while stock lasts, and waitlists the rest for
-- the units that come back.
--
-- PostgreSQL holds the entries and decides the draw; Redis holds the item's
-- units as for every item. A winner's order is written here first and its
-- units are taken in Redis afterwards (its grant, marked by order id in
-- Redis, so a grant run twice takes once): granted_at says the grant is
-- done. A cancelled or expired draw order that was never granted gives
-- nothing back (lua/order_return.lua knows it by the same mark).
ALTER TABLE items
    DROP CONSTRAINT items_admission_check,
    ADD CONSTRAINT items_admission_check CHECK (admission IN ('race', 'room', 'draw')),
    ADD COLUMN entries_open_at timestamptz,
    ADD COLUMN entries_close_at timestamptz,
    -- When the round's draw ran, and the beacon it mixed in ('' for none).
    ADD COLUMN drawn_at timestamptz,
    ADD COLUMN draw_beacon text CHECK (octet_length(draw_beacon) <= 256),
    -- A draw item's K is room_secret (the round's secret, whatever its use).
    ADD CONSTRAINT items_draw CHECK (admission <> 'draw' OR (entries_open_at IS NOT NULL
        AND entries_close_at IS NOT NULL AND entries_open_at < entries_close_at
        AND room_secret IS NOT NULL AND segments = 1)),
    ADD CONSTRAINT items_drawn CHECK ((drawn_at IS NULL) = (draw_beacon IS NULL));

-- One entry per buyer per round. position, ticket and outcome are the
-- draw's, null before it; order_id is the entry's order once it has one.
CREATE TABLE draw_entries (
    item_id    bigint  NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    round      bigint  NOT NULL,
    user_id    bigint  NOT NULL,
    -- E: hex SHA-256("seckill-entrant|<item>|<round>|<user_id>")
    entrant    text    NOT NULL CHECK (entrant ~ '^[0-9a-f]{64}$'),
    quantity   integer NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
    entered_at timestamptz NOT NULL DEFAULT now(),
    -- 1-based, in ticket order (smallest ticket first, ties by entrant)
    position   bigint  CHECK (position >= 1),
    -- hex HMAC-SHA256(K, "seckill-draw-v1|<beacon>|<E>")
    ticket     text    CHECK (ticket ~ '^[0-9a-f]{64}$'),
    outcome    text    CHECK (outcome IN ('won', 'waitlisted', 'skipped', 'won_from_waitlist')),
    order_id   bigint,
    PRIMARY KEY (item_id, round, user_id),
    CONSTRAINT draw_entries_drawn CHECK ((position IS NULL) = (outcome IS NULL)
        AND (position IS NULL) = (ticket IS NULL)),
    CONSTRAINT draw_entries_served CHECK ((order_id IS NOT NULL)
        = (outcome IN ('won', 'won_from_waitlist')))
);

CREATE UNIQUE INDEX draw_entries_in_order ON draw_entries (item_id, round, position);
-- The waitlist: the entrants not served, in ticket order.
CREATE INDEX draw_entries_waiting ON draw_entries (item_id, round, position)
    WHERE outcome IN ('waitlisted', 'skipped');

-- A draw's order: the entrant's position, and when Redis took its units
-- (both null for a purchase, whose units Redis took before it existed).
ALTER TABLE orders
    ADD COLUMN draw_position bigint CHECK (draw_position >= 1),
    ADD COLUMN granted_at timestamptz,
    ADD CONSTRAINT orders_granted CHECK (draw_position IS NOT NULL OR granted_at IS NULL);
CREATE INDEX orders_grants_owed ON orders (item_id)
    WHERE draw_position IS NOT NULL AND granted_at IS NULL;

-- A draw's order announces itself as won, a purchase's as persisted.
ALTER TABLE order_events DROP CONSTRAINT order_events_type_check,
    ADD CONSTRAINT order_events_type_check CHECK (type IN ('order.persisted', 'order.won',
        'order.paid', 'order.cancelled', 'order.expired', 'order.returned'));

CREATE OR REPLACE FUNCTION order_events_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(111546413966700);
    INSERT INTO order_events (id, type, order_id, item_id, order_row)
    SELECT nextval('order_events_ids'),
           CASE WHEN x.draw_position IS NULL THEN 'order.persisted' ELSE 'order.won' END,
           x.id, x.item_id, x.order_row
    FROM (SELECT n.id, n.item_id, n.draw_position, to_jsonb(n) AS order_row
          FROM new_rows n ORDER BY n.id) x;
    PERFORM pg_notify('order_events', '');
    RETURN NULL;
END $$;
