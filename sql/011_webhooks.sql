-- 011_webhooks.sql: what seckill-webhooks owes each endpoint (issue 26). An
-- endpoint takes the events after its cursor into its deliveries (a fan-out
-- of one statement: cursor and rows move together), a delivery is deleted
-- once the endpoint answered 2xx, and stays with its attempts and next try
-- until then, or until it goes to the endpoint's dead-letter (dead_at).

-- An endpoint is its URL (the config's webhook_endpoints; the secret stays
-- in the config). after_event: the last event taken into its deliveries; a
-- new endpoint starts at the end of the feed (the feed has the history).
CREATE TABLE webhook_endpoints (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url         text   NOT NULL UNIQUE,
    after_event bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    endpoint_id bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id    bigint NOT NULL REFERENCES order_events (id) ON DELETE CASCADE,
    order_id    bigint NOT NULL,
    attempts    integer NOT NULL DEFAULT 0,
    next_at     timestamptz NOT NULL DEFAULT now(),
    last_error  text,
    dead_at     timestamptz,
    PRIMARY KEY (endpoint_id, event_id)
);

-- In order per order: a delivery goes only when no earlier one of its order
-- waits for the same endpoint.
CREATE INDEX webhook_deliveries_of_order ON webhook_deliveries (endpoint_id, order_id, event_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE dead_at IS NULL;
CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (endpoint_id, event_id)
    WHERE dead_at IS NOT NULL;
