-- 016_draw_stock.sql: the units on offer when an item's draw ran (issue 28),
-- written with the draw's time and beacon (draw_run.c sets the three in one
-- statement): the audit publishes it, so that anyone can recompute every
-- outcome by the serving rule (scripts/draw-verify) whatever restocks and
-- returns came after.
ALTER TABLE items ADD COLUMN draw_stock bigint CHECK (draw_stock >= 0);
