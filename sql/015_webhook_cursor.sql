-- 015_webhook_cursor.sql: seckill-webhooks delivers from a cursor per
-- endpoint (issue 26). No table changes: the column and the table of 011
-- take new meanings, said here where an operator reading the schema looks.
-- The deliverer reads the events after an endpoint's cursor in pages (as
-- the pull feed reads them), posts them, and moves the cursor once for many
-- deliveries; a delivery that went well is written nowhere else. Rows that
-- 011's fan-out left behind are delivered as before and hold their orders'
-- later events behind them.

COMMENT ON COLUMN webhook_endpoints.after_event IS
    'The endpoint''s cursor: every event up to it was answered 2xx or is a row of webhook_deliveries';

COMMENT ON TABLE webhook_deliveries IS
    'Deliveries that failed, and the events of their orders behind them (in order per order): '
    'retried on the back-off, then the dead-letter (dead_at), which the admin lists and replays';
