/* drawn.h: a drawn item made directly in PostgreSQL, for the tests of the
 * waitlist (issue 28): entrants at positions 1..n, outcomes by the draw's
 * serving rule (draw_order.h), and the winners' orders committed as the draw
 * commits them (draw_position set, granted_at null: their grants owed, as
 * after a draw that crashed before its grants). Redis is the test's: the
 * item's state with its stock, whose units the grants then take. */
#ifndef SECKILL_DRAWN_H
#define SECKILL_DRAWN_H

#include <stdint.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "config.h"
#include "redis_nodes.h"
#include "scripts.h"

/* Entrant at position p is buyer DRAWN_USER + p. */
#define DRAWN_USER 1000000

/* Turns item, a row of items of one segment in its current round (with its
 * per_buyer_limit and payment_timeout_s), into a draw item drawn now: n
 * entrants whose quantities are q[0..n) (NULL: 1 each), served over `units`
 * units; each winner's order (drawn_order_id) persisted, pay_by
 * payment_timeout_s from now. Returns the winners; aborts the test on a
 * failure. */
int drawn_item_make(PGconn *pg, int64_t item, int n, const int *q, int64_t units);

/* The order id drawn_item_make gives the winner at position p of item. */
int64_t drawn_order_id(int64_t item, int p);

/* The position's outcome now ("won", "waitlisted", ...) and its order id
 * (0: none) into *order (may be NULL). Aborts the test on a failure. */
const char *drawn_outcome(PGconn *pg, int64_t item, int p, int64_t *order);

/* What an integration test of the draw's Redis side holds: the run's Redis
 * with every script loaded, PostgreSQL, and nodes, the way the server and
 * the worker reach Redis. */
typedef struct drawn_env {
    redisContext *redis;
    PGconn *pg;
    scripts sc;
    config cfg;
    redis_nodes *nodes;
} drawn_env;

/* Empties the backends and opens all of env; aborts the test on a failure. */
void drawn_env_open(drawn_env *env);
/* Closes all of it. */
void drawn_env_close(drawn_env *env);

/* Runs the statement fmt formats (printf) on pg; aborts the test on a
 * failure. drawn_sql_int returns its first column of its first row. */
void drawn_sql(PGconn *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t drawn_sql_int(PGconn *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Field of item's hash that keyfn names (keys.h: buyers, granted...), as an
 * integer; absent when it has no such field. */
long long drawn_hash_field(redisContext *c, int (*keyfn)(char *, size_t, int64_t), int64_t item,
                           int64_t field, long long absent);

#endif
