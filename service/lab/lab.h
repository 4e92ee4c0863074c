/* lab.h: the oversell laboratory as a part plugged into the server: its
 * HTTP side and its state across rounds (lab_strategy.h has what the
 * strategies share and where each keeps its stock and sales, lab_table.h
 * the table of them). One plumbing for
 * every strategy: parse, hand over to the lab's own pool (the strategies
 * block: sleeps, transactions, spins), run, record the sale, answer.
 * It runs only with lab = on (server_main.c); it acts only on items created
 * with "lab": true (lab_items.h), and only through connections of its own:
 * each of its cfg->lab_threads threads opens its Redis and PostgreSQL
 * connections when it first needs them, never the product's.
 *
 *   GET|POST /api/v1/experiments/{strategy}/purchase?item=&user_id=&delay_ms=
 *     200 {"status":"sold","remaining":N}; 409 sold_out; 429 busy;
 *     409 fenced (redis_lock_fenced: the holder's lock expired mid-work and
 *     a newer holder's token was seen, so its write was refused);
 *     404 not_found (strategy or item); 409 not_lab_item (a product item);
 *     400 invalid_request (delay_ms above LAB_DELAY_MAX_MS among them); 503
 *   GET /api/v1/experiments
 *     200 {"strategies":[{"name","family","verdict"}, ...]}
 *   GET /api/v1/experiments/{strategy}/audit?item=
 *     200 {"strategy","family","verdict","item","initial_stock","remaining",
 *          "sold","oversold","pg_sales","lock_keys"}; 409 not_lab_item
 *   GET /lab/results.json: `make experiments`' last results */
#ifndef SECKILL_LAB_H
#define SECKILL_LAB_H

#include <stddef.h>

#include "app.h"

/* Makes the laboratory (its pool of cfg->lab_threads blocking threads, each
 * with its own lab_ctx, its in-process counters, its ZooKeeper session) and
 * plugs it into a (app_plug): it answers its routes (lab_routes.h) and clears
 * its state of an item at every new round. Returns 0, or -1 with err set.
 * app_free() frees it. */
int lab_plug(app *a, char *err, size_t errlen);

#endif
