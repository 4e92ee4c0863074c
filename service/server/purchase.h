/* purchase.h: the production purchase path (strategy lua_reserve). */
#ifndef SECKILL_PURCHASE_H
#define SECKILL_PURCHASE_H

#include <stdint.h>

#include "app.h"
#include "http_server.h"

/* Buys one unit of item for user (0: anonymous, a new buyer) and answers ex:
 * 202 queued, 409 sold_out / already_purchased, 429 in_progress, 404, 503.
 * Sold-out items are answered from memory; otherwise the exchange is
 * deferred and answered from a Redis loop. */
void purchase_start(app *a, http_exchange *ex, int64_t item, int64_t user);

#endif
