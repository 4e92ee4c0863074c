/* feed.h: the shop's reads of what was sold: an item's orders, paged by
 * order id, for fulfilment and reconciliation, and the pull feed of the
 * orders' events (outbox.h). Both need a credential of scope orders:read
 * (router_scope) and read PostgreSQL on the pool. */
#ifndef SECKILL_FEED_H
#define SECKILL_FEED_H

#include <stdint.h>

#include "app.h"
#include "http_server.h"
#include "order_life.h"
#include "router.h"
#include "status.h"

/* Orders one page of an item's list holds at most, and by default. */
#define FEED_ORDERS_MAX 1000
#define FEED_ORDERS_DEFAULT 100

/* What a request asks: ?after= (0: from the start), ?limit=, and for an
 * item's orders ?round= (0: every round) and ?status= (has_status 0: any). */
typedef struct feed_query {
    int64_t after;
    int limit;
    int64_t round;
    int has_status;
    order_state status;
} feed_query;

/* Parses the query parameters (NULL: absent) of route (ROUTE_ITEM_ORDERS or
 * ROUTE_EVENTS) into *q. SK_OK, or SK_INVALID with *why naming the
 * parameter. Pure. */
sk_status feed_parse(route_id route, const char *after, const char *limit, const char *round,
                     const char *status, feed_query *q, const char **why);

/* Answers GET /api/v1/items/{id}/orders or GET /api/v1/events: 400 on a bad
 * query, else the page read on the pool. */
void feed_start(app *a, http_exchange *ex, const route_match *m);

#endif
