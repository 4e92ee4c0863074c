/* lab_ctx.c: the lab threads' connections and their error handling. */
#include "lab_ctx.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "log.h"

lab_ctx *lab_ctx_create(const config *cfg, const scripts *sc, lab_local *local, order_id_gen *ids,
                        lab_zookeeper *zk)
{
    lab_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    /* A new connection waits for a lock (a row's, an advisory one, a unique
     * key's) no longer than the lab waits for its other locks; PostgreSQL's
     * 0 would mean forever, so the shortest is 1 ms. A statement that
     * waited that long is an answer (busy), not a failure to log. */
    char lock_timeout[64];
    snprintf(lock_timeout, sizeof(lock_timeout), "SET lock_timeout = '%dms'",
             cfg->lab_lock_wait_ms > 0 ? cfg->lab_lock_wait_ms : 1);
    const char *setup[] = {lock_timeout, NULL};
    const pg_session_spec pg = {
        .component = "lab", .quiet_state = LAB_SQLSTATE_LOCK_NOT_AVAILABLE, .setup = setup};
    c->redis = redis_nodes_create(cfg, "lab");
    c->pg = pg_session_create(cfg, &pg);
    if (!c->redis || !c->pg) {
        lab_ctx_free(c);
        return NULL;
    }
    c->cfg = cfg;
    c->sc = sc;
    c->local = local;
    c->ids = ids;
    c->zk = zk;
    return c;
}

void lab_ctx_free(lab_ctx *c)
{
    if (!c)
        return;
    redis_nodes_free(c->redis);
    pg_session_free(c->pg);
    free(c);
}

redisReply *lab_ctx_redis(lab_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redis_nodes_vcommand(c->redis, key, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *lab_ctx_redis_argv(lab_ctx *c, int argc, const char **argv)
{
    return redis_nodes_command(c->redis, argc > 1 ? argv[1] : "", argc, argv, NULL);
}

redisReply *lab_ctx_script(lab_ctx *c, script_id id, int nkeys, int nargs, const char **keys_args)
{
    return redis_nodes_script(c->redis, &c->sc->s[id], nkeys, nargs, keys_args);
}

int lab_ctx_scan(lab_ctx *c, const char *pattern, redis_nodes_scan_fn each, void *ctx)
{
    return redis_nodes_scan(c->redis, pattern, each, ctx) < 0 ? -1 : 0;
}

/* res, a statement's result or NULL with its SQLSTATE state: a lock waited
 * for too long is noted in c. */
static PGresult *note_lock_wait(lab_ctx *c, PGresult *res, const char *state)
{
    if (!res && strcmp(state, LAB_SQLSTATE_LOCK_NOT_AVAILABLE) == 0)
        c->lock_timed_out = 1;
    return res;
}

PGresult *lab_ctx_sql(lab_ctx *c, const char *sql, int nparams, const char *const *params,
                      ExecStatusType want)
{
    char state[6];
    return note_lock_wait(c, pg_session_exec(c->pg, sql, nparams, params, want, state), state);
}

PGresult *lab_ctx_sql_id(lab_ctx *c, const char *sql, int64_t id, ExecStatusType want)
{
    char state[6];
    return note_lock_wait(c, pg_session_exec_id(c->pg, sql, id, want, state), state);
}

int lab_ctx_sql_command(lab_ctx *c, const char *sql)
{
    return pg_session_command(c->pg, sql);
}

void lab_ctx_token(lab_ctx *c, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64, order_id_next(c->ids, clock_wall_ms()));
}
