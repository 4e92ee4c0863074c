-- 009_archive.sql: items apart from the sale (issue 25): an archived item is
-- off the lists and the sale page and sells nothing (its orders stay, and so
-- does its row: an order's item can still be read), and an item that is not
-- listed (a load test's) sells as any other but never shows on the page.

-- When the item was archived (DELETE /api/v1/items/{id}); null: it is not.
-- Forward only: nothing un-archives an item.
ALTER TABLE items ADD COLUMN archived_at timestamptz;

-- false: left out of GET /api/v1/items (and so off the sale page) unless
-- asked for with ?unlisted=1.
ALTER TABLE items ADD COLUMN listed boolean NOT NULL DEFAULT true;
