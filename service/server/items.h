/* items.h: an item's rounds in PostgreSQL and Redis: create, reset,
 * restock, and its view (units of the current round, the window's state by
 * Redis's clock), over a pool thread's session (pool_session.h). */
#ifndef SECKILL_ITEMS_H
#define SECKILL_ITEMS_H

#include <stddef.h>
#include <stdint.h>

#include "json_io.h"
#include "status.h"
#include "pool_session.h"

/* Creates the item in PostgreSQL, then its round in Redis (undoing the row
 * if Redis fails) and announces the round. SK_CREATED with *out filled,
 * SK_ITEM_EXISTS, or SK_BACKEND_DOWN. */
sk_status items_create(pool_session *s, const item_spec *spec, item_view *out);

/* A new round: stock to r->stock, the terms r names changed (the others
 * kept), no restocks, no buyers, and the round announced to every server
 * (pub/sub: their sold-out flags of the item reset). The orders of earlier
 * rounds stay, under their round. SK_OK, SK_NOT_FOUND, SK_ARCHIVED, SK_INVALID with *why
 * (the window with a kept bound would end before it starts), or
 * SK_BACKEND_DOWN (safe to call again). */
sk_status items_reset(pool_session *s, int64_t item, const item_reset *r, item_view *out,
                      const char **why);

/* Adds add units to the item's running round: PostgreSQL's restocked total
 * and Redis's stock move together (the items row stays locked while Redis
 * applies it; lua/restock.lua applies a restock once), and the restock is
 * announced (every server's sold-out flag of the item stops counting).
 * SK_OK, SK_NOT_FOUND, SK_ARCHIVED, SK_INVALID with *why (past 10^12 units,
 * or too many restocks in one round), or SK_BACKEND_DOWN (nothing changed). */
sk_status items_restock(pool_session *s, int64_t item, int64_t add, item_view *out,
                        const char **why);

/* The stock detail of an item. SK_OK, SK_NOT_FOUND, SK_BACKEND_DOWN. */
sk_status items_get(pool_session *s, int64_t item, item_view *out);

/* The newest items (highest ids first), at most cap, into out[]; *n gets
 * how many. The laboratory's items only when with_lab, the unlisted ones
 * only when with_unlisted, the archived ones only when with_archived (the
 * operator's console). SK_OK or SK_BACKEND_DOWN. */
#define ITEMS_LIST_MAX 100
sk_status items_list(pool_session *s, int with_lab, int with_unlisted, int with_archived,
                     item_view *out, size_t cap, size_t *n);

#endif
