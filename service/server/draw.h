/* draw.h: the draw's routes (issue 28): a buyer's entry (enter, read), the
 * admin's draw, and its public audit. All of them PostgreSQL's work
 * (draw_store.h), answered from the pool, never on the loop thread. */
#ifndef SECKILL_DRAW_H
#define SECKILL_DRAW_H

#include <stdint.h>

#include "app.h"
#include "http_server.h"
#include "router.h"

/* Answers ex, a request of route ROUTE_ENTRY_ADD or ROUTE_ENTRY_GET (user:
 * the buyer, as identified for a purchase; quantity: the units asked for),
 * ROUTE_DRAW or ROUTE_DRAW_AUDIT (user 0) of item: its body or query read
 * here, the rest deferred to the pool. */
void draw_start(app *a, http_exchange *ex, route_id route, int64_t item, int64_t user,
                int quantity);

#endif
