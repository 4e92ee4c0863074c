/* store.c: admin and read operations. PostgreSQL holds the truth about
 * items and persisted orders; Redis holds the live stock of the round. */
#include "store.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "keys.h"
#include "log.h"

struct store {
    const config *cfg;
    const scripts *sc;
    redisContext *redis;
    PGconn *pg;
    metrics *metrics;
};

store *store_create(const config *cfg, const scripts *sc, metrics *m)
{
    store *s = calloc(1, sizeof(*s));
    if (s) {
        s->cfg = cfg;
        s->sc = sc;
        s->metrics = m;
    }
    return s;
}

void store_free(store *s)
{
    if (!s)
        return;
    if (s->redis)
        redisFree(s->redis);
    PQfinish(s->pg);
    free(s);
}

static int ensure_redis(store *s)
{
    if (backend_redis_ensure(&s->redis, s->cfg, "store") == 0)
        return 0;
    metrics_backend_error(s->metrics, METRICS_REDIS);
    return -1;
}

static int ensure_pg(store *s)
{
    if (backend_pg_ensure(&s->pg, s->cfg, "store") == 0)
        return 0;
    metrics_backend_error(s->metrics, METRICS_POSTGRESQL);
    return -1;
}

/* argv-style Redis command; NULL (and the connection dropped) on failure or
 * an error reply. The caller frees the reply. */
static redisReply *redis_argv(store *s, int argc, const char **argv)
{
    if (ensure_redis(s) < 0)
        return NULL;
    redisReply *r = redisCommandArgv(s->redis, argc, argv, NULL);
    if (!r)
        metrics_backend_error(s->metrics, METRICS_REDIS);
    return backend_redis_reply(&s->redis, r, "store", argv[0]);
}

/* A script call (backend_redis_script). Returns 0 or -1. */
static int run_script(store *s, script_id id, int nkeys, int nargs, const char **keys_args)
{
    if (ensure_redis(s) < 0)
        return -1;
    redisReply *r =
        backend_redis_script(&s->redis, &s->sc->s[id], nkeys, nargs, keys_args, "store");
    if (!r)
        metrics_backend_error(s->metrics, METRICS_REDIS);
    freeReplyObject(r);
    return r ? 0 : -1;
}

/* Runs a parameterized statement. Returns the result when its status is
 * `want`, else NULL (logged; a broken connection is dropped). *sqlstate gets
 * the error's SQLSTATE when asked for. The caller PQclear()s. */
static PGresult *pg_exec(store *s, const char *sql, int n, const char *const *params,
                         ExecStatusType want, char sqlstate[6])
{
    if (sqlstate)
        sqlstate[0] = '\0';
    if (ensure_pg(s) < 0)
        return NULL;
    PGresult *res = PQexecParams(s->pg, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) == want)
        return res;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (sqlstate && state)
        snprintf(sqlstate, 6, "%s", state);
    if (!state || strcmp(state, "23505") != 0) {
        log_msg(LOG_WARN, "store", "postgresql: %s", PQerrorMessage(s->pg));
        metrics_backend_error(s->metrics, METRICS_POSTGRESQL);
    }
    PQclear(res);
    if (PQstatus(s->pg) != CONNECTION_OK) {
        PQfinish(s->pg);
        s->pg = NULL;
    }
    return NULL;
}

static int pg_command(store *s, const char *sql)
{
    PGresult *res = pg_exec(s, sql, 0, NULL, PGRES_COMMAND_OK, NULL);
    PQclear(res);
    return res ? 0 : -1;
}

/* Starts the round in Redis and tells every server about it. */
static int start_round_in_redis(store *s, int64_t item, int64_t stock, int64_t round)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], stock_s[24], round_s[24], event[64];
    keys_item_state(state, sizeof(state), item);
    keys_item_buyers(buyers, sizeof(buyers), item);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, stock);
    snprintf(round_s, sizeof(round_s), "%" PRId64, round);
    const char *keys_args[] = {state, buyers, stock_s, round_s};
    if (run_script(s, SCRIPT_ITEM_RESET, 2, 2, keys_args) < 0)
        return -1;
    snprintf(event, sizeof(event), "round %" PRId64 " %" PRId64, item, round);
    const char *pub[] = {"PUBLISH", KEYS_EVENTS, event};
    redisReply *r = redis_argv(s, 3, pub);
    freeReplyObject(r);
    return r ? 0 : -1;
}

