-- 008_round_over.sql: a return that found its round over. A cancelled or
-- expired order of a round that a reset has ended gives no unit back (the
-- reset set the stock anew); its return is still settled (returned_at), and
-- round_over says that nothing came back, so that the API can say so.
ALTER TABLE orders ADD COLUMN round_over boolean NOT NULL DEFAULT false;
