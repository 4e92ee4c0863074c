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
    if (!c || !(c->redis = redis_nodes_create(cfg, "lab"))) {
        free(c);
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
    PQfinish(c->pg);
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

/* Connects when needed. A new connection waits for a lock (a row's, an
 * advisory one, a unique key's) no longer than the lab waits for its other
 * locks; PostgreSQL's 0 would mean forever, so the shortest is 1 ms. */
static int ensure_pg(lab_ctx *c)
{
    int fresh = c->pg == NULL;
    if (backend_pg_ensure(&c->pg, c->cfg, "lab") < 0)
        return -1;
    if (!fresh)
        return 0;
    char ms[32];
    snprintf(ms, sizeof(ms), "%dms", c->cfg->lab_lock_wait_ms > 0 ? c->cfg->lab_lock_wait_ms : 1);
    const char *params[] = {ms};
    PGresult *res = PQexecParams(c->pg, "SELECT set_config('lock_timeout', $1, false)", 1, NULL,
                                 params, NULL, NULL, 0);
    int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    PQclear(res);
    if (!ok) {
        log_msg(LOG_WARN, "lab", "postgresql: lock_timeout: %s", PQerrorMessage(c->pg));
        PQfinish(c->pg);
        c->pg = NULL;
        return -1;
    }
    return 0;
}

PGresult *lab_ctx_sql(lab_ctx *c, const char *sql, int nparams, const char *const *params,
                      ExecStatusType want)
{
    if (ensure_pg(c) < 0)
        return NULL;
    PGresult *res = PQexecParams(c->pg, sql, nparams, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) == want)
        return res;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (state && strcmp(state, LAB_SQLSTATE_LOCK_NOT_AVAILABLE) == 0)
        c->lock_timed_out = 1; /* an answer (busy), not a failure to log */
    else
        log_msg(LOG_WARN, "lab", "postgresql: %s", PQerrorMessage(c->pg));
    PQclear(res);
    if (PQstatus(c->pg) != CONNECTION_OK) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    return NULL;
}

int lab_ctx_sql_command(lab_ctx *c, const char *sql)
{
    PGresult *res = lab_ctx_sql(c, sql, 0, NULL, PGRES_COMMAND_OK);
    PQclear(res);
    return res ? 0 : -1;
}

void lab_ctx_token(lab_ctx *c, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64, order_id_next(c->ids, clock_wall_ms()));
}