sk_status store_ready(store *s)
{
    const char *ping[] = {"PING"};
    redisReply *r = redis_argv(s, 1, ping);
    freeReplyObject(r);
    if (!r)
        return SK_BACKEND_DOWN;
    PGresult *res = pg_exec(s, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, NULL);
    PQclear(res);
    return res ? SK_OK : SK_BACKEND_DOWN;
}

sk_status store_item_create(store *s, const item_spec *spec, item_view *out)
{
    char id_s[24], stock_s[24], state[6];
    snprintf(id_s, sizeof(id_s), "%" PRId64, spec->id);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, spec->stock);
    const char *lab = spec->lab ? "true" : "false";
    PGresult *res;
    if (spec->id > 0) {
        /* An explicit id must also move the identity past it, or a later
         * create without id would collide with it. */
        const char *p[] = {id_s, spec->name, stock_s, lab};
        res = pg_exec(s,
                      "WITH ins AS (INSERT INTO items (id, name, initial_stock, lab) "
                      "VALUES ($1, $2, $3, $4) RETURNING id, round) "
                      "SELECT id, round, setval(pg_get_serial_sequence('items', 'id'), "
                      "GREATEST(id, (SELECT coalesce(max(id), 1) FROM items))) FROM ins",
                      4, p, PGRES_TUPLES_OK, state);
    } else {
        const char *p[] = {spec->name, stock_s, lab};
        res = pg_exec(s,
                      "INSERT INTO items (name, initial_stock, lab) VALUES ($1, $2, $3) "
                      "RETURNING id, round",
                      3, p, PGRES_TUPLES_OK, state);
    }
    if (!res)
        return strcmp(state, "23505") == 0 ? SK_ITEM_EXISTS : SK_BACKEND_DOWN;
    int64_t id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    int64_t round = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    snprintf(id_s, sizeof(id_s), "%" PRId64, id);
    if (start_round_in_redis(s, id, spec->stock, round) < 0) {
        /* Without its Redis state nobody can buy the item; take the row back
         * so that the admin's retry is a clean create. */
        const char *p[] = {id_s};
        PQclear(pg_exec(s, "DELETE FROM items WHERE id = $1", 1, p, PGRES_COMMAND_OK, NULL));
        return SK_BACKEND_DOWN;
    }
    memset(out, 0, sizeof(*out));
    out->id = id;
    snprintf(out->name, sizeof(out->name), "%s", spec->name);
    out->initial_stock = out->remaining = spec->stock;
    out->lab = spec->lab;
    return SK_CREATED;
}

sk_status store_item_reset(store *s, int64_t item, int64_t stock, item_view *out)
{
    char id_s[24], stock_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, stock);
    const char *p[] = {id_s, stock_s};
    if (pg_command(s, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    /* The worker locks the item row while it inserts, so no order of the old
     * round can slip in after the DELETE below (see worker.c). */
    PGresult *res = pg_exec(s,
                            "UPDATE items SET initial_stock = $2, "
                            "round = nextval('item_rounds') WHERE id = $1 RETURNING round",
                            2, p, PGRES_TUPLES_OK, NULL);
    if (!res || PQntuples(res) == 0) {
        int found = res != NULL;
        PQclear(res);
        pg_command(s, "ROLLBACK");
        return found ? SK_NOT_FOUND : SK_BACKEND_DOWN;
    }
    int64_t round = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    res = pg_exec(s, "DELETE FROM orders WHERE item_id = $1", 1, p, PGRES_COMMAND_OK, NULL);
    PQclear(res);
    if (!res || pg_command(s, "COMMIT") < 0) {
        pg_command(s, "ROLLBACK");
        return SK_BACKEND_DOWN;
    }
    /* PostgreSQL is the truth: if Redis fails now, the old round's orders are
     * dropped by the worker and a repeated reset completes the new round. */
    if (start_round_in_redis(s, item, stock, round) < 0)
        return SK_BACKEND_DOWN;
    return store_item_get(s, item, out);
}

/* Completes a view read from PostgreSQL (id, initial stock, persisted) with
 * the remaining stock in Redis and what follows from it. */
static sk_status item_stock(store *s, item_view *out)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), out->id);
    const char *argv[] = {"HGET", state, "stock"};
    redisReply *r = redis_argv(s, 3, argv);
    if (!r)
        return SK_BACKEND_DOWN;
    /* No Redis state (a Redis that lost its data): nothing can be sold. */
    out->remaining = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    out->sold = out->initial_stock - out->remaining;
    out->queued = out->sold > out->persisted ? out->sold - out->persisted : 0;
    return SK_OK;
}

