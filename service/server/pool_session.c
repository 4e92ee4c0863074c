/* pool_session.c: one pool thread's connections to Redis (routed by key:
 * every node of a Redis Cluster) and PostgreSQL (pg_session.h) and the
 * calls over them (the items' operations are items.c's), the readiness
 * check, the return of an order's units and the gauges. */
#include "pool_session.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_session.h"
#include "draw_grant.h"
#include "keys.h"
#include "log.h"
#include "order_lock_count.h"
#include "redis_nodes.h"
#include "redis_reply.h"
#include "registry.h"

#define COMPONENT "pool"

struct pool_session {
    const config *cfg;
    const scripts *sc;
    redis_nodes *redis; /* made with the session, connected lazily */
    pg_session *pg;     /* the same */
    metrics *metrics;
};

pool_session *pool_session_create(const config *cfg, const scripts *sc, metrics *m)
{
    pool_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->sc = sc;
    s->metrics = m;
    /* A constraint the input broke (class 23) is the caller's to answer. */
    const pg_session_spec pg = {.component = COMPONENT, .metrics = m, .quiet_state = "23"};
    s->redis = redis_nodes_create(cfg, COMPONENT);
    s->pg = pg_session_create(cfg, &pg);
    if (!s->redis || !s->pg) {
        pool_session_free(s);
        return NULL;
    }
    return s;
}

void pool_session_free(pool_session *s)
{
    if (!s)
        return;
    redis_nodes_free(s->redis);
    pg_session_free(s->pg);
    free(s);
}

redisReply *pool_session_redis(pool_session *s, int argc, const char **argv)
{
    redisReply *r = redis_nodes_command(s->redis, argv[1], argc, argv, NULL);
    if (!r)
        metrics_backend_error(s->metrics, METRICS_REDIS);
    return r;
}

/* A command that is about no key (TIME, PING, PUBLISH), on any node. */
static redisReply *pool_session_redis_any(pool_session *s, int argc, const char **argv)
{
    redisContext *c = redis_nodes_any(s->redis);
    redisReply *r = NULL;
    if (c)
        r = redis_nodes_reply(s->redis, c, redisCommandArgv(c, argc, argv, NULL), argv[0]);
    if (!r)
        metrics_backend_error(s->metrics, METRICS_REDIS);
    return r;
}

int pool_session_redis_pipeline(pool_session *s, size_t n, int argc, const char **argv,
                                redisReply **replies)
{
    memset(replies, 0, n * sizeof(*replies));
    if (n == 0)
        return 0;
    if (redis_nodes_pipeline(s->redis, n, argc, argv, replies) == 0)
        return 0;
    metrics_backend_error(s->metrics, METRICS_REDIS);
    return -1;
}

redisReply *pool_session_script(pool_session *s, script_id id, int nkeys, int nargs,
                                const char **keys_args)
{
    redisReply *r = redis_nodes_script(s->redis, &s->sc->s[id], nkeys, nargs, keys_args);
    if (!r)
        metrics_backend_error(s->metrics, METRICS_REDIS);
    return r;
}

PGresult *pool_session_pg(pool_session *s, const char *sql, int n, const char *const *params,
                          ExecStatusType want, char *sqlstate)
{
    return pg_session_exec(s->pg, sql, n, params, want, sqlstate);
}

PGresult *pool_session_pg_id(pool_session *s, const char *sql, int64_t id, ExecStatusType want)
{
    return pg_session_exec_id(s->pg, sql, id, want, NULL);
}

sk_status pool_session_pg_row(pool_session *s, const char *sql, int64_t id, PGresult **row)
{
    *row = pool_session_pg_id(s, sql, id, PGRES_TUPLES_OK);
    if (!*row)
        return SK_BACKEND_DOWN;
    if (PQntuples(*row) > 0)
        return SK_OK;
    PQclear(*row);
    *row = NULL;
    return SK_NOT_FOUND;
}

int pool_session_pg_command(pool_session *s, const char *sql)
{
    return pg_session_command(s->pg, sql);
}

void pool_session_announce(pool_session *s, const char *event)
{
    const char *pub[] = {"PUBLISH", KEYS_EVENTS, event};
    for (int tries = 0; tries < 3; tries++) {
        redisReply *r = pool_session_redis_any(s, 3, pub);
        freeReplyObject(r);
        if (r)
            return;
    }
    log_msg(LOG_WARN, COMPONENT, "announcing '%s' failed: servers learn it from Redis", event);
}

int64_t pool_session_redis_now_ms(pool_session *s)
{
    const char *argv[] = {"TIME"};
    redisReply *r = pool_session_redis_any(s, 1, argv);
    int64_t ms = -1, secs, us;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        redis_reply_number(r->element[0], &secs) == 0 &&
        redis_reply_number(r->element[1], &us) == 0)
        ms = secs * 1000 + us / 1000;
    freeReplyObject(r);
    return ms;
}

