/* lab.c: the laboratory's plumbing, the same for every strategy. */
#include "lab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "keys.h"
#include "lab_ctx.h"
#include "lab_keys.h"
#include "lab_local.h"
#include "lab_strategy.h"
#include "log.h"

typedef struct lab_job {
    http_exchange *ex;
    const lab_strategy *strategy;
    lab_request req;
    route_id route; /* ROUTE_LAB_PURCHASE or ROUTE_LAB_AUDIT */
} lab_job;

static void *make_ctx(void *arg)
{
    app *a = arg;
    return lab_ctx_create(a->cfg, &a->scripts, a->lab_local, &a->ids, a->lab_zk);
}

static void free_ctx(void *c)
{
    lab_ctx_free(c);
}

pool *lab_pool_create(app *a)
{
    return pool_create(a->cfg->lab_threads, make_ctx, free_ctx, a);
}

static const char *verdict(const lab_strategy *s)
{
    return s->safe ? "safe" : "unsafe";
}

static const char *failure_message(sk_status st)
{
    switch (st) {
    case SK_SOLD_OUT:
        return "no stock left";
    case SK_BUSY:
        return "the lock was not won within lab_lock_wait_ms; try again";
    case SK_FENCED:
        return "the lock expired during the work and a newer holder came: nothing was sold";
    case SK_NOT_FOUND:
        return "no such item";
    case SK_BACKEND_DOWN:
        return "Redis, PostgreSQL or the strategy's lock servers are unavailable; try again";
    case SK_NOT_CONFIGURED:
        return "this strategy's servers are not configured (zookeeper_lock: set "
               "zookeeper_servers, ZooKeeper's host:port)";
    default:
        return "internal error";
    }
}

static void reply_json(http_exchange *ex, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        api_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    http_exchange_reply(ex, 200, text, strlen(text), NULL);
    free(text);
}

/* Counts a sale in {item:N}:lab:sold: the audit's number of units sold. */
static void record_sale(lab_ctx *c, const lab_request *r)
{
    char key[KEYS_MAX];
    lab_keys_sold(key, sizeof(key), r->item);
    redisReply *rep = lab_ctx_redis(c, "HINCRBY %s %s 1", key, r->strategy);
    if (!rep)
        log_msg(LOG_WARN, "lab", "%s: a sale of item %" PRId64 " was not counted", r->strategy,
                r->item);
    freeReplyObject(rep);
}

static void purchase(lab_ctx *c, lab_job *j)
{
    int64_t remaining = 0;
    c->lock_timed_out = 0;
    sk_status st = j->strategy->run(c, &j->req, &remaining);
    /* PostgreSQL gave up waiting for a lock: a lock not won, not a fault. */
    if (st == SK_BACKEND_DOWN && c->lock_timed_out)
        st = SK_BUSY;
    if (st != SK_OK) {
        api_reply_error(j->ex, st, failure_message(st));
        return;
    }
    record_sale(c, &j->req);
    char body[96];
    int n =
        snprintf(body, sizeof(body), "{\"status\":\"sold\",\"remaining\":%" PRId64 "}", remaining);
    http_exchange_reply(j->ex, 200, body, (size_t)n, NULL);
}

/* The first column of the first row of sql ($1 item, $2 strategy). */
static sk_status pg_count(lab_ctx *c, const lab_request *r, const char *sql, int64_t *out)
{
    char item_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, r->item);
    const char *params[] = {item_s, r->strategy};
    PGresult *res = lab_ctx_sql(c, sql, 2, params, PGRES_TUPLES_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    *out = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return SK_OK;
}

/* Lock keys of the strategy left in Redis: its lock, and its sub-locks
 * (<lock>:<n>, the segments). */
static sk_status redis_lock_keys(lab_ctx *c, const lab_request *r, int64_t *out)
{
    char key[KEYS_MAX], pattern[KEYS_MAX + 4];
    lab_keys_lock(key, sizeof(key), r->item, r->strategy);
    snprintf(pattern, sizeof(pattern), "%s:*", key);
    redisReply *rep = lab_ctx_redis(c, "EXISTS %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    *out = rep->integer;
    freeReplyObject(rep);
    char cursor[32] = "0";
    do {
        rep = lab_ctx_redis(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!rep)
            return SK_BACKEND_DOWN;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            freeReplyObject(rep);
            return SK_BACKEND_DOWN;
        }
        snprintf(cursor, sizeof(cursor), "%s", rep->element[0]->str);
        *out += (int64_t)rep->element[1]->elements;
        freeReplyObject(rep);
    } while (strcmp(cursor, "0") != 0);
    return SK_OK;
}

