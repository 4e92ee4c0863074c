/* webhooks.h: seckill-webhooks' deliverer. It reads the orders' events
 * after each configured endpoint's cursor (webhook_store.h, webhook_window.h)
 * and posts them, signed (webhook_sign.h), with libcurl's multi interface:
 * many deliveries in flight on one thread, each endpoint's connections kept
 * alive, a slow endpoint costing a slot, not a thread. At least once: the
 * cursor passes an event only after a 2xx (or once it is a row to retry),
 * so a crash sends it again, with the same event id. In order per order: an
 * event leaves only when the earlier ones of its order are done and written
 * down at that endpoint. A failed delivery becomes a row: it retries on
 * the back-off webhook_retry_first_ms doubling to webhook_retry_max_ms, and
 * after webhook_max_attempts goes to the endpoint's dead-letter, which the
 * admin lists and replays (GET /api/v1/webhooks/dead, POST .../replay).
 *
 * One deliverer leads at a time (a PostgreSQL session lock); another one
 * started waits as a standby and takes over when the leader's session ends.
 * It never touches Redis nor the purchase path: a dead endpoint slows
 * nothing but its own deliveries. */
#ifndef SECKILL_WEBHOOKS_H
#define SECKILL_WEBHOOKS_H

#include <stddef.h>

#include "config.h"

typedef struct webhooks webhooks;

/* Reads the endpoints of cfg (which must outlive it); connects nothing yet.
 * NULL with err set when the config lists none or is broken. */
webhooks *webhooks_create(const config *cfg, char *err, size_t errlen);
/* NULL is a no-op. */
void webhooks_free(webhooks *w);

/* Delivers until stop_fd becomes readable (a signalfd of the stop
 * signals), then gives the deliveries in flight up to a second to be
 * answered and writes down what was answered. Returns 0, or 1 when it
 * cannot wait on stop_fd or its wait failed (logged: a supervisor starts it
 * again). */
int webhooks_run(webhooks *w, int stop_fd);

/* The Prometheus text of its counters (any thread). The caller frees; NULL
 * when out of memory. */
char *webhooks_metrics(void *w);

#endif