sk_status store_item_get(store *s, int64_t item, item_view *out)
{
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    const char *p[] = {id_s};
    PGresult *res = pg_exec(s,
                            "SELECT name, initial_stock, "
                            "(SELECT count(*) FROM orders WHERE item_id = $1), lab "
                            "FROM items WHERE id = $1",
                            1, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return SK_NOT_FOUND;
    }
    memset(out, 0, sizeof(*out));
    out->id = item;
    snprintf(out->name, sizeof(out->name), "%s", PQgetvalue(res, 0, 0));
    out->initial_stock = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    out->persisted = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    out->lab = PQgetvalue(res, 0, 3)[0] == 't';
    PQclear(res);
    return item_stock(s, out);
}

sk_status store_item_list(store *s, int with_lab, item_view *out, size_t cap, size_t *n)
{
    char limit[24];
    snprintf(limit, sizeof(limit), "%zu", cap);
    const char *p[] = {limit, with_lab ? "true" : "false"};
    *n = 0;
    PGresult *res = pg_exec(s,
                            "SELECT i.id, i.name, i.initial_stock, "
                            "(SELECT count(*) FROM orders o WHERE o.item_id = i.id), i.lab "
                            "FROM items i WHERE $2 OR NOT i.lab ORDER BY i.id DESC LIMIT $1",
                            2, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    size_t rows = (size_t)PQntuples(res);
    for (size_t i = 0; i < rows && i < cap; i++) {
        item_view *v = &out[i];
        memset(v, 0, sizeof(*v));
        v->id = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
        snprintf(v->name, sizeof(v->name), "%s", PQgetvalue(res, (int)i, 1));
        v->initial_stock = strtoll(PQgetvalue(res, (int)i, 2), NULL, 10);
        v->persisted = strtoll(PQgetvalue(res, (int)i, 3), NULL, 10);
        v->lab = PQgetvalue(res, (int)i, 4)[0] == 't';
    }
    PQclear(res);
    for (size_t i = 0; i < rows && i < cap; i++)
        if (item_stock(s, &out[i]) != SK_OK)
            return SK_BACKEND_DOWN;
    *n = rows < cap ? rows : cap;
    return SK_OK;
}

sk_status store_order_get(store *s, int64_t order_id, order *o, const char **status)
{
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, order_id);
    /* Pending first: the worker removes it only after its commit, so an
     * order missing here is already in PostgreSQL if it exists at all. */
    const char *argv[] = {"HGET", KEYS_PENDING, id_s};
    redisReply *r = redis_argv(s, 3, argv);
    if (!r)
        return SK_BACKEND_DOWN;
    int pending = r->type == REDIS_REPLY_STRING && order_decode(r->str, r->len, o) == 0;
    freeReplyObject(r);
    if (pending) {
        *status = "queued";
        return SK_OK;
    }
    const char *p[] = {id_s};
    PGresult *res = pg_exec(s,
                            "SELECT item_id, user_id, round, "
                            "(extract(epoch FROM created_at) * 1000)::bigint "
                            "FROM orders WHERE id = $1",
                            1, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    sk_status st = SK_NOT_FOUND;
    if (PQntuples(res) == 1) {
        o->id = order_id;
        o->item_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        o->user_id = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        o->round = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
        o->created_ms = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
        *status = "persisted";
        st = SK_OK;
    }
    PQclear(res);
    return st;
}

/* One integer-valued command, or -1 (the gauge is then left out). */
static int64_t gauge_int(store *s, const char *cmd, const char *key)
{
    const char *argv[] = {cmd, key};
    redisReply *r = redis_argv(s, 2, argv);
    int64_t n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return n;
}

typedef struct processing_sum {
    store *s;
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

void store_gauges(store *s, metrics_gauges *g)
{
    g->queue = gauge_int(s, "LLEN", KEYS_QUEUE);
    g->pending = gauge_int(s, "HLEN", KEYS_PENDING);
    g->dead = gauge_int(s, "LLEN", KEYS_DEAD_LETTER);
    /* The workers' processing lists. */
    char pattern[KEYS_MAX];
    snprintf(pattern, sizeof(pattern), "%s*", KEYS_PROCESSING_PREFIX);
    processing_sum sum = {s, 0};
    if (ensure_redis(s) < 0 ||
        backend_redis_scan(s->redis, pattern, add_processing, &sum, "store") != 0)
        g->processing = -1;
    else
        g->processing = sum.total;
}
