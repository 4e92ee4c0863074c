/* backend.c: connection helpers for Redis and PostgreSQL. */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

redisContext *backend_redis_connect(const config *cfg, char *err, size_t errlen)
{
    return backend_redis_connect_to(cfg, cfg->redis_host, cfg->redis_port, err, errlen);
}

redisContext *backend_redis_connect_to(const config *cfg, const char *host, int port, char *err,
                                       size_t errlen)
{
    return backend_redis_connect_auth(host, port, cfg->redis_timeout_ms, cfg->redis_password, err,
                                      errlen);
}

redisContext *backend_redis_connect_auth(const char *host, int port, int timeout_ms,
                                         const char *password, char *err, size_t errlen)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    /* Bounded, so that the address and the reason fit a caller's 256. */
    if (!c || c->err) {
        snprintf(err, errlen, "redis %.64s:%d: %.128s", host, port,
                 c ? c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errlen, "redis %.64s:%d: cannot set the timeout", host, port);
        goto fail;
    }
    if (password && *password) {
        redisReply *r = redisCommand(c, "AUTH %s", password);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        if (!ok)
            snprintf(err, errlen, "redis %.64s:%d: AUTH: %.128s", host, port,
                     r && r->type == REDIS_REPLY_ERROR ? r->str : "failed");
        freeReplyObject(r);
        if (!ok)
            goto fail;
    }
    return c;
fail:
    if (c)
        redisFree(c);
    return NULL;
}

/* What is made of one seed (a connection, a slot map): NULL with why. */
typedef void *(*seed_fn)(const redis_cluster_node *seed, const void *arg, char *why, size_t whylen);

/* What fn makes of the first seed it can: NULL with err joining each
 * seed's why ("; "). */
static void *first_seed(const redis_cluster_node *seeds, size_t nseeds, seed_fn fn, const void *arg,
                        char *err, size_t errlen)
{
    size_t len = 0;
    err[0] = '\0';
    if (nseeds == 0)
        snprintf(err, errlen, "no seeds");
    for (size_t i = 0; i < nseeds; i++) {
        char why[256];
        void *got = fn(&seeds[i], arg, why, sizeof(why));
        if (got)
            return got;
        if (len < errlen)
            len += (size_t)snprintf(err + len, errlen - len, "%s%s", len ? "; " : "", why);
    }
    return NULL;
}

/* How the seeds of a map are reached. */
typedef struct map_ask {
    int timeout_ms;
    const char *password;
} map_ask;

/* The map from one seed (arg: a map_ask). */
static void *map_of(const redis_cluster_node *seed, const void *arg, char *why, size_t whylen)
{
    const map_ask *ask = arg;
    redisContext *c = backend_redis_connect_auth(seed->host, seed->port, ask->timeout_ms,
                                                 ask->password, why, whylen);
    if (!c)
        return NULL;
    char slots_why[160] = "";
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    redis_cluster_map *map =
        r ? redis_cluster_map_from_slots(r, seed->host, slots_why, sizeof(slots_why)) : NULL;
    int unowned = map ? redis_cluster_map_unowned(map) : 0;
    if (unowned > 0) {
        snprintf(slots_why, sizeof(slots_why),
                 "%d of %d slots have no owner (cluster_state not ok?)", unowned,
                 REDIS_CLUSTER_SLOTS);
        redis_cluster_map_free(map);
        map = NULL;
    }
    if (!map)
        snprintf(why, whylen, "redis %.64s:%d: CLUSTER SLOTS: %s", seed->host, seed->port,
                 r ? slots_why : c->errstr);
    freeReplyObject(r);
    redisFree(c);
    return map;
}

redis_cluster_map *backend_redis_cluster_map(const redis_cluster_node *seeds, size_t nseeds,
                                             int timeout_ms, const char *password, char *err,
                                             size_t errlen)
{
    map_ask ask = {timeout_ms, password};
    return first_seed(seeds, nseeds, map_of, &ask, err, errlen);
}

/* A connection to one seed (arg: the config). */
static void *connection_to(const redis_cluster_node *seed, const void *arg, char *why,
                           size_t whylen)
{
    return backend_redis_connect_to(arg, seed->host, seed->port, why, whylen);
}

redisContext *backend_redis_connect_any(const config *cfg, char *err, size_t errlen)
{
    redis_cluster_node seeds[REDIS_CLUSTER_MAX_SEEDS];
    int n = redis_cluster_seeds_parse(cfg->redis_cluster ? cfg->redis_cluster : "", seeds,
                                      REDIS_CLUSTER_MAX_SEEDS, err, errlen);
    if (n < 0)
        return NULL;
    if (n == 0)
        return backend_redis_connect(cfg, err, errlen);
    return first_seed(seeds, (size_t)n, connection_to, cfg, err, errlen);
}

PGconn *backend_pg_connect(const config *cfg, char *err, size_t errlen)
{
    /* The program's name is the session's application_name unless the
     * conninfo names one: pg_stat_activity then tells an operator (and the
     * bench) which of seckill's processes a backend serves. */
    const char *const keys[] = {"dbname", "fallback_application_name", NULL};
    const char *const values[] = {cfg->pg_conninfo, program_invocation_short_name, NULL};
    PGconn *pg = PQconnectdbParams(keys, values, 1);
    if (!pg || PQstatus(pg) != CONNECTION_OK) {
        snprintf(err, errlen, "postgresql: %s", pg ? PQerrorMessage(pg) : "out of memory");
        /* libpq's messages end in a newline; logs want one line. */
        char *nl = strchr(err, '\n');
        if (nl)
            *nl = '\0';
        PQfinish(pg);
        return NULL;
    }
    return pg;
}

int backend_redis_ensure(redisContext **c, const config *cfg, const char *component)
{
    if (*c && !(*c)->err)
        return 0;
    if (*c)
        redisFree(*c);
    char err[256];
    *c = backend_redis_connect(cfg, err, sizeof(err));
    if (!*c)
        log_msg(LOG_WARN, component, "%s", err);
    return *c ? 0 : -1;
}

int backend_redis_scan_page(redisContext *c, char *cursor, size_t cap, const char *pattern,
                            backend_scan_fn each, void *ctx, const char *component, int *lost)
{
    redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
    if (lost)
        *lost = !r;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
        log_msg(LOG_WARN, component, "redis SCAN %s: %s", pattern,
                !r                             ? c->errstr
                : r->type == REDIS_REPLY_ERROR ? r->str
                                               : "unexpected reply");
        freeReplyObject(r);
        return -1;
    }
    snprintf(cursor, cap, "%s", r->element[0]->str);
    redisReply *keys = r->element[1];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < keys->elements; i++) {
        redisReply *k = keys->element[i];
        if (k->type == REDIS_REPLY_STRING)
            rc = each(ctx, k->str, k->len);
    }
    freeReplyObject(r);
    return rc;
}