static void audit(lab_ctx *c, lab_job *j)
{
    const lab_request *r = &j->req;
    int64_t initial = 0, remaining = 0, sold = 0, pg_sales = 0, pg_locks = 0, redis_locks = 0,
            other_locks = 0;
    char key[KEYS_MAX];
    sk_status st = lab_initial_stock(c, r->item, &initial, NULL);
    if (st == SK_OK)
        st = j->strategy->remaining(c, r, &remaining);
    if (st == SK_OK) {
        lab_keys_sold(key, sizeof(key), r->item);
        redisReply *rep = lab_ctx_redis(c, "HGET %s %s", key, r->strategy);
        if (rep && rep->type == REDIS_REPLY_STRING)
            sold = strtoll(rep->str, NULL, 10);
        st = rep ? SK_OK : SK_BACKEND_DOWN;
        freeReplyObject(rep);
    }
    if (st == SK_OK)
        st = pg_count(c, r, "SELECT count(*) FROM lab_sales WHERE item_id = $1 AND strategy = $2",
                      &pg_sales);
    if (st == SK_OK)
        st = pg_count(c, r, "SELECT count(*) FROM lab_locks WHERE item_id = $1 AND strategy = $2",
                      &pg_locks);
    if (st == SK_OK)
        st = redis_lock_keys(c, r, &redis_locks);
    if (st == SK_OK && j->strategy->locks)
        st = j->strategy->locks(c, r, &other_locks);
    if (st != SK_OK) {
        api_reply_error(j->ex, st, failure_message(st));
        return;
    }
    json_t *body = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "strategy", j->strategy->name,
        "family", j->strategy->family, "verdict", verdict(j->strategy), "item", (json_int_t)r->item,
        "initial_stock", (json_int_t)initial, "remaining", (json_int_t)remaining, "sold",
        (json_int_t)sold, "oversold", (json_int_t)(sold > initial ? sold - initial : 0), "pg_sales",
        (json_int_t)pg_sales, "lock_keys", (json_int_t)(redis_locks + pg_locks + other_locks));
    reply_json(j->ex, body);
}

static void run_job(void *thread_ctx, void *arg)
{
    lab_ctx *c = thread_ctx;
    lab_job *j = arg;
    if (!c)
        api_reply_error(j->ex, SK_BACKEND_DOWN, "the laboratory has no connections");
    else if (j->route == ROUTE_LAB_AUDIT)
        audit(c, j);
    else
        purchase(c, j);
    free(j);
}

static void list(http_exchange *ex)
{
    json_t *all = json_array();
    for (size_t i = 0; all && i < lab_strategy_count(); i++) {
        const lab_strategy *s = lab_strategy_at(i);
        json_array_append_new(all, json_pack("{s:s, s:s, s:s}", "name", s->name, "family",
                                             s->family, "verdict", verdict(s)));
    }
    reply_json(ex, all ? json_pack("{s:o}", "strategies", all) : NULL);
}

void lab_handle(app *a, http_exchange *ex, const route_match *m)
{
    if (m->route == ROUTE_LAB_LIST) {
        list(ex);
        return;
    }
    lab_job job = {.ex = ex, .route = m->route};
    job.strategy = lab_strategy_find(m->name, m->name_len);
    if (!job.strategy) {
        api_reply_error(ex, SK_NOT_FOUND, "no such strategy (GET /api/v1/experiments lists them)");
        return;
    }
    const char *why = NULL;
    if (lab_request_parse(http_exchange_query(ex, "item"), http_exchange_query(ex, "user_id"),
                          http_exchange_query(ex, "delay_ms"), a->cfg->lab_delay_ms, &job.req,
                          &why) != SK_OK ||
        lab_request_fault(http_exchange_query(ex, "crash"), a->cfg->lab_faults, &job.req, &why) !=
            SK_OK) {
        api_reply_error(ex, SK_INVALID, why);
        return;
    }
    job.req.strategy = job.strategy->name;
    lab_job *j = malloc(sizeof(*j));
    if (!j) {
        api_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    *j = job;
    http_exchange_defer(ex);
    if (pool_submit(a->lab_pool, run_job, j) < 0) {
        free(j);
        api_reply_error(ex, SK_BACKEND_DOWN, "the server is stopping");
    }
}
