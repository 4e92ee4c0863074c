/* webhook_store.h: seckill-webhooks' state in PostgreSQL (sql/011_webhooks.sql):
 * the endpoints and their cursors, the deliveries owed, their attempts and
 * the dead-letter. Every call is one statement, so each change is whole:
 * a deliverer killed between two calls leaves nothing half done, at worst a
 * delivery sent again (at least once). */
#ifndef SECKILL_WEBHOOK_STORE_H
#define SECKILL_WEBHOOK_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "outbox.h"

/* Events one fan-out takes at most. */
#define WEBHOOK_FAN_OUT_MAX 1000

/* A delivery owed: the event, its endpoint, the attempts made so far. */
typedef struct webhook_delivery {
    outbox_event ev;
    int64_t endpoint_id;
    int attempts;
} webhook_delivery;

/* The endpoint of url, made (at the end of the feed) when new. Returns its
 * id, or -1. */
int64_t webhook_store_endpoint(PGconn *pg, const char *url);

/* Takes the events after the endpoint's cursor into its deliveries (at most
 * WEBHOOK_FAN_OUT_MAX) and moves the cursor, in one statement. An event of
 * an order with a delivery in the dead-letter joins it there: its order's
 * events stay in order. Returns how many, or -1. */
int64_t webhook_store_fan_out(PGconn *pg, int64_t endpoint_id);

/* A delivery's key: its endpoint and its event. */
typedef struct webhook_key {
    int64_t endpoint_id, event_id;
} webhook_key;

/* The deliveries due now whose order has no earlier one waiting at their
 * endpoint, busy ones (nbusy of them: in flight) left out, oldest event
 * first: for each of the n endpoints ids[i] at most room[i], so that one
 * with many due never hides another's. One statement; at most cap, into
 * out, by endpoint. Returns how many, or -1. */
int webhook_store_due(PGconn *pg, const int64_t *ids, const int64_t *room, size_t n,
                      const webhook_key *busy, size_t nbusy, webhook_delivery *out, int cap);

/* The endpoints answered 2xx to these n deliveries: they are done, in one
 * statement. 0 or -1. */
int webhook_store_delivered(PGconn *pg, const webhook_key *done, size_t n);

/* An attempt failed (error: why, for the dead-letter's list). The next one
 * waits delay_ms; dead: it was the last, the delivery goes to the
 * dead-letter with the later events of its order at that endpoint. 0 or -1. */
int webhook_store_failed(PGconn *pg, const webhook_delivery *d, const char *error, int64_t delay_ms,
                         int dead);

/* Refreshes the planner's statistics of the deliveries. A storm grows
 * them from none to tens of thousands in seconds, long before autovacuum
 * looks: with the statistics of an empty table the due query read every
 * delivery and sorted them (0.4 s a turn) instead of walking its index to
 * the first few. 0 or -1. */
int webhook_store_analyze(PGconn *pg);

/* Seconds since the oldest event the endpoint has not had (0: none waits;
 * the dead-letter does not count). -1 when PostgreSQL failed. */
double webhook_store_lag_s(PGconn *pg, int64_t endpoint_id);

#endif
