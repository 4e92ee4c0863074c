/* orders.h: an order after its acceptance, over a pool thread's session (pool_session.h): where
 * it is, a buyer's orders, and the payment and the cancellation that settle
 * it (order_life.h says which move each makes; the expiry is the worker's). */
#ifndef SECKILL_ORDERS_H
#define SECKILL_ORDERS_H

#include <stddef.h>
#include <stdint.h>

#include "order_life.h"
#include "status.h"
#include "pool_session.h"

/* Orders one page of a buyer's list holds at most, and by default. */
#define ORDERS_PAGE_MAX 100
#define ORDERS_PAGE_DEFAULT 20

/* An order wherever it is: queued (in Redis's pending orders, not yet in
 * PostgreSQL) or in PostgreSQL with its state. SK_OK, SK_NOT_FOUND,
 * SK_BACKEND_DOWN. */
sk_status orders_get(pool_session *s, int64_t order_id, order_record *out);

/* The buyer's persisted orders, newest first, with ids below before (0:
 * from the newest), at most limit (1..ORDERS_PAGE_MAX), into out; *n gets
 * how many. Orders still queued are not listed: they reach PostgreSQL within
 * the worker's batch time. SK_OK or SK_BACKEND_DOWN. */
sk_status orders_list(pool_session *s, int64_t user, int64_t before, int limit, order_record *out,
                      size_t *n);

/* Pays or cancels the order for buyer (0: for the shop, an admin call; else
 * the order must be that buyer's, or it is SK_NOT_FOUND: another's order is
 * not revealed). A queued order is persisted first (what the worker would
 * insert), so PostgreSQL decides every move: the row stays locked from its
 * read to its change, and of two actions racing, the second sees the
 * first's result. A cancelled order's units go back on sale before the
 * answer (if Redis fails, the worker's expiry sweep finishes the return).
 * Returns the move's status (SK_OK, or a refusal: SK_ORDER_PAID, ..._CANCELLED,
 * ..._EXPIRED, ..._FINAL) with *out the order as it stands afterwards, or
 * SK_NOT_FOUND, SK_BACKEND_DOWN (nothing changed). */
sk_status orders_settle(pool_session *s, int64_t order_id, order_action action, int64_t buyer,
                        order_record *out);

#endif
