/* pool_session.h: a pool thread's session: its own synchronous connections,
 * to Redis (one per node, routed by key: redis_nodes.h) and to PostgreSQL
 * (pg_session.h), and the blocking calls over them, for the admin and read routes (the items'
 * operations are items.h's, the orders' orders.h's). Connections are made lazily and remade after
 * an error. */
#ifndef SECKILL_POOL_SESSION_H
#define SECKILL_POOL_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "config.h"
#include "json_io.h"
#include "metrics.h"
#include "order.h"
#include "order_return.h"
#include "scripts.h"
#include "status.h"

typedef struct pool_session pool_session;

/* Connects nothing yet. cfg, sc and m (where backend errors are counted;
 * may be NULL) must outlive the session. NULL on OOM. */
pool_session *pool_session_create(const config *cfg, const scripts *sc, metrics *m);
void pool_session_free(pool_session *s);

/* SK_OK when Redis and PostgreSQL both answer, else SK_BACKEND_DOWN. */
sk_status pool_session_ready(pool_session *s);

/* The calls over the connections, for the session's users (items.c, orders.c, archive.c). Each
 * makes its connection when it has none and drops it after a failure,
 * counting backend errors in the metrics. */

/* An argv-style Redis command about the key argv[1] (argc >= 2), on the
 * node serving it. Returns the reply (the caller frees it), or NULL on
 * failure or an error reply. */
redisReply *pool_session_redis(pool_session *s, int argc, const char **argv);

/* n commands of argc arguments each, one after the other in argv (command
 * i's are argv[i * argc] on, its key argv[i * argc + 1]), in one write per
 * node, their replies read together: one round trip for a command per
 * registered item. Each reply lands in replies[i] (the caller frees it),
 * NULL for an error reply. Returns 0, or -1 when a node failed (every
 * replies[i] NULL). */
int pool_session_redis_pipeline(pool_session *s, size_t n, int argc, const char **argv,
                                redisReply **replies);

/* A call of script id (EVALSHA, EVAL after NOSCRIPT) on the node of its
 * first key. Returns the reply (the caller judges and frees it), NULL when
 * Redis failed or answered an error. */
redisReply *pool_session_script(pool_session *s, script_id id, int nkeys, int nargs,
                                const char **keys_args);

/* A parameterized statement. Returns the result when its status is want,
 * else NULL (logged unless a constraint, class 23, refused it); *sqlstate
 * (6 bytes, may be NULL) gets the error's SQLSTATE. The caller PQclear()s. */
PGresult *pool_session_pg(pool_session *s, const char *sql, int n, const char *const *params,
                          ExecStatusType want, char *sqlstate);

/* A statement whose one parameter, $1, is the integer id (an item's, an
 * order's), as pool_session_pg. */
PGresult *pool_session_pg_id(pool_session *s, const char *sql, int64_t id, ExecStatusType want);

/* The row of an id: sql (a query, or a command with RETURNING) of one
 * parameter, $1, the id. SK_OK with *row (its first row is the caller's to
 * read; the caller PQclear()s it), SK_NOT_FOUND when it gives no row,
 * SK_BACKEND_DOWN when it failed; *row is NULL but for SK_OK. */
sk_status pool_session_pg_row(pool_session *s, const char *sql, int64_t id, PGresult **row);

/* A statement without parameters or rows (BEGIN, COMMIT). Returns 0 or -1. */
int pool_session_pg_command(pool_session *s, const char *sql);

/* Publishes one cross-instance event (events.h), tried three times. A lost
 * one costs a server's stale sold-out flag a second at most (gate.h), so it
 * is logged, not failed. */
void pool_session_announce(pool_session *s, const char *event);

/* Redis's clock (Unix ms), the sale window's authority; -1 when Redis
 * fails. */
int64_t pool_session_redis_now_ms(pool_session *s);

/* Gives back the units of the cancelled or expired order o
 * (order_return.h): Redis, then its returned_at. Returns 0 when both are
 * done; -1 leaves the return owed, for the worker's expiry sweep. */
int pool_session_return_order(pool_session *s, const order_ref *o);

/* Finishes the grants owed of item's draw orders (draw_grant.h): Redis
 * takes their units once, then granted_at. Returns the orders granted, or
 * -1 when some stay owed (for the worker's draw chore). */
int64_t pool_session_grant_owed(pool_session *s, int64_t item);

/* The ids of the items whose queues may hold orders (registry.h), sorted,
 * into a new array (*items, the caller frees). Returns 0, or -1 when Redis
 * failed. */
int pool_session_items(pool_session *s, int64_t **items, size_t *n);

/* The buyers' order locks of item (of its segments) standing now, counted
 * at their nodes (order_lock_count.h; not for a hot path). Returns 1 when
 * counted, 0 when a node was too large to count to the end (*held a lower
 * bound), -1 when Redis failed. */
int pool_session_order_locks(pool_session *s, int64_t item, int segments, int64_t *held);

/* The gauges of /metrics that live in Redis, summed over the items: queues,
 * processing lists, pending hashes and dead letters (-1 each when Redis does
 * not answer). */
void pool_session_gauges(pool_session *s, metrics_gauges *g);

#endif