sk_status pool_session_ready(pool_session *s)
{
    const char *ping[] = {"PING"};
    redisReply *r = pool_session_redis_any(s, 1, ping);
    freeReplyObject(r);
    if (!r)
        return SK_BACKEND_DOWN;
    PGresult *res = pool_session_pg(s, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, NULL);
    PQclear(res);
    return res ? SK_OK : SK_BACKEND_DOWN;
}

int pool_session_return_order(pool_session *s, const order_ref *o)
{
    unsigned char done;
    PGconn *pg = pg_session_conn(s->pg);
    if (!pg)
        return -1;
    return order_return_units(s->redis, pg, s->sc, o, 1, &done, COMPONENT) == 0 ? 0 : -1;
}

int64_t pool_session_grant_owed(pool_session *s, int64_t item)
{
    PGconn *pg = pg_session_conn(s->pg);
    return pg ? draw_grant_owed(s->redis, pg, s->sc, item, COMPONENT) : -1;
}

/* One integer-valued command, or -1 (the gauge is then left out). */
static int64_t gauge_int(pool_session *s, const char *cmd, const char *key)
{
    const char *argv[] = {cmd, key};
    redisReply *r = pool_session_redis(s, 2, argv);
    int64_t n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return n;
}

typedef struct processing_sum {
    pool_session *s;
    int64_t total;
} processing_sum;

/* One processing list's length into the sum; -1 stops the scan. */
static int add_processing(void *ctx, const char *key, size_t len)
{
    (void)len;
    processing_sum *sum = ctx;
    int64_t n = gauge_int(sum->s, "LLEN", key);
    if (n < 0)
        return -1;
    sum->total += n;
    return 0;
}

int pool_session_items(pool_session *s, int64_t **items, size_t *n)
{
    const char *argv[] = {"SMEMBERS", KEYS_ITEMS};
    redisReply *r = pool_session_redis(s, 2, argv);
    int rc = r ? registry_from_reply(r, items, n) : -1;
    freeReplyObject(r);
    return rc;
}

void pool_session_gauges(pool_session *s, metrics_gauges *g)
{
    /* The items' queues, pending hashes and dead letters, summed. */
    int64_t *items = NULL;
    size_t n = 0;
    if (pool_session_items(s, &items, &n) < 0) {
        g->queue = g->pending = g->dead = g->processing = -1;
        return;
    }
    /* Three lengths an item (queue, pending, dead), in one round trip. */
    g->queue = g->pending = g->dead = 0;
    char(*keys)[KEYS_MAX] = malloc((3 * n + 1) * sizeof(*keys));
    const char **argv = malloc((6 * n + 1) * sizeof(*argv));
    redisReply **replies = calloc(3 * n + 1, sizeof(*replies));
    if (!keys || !argv || !replies) {
        g->queue = g->pending = g->dead = -1;
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        keys_queue(keys[3 * i], KEYS_MAX, items[i]);
        keys_pending(keys[3 * i + 1], KEYS_MAX, items[i]);
        keys_dead(keys[3 * i + 2], KEYS_MAX, items[i]);
        for (size_t k = 0; k < 3; k++) {
            argv[2 * (3 * i + k)] = k == 1 ? "HLEN" : "LLEN";
            argv[2 * (3 * i + k) + 1] = keys[3 * i + k];
        }
    }
    if (pool_session_redis_pipeline(s, 3 * n, 2, argv, replies) < 0)
        g->queue = g->pending = g->dead = -1;
    int64_t *sums[3] = {&g->queue, &g->pending, &g->dead};
    for (size_t i = 0; i < 3 * n; i++) {
        int64_t *sum = sums[i % 3];
        redisReply *r = replies[i];
        *sum = *sum < 0 || !r || r->type != REDIS_REPLY_INTEGER ? -1 : *sum + r->integer;
        freeReplyObject(r);
    }
    free(replies);
    free(argv);
    free(keys);
    free(items);
    /* The workers' processing lists, on every master. */
    processing_sum sum = {s, 0};
    if (redis_nodes_scan(s->redis, KEYS_PROCESSING_PATTERN, add_processing, &sum) != 0)
        g->processing = -1;
    else
        g->processing = sum.total;
}

int pool_session_order_locks(pool_session *s, int64_t item, int segments, int64_t *held)
{
    int rc = order_lock_count(s->redis, item, segments, held);
    if (rc < 0)
        metrics_backend_error(s->metrics, METRICS_REDIS);
    return rc;
}
