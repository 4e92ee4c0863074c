/* feed.h: the shop's reads of what was sold: an item's orders, paged by
 * order id, for fulfilment and reconciliation, and the pull feed of the
 * orders' events (outbox.h), both for a credential of scope orders:read;
 * and the admin's view of the webhooks' dead-letter and its replay
 * (webhook_dead.h). All run on the pool (router_scope says who may). */
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

/* What a request asks: ?after= (0: from the start), ?limit=, for an
 * item's orders ?round= (0: every round) and ?status= (has_status 0: any),
 * for the dead-letter ?endpoint_id= (0: every endpoint). */
typedef struct feed_query {
    int64_t after;
    int64_t endpoint_id;
    int limit;
    int64_t round;
    int has_status;
    order_state status;
} feed_query;

/* The query parameters of a request, NULL when absent. */
typedef struct feed_params {
    const char *after, *limit, *round, *status, *endpoint_id;
} feed_params;

/* Parses the parameters route (one of feed_start's) takes into *q; it
 * ignores the others. SK_OK, or SK_INVALID with *why naming the parameter.
 * Pure. */
sk_status feed_parse(route_id route, const feed_params *p, feed_query *q, const char **why);

/* Answers GET /api/v1/items/{id}/orders, GET /api/v1/events, GET
 * /api/v1/webhooks/dead and POST /api/v1/webhooks/dead/replay: 400 on a
 * bad query, else the answer made on the pool. */
void feed_start(app *a, http_exchange *ex, const route_match *m);

#endif
