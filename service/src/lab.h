/* lab.h: the HTTP side of the oversell laboratory (lab_strategy.h has the
 * strategies and where each keeps its stock and sales). One plumbing for
 * every strategy: parse, hand over to the lab's own pool (the strategies
 * block: sleeps, transactions, spins), run, record the sale, answer.
 *
 *   GET|POST /api/v1/experiments/{strategy}/purchase?item=&user_id=&delay_ms=
 *     200 {"status":"sold","remaining":N}; 409 sold_out; 429 busy;
 *     409 fenced (redis_lock_fenced: the holder's lock expired mid-work and
 *     a newer holder's token was seen, so its write was refused);
 *     404 not_found (strategy or item); 400 invalid_request; 503
 *   GET /api/v1/experiments
 *     200 {"strategies":[{"name","family","verdict"}, ...]}
 *   GET /api/v1/experiments/{strategy}/audit?item=
 *     200 {"strategy","family","verdict","item","initial_stock","remaining",
 *          "sold","oversold","pg_sales","lock_keys"} */
#ifndef SECKILL_LAB_H
#define SECKILL_LAB_H

#include "app.h"
#include "http_server.h"
#include "router.h"

/* The lab's pool: cfg->lab_threads threads, each with its own lab_ctx
 * (connections made on first use). NULL on failure; pool_free() stops it. */
pool *lab_pool_create(app *a);

/* Answers a ROUTE_LAB_* request m on exchange ex (at once, or deferred to
 * the lab pool). */
void lab_handle(app *a, http_exchange *ex, const route_match *m);

#endif
