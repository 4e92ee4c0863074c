/* webhook_store.h: seckill-webhooks' state in PostgreSQL (sql/011_webhooks.sql,
 * sql/015_webhook_cursor.sql): the endpoints and their cursors (the last
 * event each is done with), the events read after them in pages, and the
 * deliveries that failed or wait behind one (a row each: attempts, next
 * try, the dead-letter). Every call is one statement, so each change is
 * whole: a deliverer killed between two calls leaves nothing half done, at
 * worst a delivery sent again (at least once). */
#ifndef SECKILL_WEBHOOK_STORE_H
#define SECKILL_WEBHOOK_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "outbox.h"

/* A delivery owed: the event, its endpoint, the attempts made so far. */
typedef struct webhook_delivery {
    outbox_event ev;
    int64_t endpoint_id;
    int attempts;
} webhook_delivery;

/* The endpoint of url, made (at the end of the feed) when new. Returns its
 * id, or -1. */
int64_t webhook_store_endpoint(PGconn *pg, const char *url);

/* The session is woken (a NOTIFY on OUTBOX_CHANNEL) by every commit that
 * writes events. 0 or -1. */
int webhook_store_listen(PGconn *pg);

/* The endpoint's cursor: the last event id it is done with (answered
 * 2xx, or a row here). -1 when PostgreSQL failed. */
int64_t webhook_store_cursor(PGconn *pg, int64_t endpoint_id);

/* The events after the event id after, at most limit, in id order, into out;
 * has_row[i]: bit k set when endpoint ids[k] (n of them, at most 32) has a
 * row of that event's order. Returns how many, or -1. */
int webhook_store_page(PGconn *pg, int64_t after, int limit, const int64_t *ids, size_t n,
                       outbox_event *out, uint32_t *has_row);

/* Moves the cursors of the n endpoints ids to cursors (never back), in one
 * statement. 0 or -1. */
int webhook_store_move(PGconn *pg, const int64_t *ids, const int64_t *cursors, size_t n);

/* Makes d (not yet a row) a row: after a failed first attempt (d->attempts
 * 1, error: why, the next try in delay_ms, dead: it was the last), or to
 * wait behind its order's row (attempts 0, error NULL, due now). Behind a
 * dead event of its order it joins the dead-letter. A row already there is
 * kept. 0 or -1. */
int webhook_store_park(PGconn *pg, const webhook_delivery *d, const char *error, int64_t delay_ms,
                       int dead);

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

/* Refreshes the planner's statistics of the deliveries. An endpoint that
 * fails during a storm grows them from none to tens of thousands in
 * seconds, long before autovacuum looks: with the statistics of an empty table the due query read
 * every delivery and sorted them (0.4 s a turn) instead of walking its index to the first few. 0 or
 * -1. */
int webhook_store_analyze(PGconn *pg);

/* Into lag_ms[i], for each of the n endpoints ids[i], the milliseconds
 * since the oldest event it has not had (0: none waits; the dead-letter does
 * not count), in one statement. 0, or -1 when PostgreSQL failed or lacks
 * one of them. */
int webhook_store_lags_ms(PGconn *pg, const int64_t *ids, size_t n, int64_t *lag_ms);

/* The last event id drawn (committed or not: the head of the feed as far
 * as the sequence knows), or -1 when PostgreSQL failed. */
int64_t webhook_store_head(PGconn *pg);

#endif
