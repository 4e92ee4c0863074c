/* worker_conn.c: the worker's Redis and PostgreSQL connections, its
 * heartbeat, and its naps between retries. */
#include "worker_conn.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "backend.h"
#include "keys.h"
#include "log.h"
#include "worker_pg.h"

#define COMPONENT "worker"

/* Stop requests are checked this often while waiting to retry. */
#define WORKER_NAP_MS 50
/* The heartbeat lives this many periods: a worker is dead for the sweep
 * only after missing about as many refreshes. */
#define WORKER_HEARTBEAT_PERIODS 3

int worker_conn_stop_requested(const worker *w)
{
    return atomic_load(w->stop) != 0;
}

void worker_conn_nap(const worker *w, int64_t ms)
{
    while (ms > 0 && !worker_conn_stop_requested(w)) {
        int64_t step = ms < WORKER_NAP_MS ? ms : WORKER_NAP_MS;
        struct timespec ts = {(time_t)(step / 1000), (long)(step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* ---- Redis ---------------------------------------------------------------- */

void worker_conn_redis_drop(worker *w)
{
    if (w->redis)
        redisFree(w->redis);
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
            w->next_beat = backend_mono_ms() + w->beat_ms;
        if (rc != 0)
            return rc > 0 ? 0 : -1;
        if (!wait)
            break;
        log_msg(LOG_WARN, COMPONENT,
                "the heartbeat of worker id %s holds another run's token %s; waiting %" PRId64
                " ms to see whether that run crashed",
                w->cfg->worker_id, holder, pttl);
        worker_conn_nap(w, pttl + WORKER_NAP_MS);
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

int worker_conn_redis_connect(worker *w)
{
    char err[256], name[KEYS_MAX];
    w->redis = backend_redis_connect(w->cfg, err, sizeof(err));
    if (!w->redis) {
        log_msg(LOG_WARN, COMPONENT, "%s", err);
        return -1;
    }
    /* Replies to BLMOVE may take the whole block time to come. */
    int64_t ms = WORKER_BLOCK_MS + w->cfg->redis_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    if (redisSetTimeout(w->redis, tv) != REDIS_OK) {
        log_msg(LOG_WARN, COMPONENT, "redis: cannot set the timeout");
        goto fail;
    }
    /* A name in CLIENT LIST tells operators (and tests) which connection is
     * whose; names cannot hold spaces. */
    snprintf(name, sizeof(name), "seckill-worker:%s", w->cfg->worker_id);
    for (char *p = name; *p; p++)
        if (*p <= ' ' || *p > '~')
            *p = '_';
    redisReply *r = redisCommand(w->redis, "CLIENT SETNAME %s", name);
    if (!r || r->type != REDIS_REPLY_STATUS) {
        backend_redis_failed(w->redis, r, COMPONENT, "CLIENT SETNAME");
        goto fail;
    }
    freeReplyObject(r);
    /* Every connect loads the scripts, so that the calls go by digest even
     * after a Redis restart. */
    if (scripts_load(&w->sc, w->redis) < 0) {
        log_msg(LOG_WARN, COMPONENT, "redis: cannot load the scripts");
        goto fail;
    }
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
