/* archive.h: an item taken off sale for good (DELETE /api/v1/items/{id}):
 * off the lists and the sale page, its purchases answered 404 on every
 * instance, no reset or restock; its orders stay, readable, and those still
 * queued drain to PostgreSQL as any other. */
#ifndef SECKILL_ARCHIVE_H
#define SECKILL_ARCHIVE_H

#include <stdint.h>

#include "status.h"
#include "pool_session.h"

/* Archives item: PostgreSQL first (archived_at, kept from the first
 * archive), then every segment's state in Redis (`archived`, which the
 * reserve script refuses and lua/item_reset.lua keeps), then an announcement
 * (events.h) so that every server answers 404 from memory. Idempotent: a
 * second call does it all again (the repair of a call that failed half way)
 * and answers the same. SK_OK, SK_NOT_FOUND, or SK_BACKEND_DOWN with *why
 * (call again). */
sk_status archive_item(pool_session *s, int64_t item, const char **why);

/* Why a change of the item's live (not archived) row found none:
 * SK_ARCHIVED, SK_NOT_FOUND, or SK_BACKEND_DOWN. */
sk_status archive_why_missing(pool_session *s, int64_t item);

#endif
