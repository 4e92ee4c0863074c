-- 016_draw_stock.sql: the units on offer when an item's draw ran (issue 28),
-- kept with the draw's time and beacon: the audit publishes it, so that
-- anyone can recompute every outcome by the serving rule (scripts/draw-verify)
-- whatever restocks and returns came after.
ALTER TABLE items
    ADD COLUMN draw_stock bigint CHECK (draw_stock >= 0),
    ADD CONSTRAINT items_draw_stock CHECK ((drawn_at IS NULL) = (draw_stock IS NULL));
