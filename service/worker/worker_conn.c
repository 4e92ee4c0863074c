/* worker_conn.c: the worker's Redis and PostgreSQL connections, its
 * heartbeat, and its naps between retries. */
#include "worker_conn.h"

#include <inttypes.h>
#include <stdio.h>

#include "backend.h"
#include "backoff.h"
#include "clock.h"
#include "keys.h"
#include "log.h"
#include "redis_reply.h"
#include "worker_pg.h"

#define COMPONENT "worker"

/* The heartbeat lives this many periods: a worker is dead for the sweep
 * only after missing about as many refreshes. */
#define WORKER_HEARTBEAT_PERIODS 3

int worker_conn_stop_requested(const worker *w)
{
    return atomic_load(w->stop) != 0;
}

void worker_conn_nap(const worker *w, int64_t ms)
{
    backoff_sleep_ms(ms, w->stop);
}

/* ---- Redis ---------------------------------------------------------------- */

void worker_conn_redis_drop(worker *w)
{
    redis_nodes_free(w->redis);
    w->redis = NULL;
}

int worker_conn_heartbeat(worker *w, int wait)
{
    char holder[SWEEP_TOKEN_MAX];
    int64_t pttl = 0;
    for (;;) {
        int rc =
            sweep_heartbeat(w->redis, &w->sc, w->cfg->worker_id, w->token,
                            w->beat_ms * WORKER_HEARTBEAT_PERIODS, holder, sizeof(holder), &pttl);
        if (rc > 0)
            w->next_beat = clock_mono_ms() + w->beat_ms;
        if (rc != 0)
            return rc > 0 ? 0 : -1;
        if (!wait)
            break;
        log_msg(LOG_WARN, COMPONENT,
                "the heartbeat of worker id %s holds another run's token %s; waiting %" PRId64
                " ms to see whether that run crashed",
                w->cfg->worker_id, holder, pttl);
        worker_conn_nap(w, pttl + BACKOFF_NAP_MS);
        if (worker_conn_stop_requested(w))
            return -1;
        wait = 0;
    }
    log_msg(LOG_ERROR, COMPONENT,
            "worker id %s is in use by a live worker (heartbeat %s): give every worker its own "
            "worker_id",
            w->cfg->worker_id, holder);
    w->id_taken = 1;
    return -2;
}

/* Sets up a master's connection: named, its scripts loaded. Returns 0, or
 * -1 (logged). */
static int setup_node(worker *w, redisContext *c)
{
    /* A name in CLIENT LIST tells operators (and tests) which connection is
     * whose; names cannot hold spaces. */
    char name[KEYS_MAX];
    snprintf(name, sizeof(name), "seckill-worker:%s", w->cfg->worker_id);
    for (char *p = name; *p; p++)
        if (*p <= ' ' || *p > '~')
            *p = '_';
    redisReply *r = redis_nodes_reply(w->redis, c, redisCommand(c, "CLIENT SETNAME %s", name),
                                      "CLIENT SETNAME");
    if (!r)
        return -1;
    if (redis_reply_expect(r, REDIS_REPLY_STATUS, COMPONENT, "CLIENT SETNAME") < 0)
        return -1;
    /* Every connect loads the scripts, so that the calls go by digest even
     * after a Redis restart. */
    if (scripts_load(&w->sc, c) < 0) {
        log_msg(LOG_WARN, COMPONENT, "redis: cannot load the scripts");
        return -1;
    }
    return 0;
}

int worker_conn_redis_connect(worker *w)
{
    w->redis = redis_nodes_create(w->cfg, COMPONENT);
    if (!w->redis) {
        log_msg(LOG_ERROR, COMPONENT, "redis: out of memory");
        return -1;
    }
    /* Every master now, so that each connection is named and each node
     * knows the scripts. A connection a later call remakes (after it
     * failed) goes unnamed; a node new to the map (a reshard, a failover)
     * learns each script from its first call, sent by text. */
    size_t n = redis_nodes_count(w->redis);
    if (n == 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        redisContext *c = redis_nodes_at(w->redis, i);
        if (!c || setup_node(w, c) < 0)
            goto fail;
    }
    if (redis_nodes_is_cluster(w->redis))
        log_msg(LOG_INFO, COMPONENT, "connected to the redis cluster of %s: %zu masters",
                w->cfg->redis_cluster, n);
    else
        log_msg(LOG_INFO, COMPONENT, "connected to redis %s:%d", w->cfg->redis_host,
                w->cfg->redis_port);
    int rc = worker_conn_heartbeat(w, 1);
    if (rc < 0) {
        worker_conn_redis_drop(w);
        return rc;
    }
    worker_items_forget_claims(&w->items);
    return 0;
fail:
    worker_conn_redis_drop(w);
    return -1;
}

/* ---- PostgreSQL ----------------------------------------------------------- */

int worker_conn_pg_connect(worker *w)
{
    w->pg = worker_pg_connect(w->cfg);
    return w->pg ? 0 : -1;
}

void worker_conn_pg_drop(worker *w)
{
    PQfinish(w->pg);
    w->pg = NULL;
}
