/* store.h: the blocking operations behind the admin and read routes, over
 * one synchronous Redis connection and one PostgreSQL connection (a pool
 * thread's own). Connections are made lazily and remade after an error. */
#ifndef SECKILL_STORE_H
#define SECKILL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "json_io.h"
#include "metrics.h"
#include "order.h"
#include "scripts.h"
#include "status.h"

typedef struct store store;

/* Connects nothing yet. cfg, sc and m (where backend errors are counted;
 * may be NULL) must outlive the store. NULL on OOM. */
store *store_create(const config *cfg, const scripts *sc, metrics *m);
void store_free(store *s);

/* SK_OK when Redis and PostgreSQL both answer, else SK_BACKEND_DOWN. */
sk_status store_ready(store *s);

/* Creates the item in PostgreSQL, then its round in Redis (undoing the row
 * if Redis fails) and announces the round. SK_CREATED with *out filled,
 * SK_ITEM_EXISTS, or SK_BACKEND_DOWN. */
sk_status store_item_create(store *s, const item_spec *spec, item_view *out);

/* A new round: stock to r->stock, the terms r names changed (the others
 * kept), no restocks, no buyers, and the round announced to every server
 * (pub/sub: their sold-out flags of the item reset). The orders of earlier
 * rounds stay, under their round. SK_OK, SK_NOT_FOUND, SK_INVALID with *why
 * (the window with a kept bound would end before it starts), or
 * SK_BACKEND_DOWN (safe to call again). */
sk_status store_item_reset(store *s, int64_t item, const item_reset *r, item_view *out,
                           const char **why);

/* Adds add units to the item's running round: PostgreSQL's restocked total
 * and Redis's stock move together (the items row stays locked while Redis
 * applies it; lua/restock.lua applies a restock once), and the restock is
 * announced (every server's sold-out flag of the item stops counting).
 * SK_OK, SK_NOT_FOUND, SK_INVALID with *why (past 10^12 units, or too many
 * restocks in one round), or SK_BACKEND_DOWN (nothing changed). */
sk_status store_item_restock(store *s, int64_t item, int64_t add, item_view *out, const char **why);

/* The stock detail of an item. SK_OK, SK_NOT_FOUND, SK_BACKEND_DOWN. */
sk_status store_item_get(store *s, int64_t item, item_view *out);

/* The newest items (highest ids first), at most cap, into out[]; *n gets
 * how many. The laboratory's items only when with_lab. SK_OK or
 * SK_BACKEND_DOWN. */
#define STORE_ITEM_LIST_MAX 100
sk_status store_item_list(store *s, int with_lab, item_view *out, size_t cap, size_t *n);

/* An order and where it is: *status is "queued" (accepted, on its way) or
 * "persisted". SK_OK, SK_NOT_FOUND, SK_BACKEND_DOWN. */
sk_status store_order_get(store *s, int64_t order_id, order *o, const char **status);

/* The gauges of /metrics that live in Redis: queue, processing lists,
 * pending and dead letters (-1 each when Redis does not answer). */
void store_gauges(store *s, metrics_gauges *g);

#endif
