/* sale.h: what the end-to-end tests do to a running server: create an item,
 * run a sale of many distinct buyers (in the foreground or in a thread),
 * and audit the books afterwards. */
#ifndef SECKILL_SALE_H
#define SECKILL_SALE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "blast.h"

/* Creates an item through the admin API; aborts the test on failure. */
int64_t sale_create_item(int port, const char *token, const char *name, int64_t stock);
/* The same with more of its terms: JSON members, as printf makes them from
 * terms and what follows ("\"per_buyer_limit\":%d", 2). */
int64_t sale_create_item_with(int port, const char *token, const char *name, int64_t stock,
                              const char *terms, ...) __attribute__((format(printf, 5, 6)));
/* The same, the item's view (the 201's body) landing in view (cap bytes). */
int64_t sale_create_item_view(int port, const char *token, char *view, size_t cap, const char *name,
                              int64_t stock, const char *terms, ...)
    __attribute__((format(printf, 7, 8)));
/* The same for a laboratory item ("lab": true), the only kind the
 * laboratory's routes act on. */
int64_t sale_create_lab_item(int port, const char *token, const char *name, int64_t stock);

/* The order id of a 202's body (its "order_id"); aborts the test when it
 * has none. */
int64_t sale_order_id(const char *resp);

/* A number of the item's view (GET /api/v1/items/{id}): "sold",
 * "remaining", "queued", "persisted"... -1 (and the answer on stderr) when the
 * server does not answer 200 or the view has no such number: a caller
 * polling through a failover may meet a 503. */
int64_t sale_item_number(int port, int64_t item, const char *field);

typedef struct sale {
    int64_t item;
    size_t first_user; /* request i buys for user first_user + i */
    int64_t *accepted; /* order ids answered 202, over every run of this sale */
    size_t naccepted;
    size_t room;          /* of accepted */
    size_t sold_out;      /* answered 409 sold_out */
    size_t queue_full;    /* answered 503 queue_full */
    size_t unavailable;   /* answered 503 otherwise */
    int64_t *unconfirmed; /* order ids answered 503 unconfirmed (room of them) */
    size_t nunconfirmed;
    size_t other; /* any other answer */
    blast_spec spec;
    blast_result result; /* of the last run */
    pthread_t thread;
} sale;

/* A sale of `buyers` purchases of item on 127.0.0.1:port over `connections`
 * keep-alive connections, buyers first_user.. (room for max_accepted 202s
 * over all runs). sale_free() releases it. */
void sale_init(sale *s, int port, int64_t item, size_t buyers, size_t connections,
               size_t first_user, size_t max_accepted);
void sale_free(sale *s);

/* Runs it to the end (bounded by spec.timeout_ms); the counts add up.
 * Returns 0 when every request got an answer (blast_run's result). */
int sale_run(sale *s);

/* The same in a thread, for a test that breaks something meanwhile. */
void sale_start(sale *s);
void sale_join(sale *s);

/* Waits until Redis counts at least `units` of item sold. */
void sale_wait_sold(int64_t item, int64_t units, int timeout_ms);

/* Waits until no order waits between acceptance and PostgreSQL
 * (every item's pending hash and queue empty). */
void sale_wait_drained(int timeout_ms);

/* Asserts that every order answered 202 is in PostgreSQL exactly once and
 * that no buyer holds two units of the item (in orders persisted or paid). */
void sale_assert_persisted(const sale *s, PGconn *pg);

/* Every order of the item in PostgreSQL was answered 202 or 503
 * unconfirmed with its id: no buyer was told nothing was sold and got an
 * order. */
void sale_assert_orders_were_answered(const sale *s, PGconn *pg);

/* Stronger: the item's orders in PostgreSQL are exactly the orders answered
 * 202 (same set), and no buyer holds two. Sorts s->accepted. */
void sale_assert_exactly_persisted(sale *s, PGconn *pg);

#endif
