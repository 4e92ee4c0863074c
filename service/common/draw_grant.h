/* draw_grant.h: a draw order's units taken in Redis, exactly once (issue 28).
 *
 * A draw order (a winner's, or a waitlisted entrant's served later) is
 * committed in PostgreSQL first, with its draw_position set and granted_at
 * null: the draw decided it, Redis has not yet taken its units. Its grant
 * then takes them in Redis by lua/draw_grant.lua, which marks the order id
 * in the item's granted hash (keys_item_granted) and takes the units only
 * when the mark is new, and then sets granted_at. A crash between the steps
 * leaves a grant owed (the orders_grants_owed index) that running the same
 * steps again finishes (draw_grant_owed: the draw itself after its commit,
 * and the worker's draw chore): a grant run twice, or by two nodes, takes
 * the units once. A draw item has one segment: its orders' units and buyers
 * are on the item's own keys. */
#ifndef SECKILL_DRAW_GRANT_H
#define SECKILL_DRAW_GRANT_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "order_return.h"
#include "redis_nodes.h"
#include "scripts.h"

/* Orders one script call grants at most. */
#define DRAW_GRANT_BATCH 128

/* Takes the units of the n draw orders o[0..n) in Redis through rn, the
 * orders of one item in one call on the item's node (consecutive orders of
 * an item share calls: sort them by item for fewer calls). done[i] is set
 * to 1 for each order Redis confirmed (taken now or before, returned before
 * its grant, or of a round that is over); a failed call, or an item without
 * state in Redis, leaves its orders owed and the next item is tried.
 * Returns 0 when Redis confirmed all, -1 otherwise (logged). */
int draw_grant_redis(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                     unsigned char *done, const char *component);

/* The grant's two steps (order_refs_steps): draw_grant_redis, then
 * granted_at set of the orders Redis confirmed (done[i] set; those already
 * set are left as they are). */
int draw_grant_units(redis_nodes *rn, PGconn *pg, const scripts *sc, const order_ref *o, size_t n,
                     unsigned char *done, const char *component);

/* Finishes every grant owed of item (item <= 0: of every item): reads the
 * draw orders whose granted_at is null, a batch at a time, and runs
 * draw_grant_units on them. Returns the orders granted and noted, or -1
 * when some stay owed (logged; the next run finishes them). */
int64_t draw_grant_owed(redis_nodes *rn, PGconn *pg, const scripts *sc, int64_t item,
                        const char *component);

#endif
