/* purchase.h: the production purchase path (strategy lua_reserve). */
#ifndef SECKILL_PURCHASE_H
#define SECKILL_PURCHASE_H

#include <stdint.h>

#include "app.h"
#include "http_server.h"

/* Buys quantity units of item for user (0: anonymous, a new buyer) and
 * answers ex: 202 queued; 409 not_started, ended, sold_out, limit_reached,
 * insufficient_stock; 429 rate_limited; 404; 503. What memory surely knows
 * (sold out, outside the window) is answered at once; otherwise the exchange
 * is deferred and answered by its own HTTP loop once Redis replies.
 * admission: the admission token of a room item's buyer (NULL or "": none),
 * checked here (403 admission_* when wrong; a room item without one is
 * refused by Redis, lua/reserve_batch.lua); a purchase made with it ends the
 * buyer's active admission. */
void purchase_start(app *a, http_exchange *ex, int64_t item, int64_t user, int quantity,
                    const char *admission);

#endif
