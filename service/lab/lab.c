/* lab.c: the laboratory's plumbing, the same for every strategy. */
#include "lab.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backend.h"
#include "keys.h"
#include "lab_ctx.h"
#include "lab_items.h"
#include "lab_keys.h"
#include "lab_local.h"
#include "lab_routes.h"
#include "lab_strategy.h"
#include "lab_table.h"
#include "lab_zookeeper.h"
#include "log.h"
#include "order_lock_count.h"
#include "pg_value.h"
#include "redis_reply.h"
#include "web.h"

/* The laboratory's results are a few kilobytes; anything far larger is not
 * what `make experiments` wrote. */
#define LAB_RESULTS_MAX (16u << 20)

/* The laboratory of one server process. */
typedef struct lab {
    const config *cfg;
    lab_local *local;  /* the in-process counters of the local_* strategies */
    lab_zookeeper *zk; /* the ZooKeeper session of zookeeper_lock */
    lab_items *items;  /* which items are the laboratory's own */
    pool *pool;        /* the strategies block: threads of their own */
    /* The new rounds' clean-up runs on the server's pool threads, rarely,
     * and the question whether an item is the laboratory's on its threads,
     * once an item and round: one context for both, one at a time. */
    pthread_mutex_t admin_mu;
    lab_ctx *admin;
} lab;

typedef struct lab_job {
    lab *l;
    http_exchange *ex;
    const lab_strategy *strategy;
    lab_request req;
    route_id route; /* ROUTE_LAB_PURCHASE or ROUTE_LAB_AUDIT */
} lab_job;

static void *make_ctx(void *arg)
{
    app *a = arg;
    lab *l = a->plugin.ctx;
    return lab_ctx_create(a->cfg, &a->scripts, l->local, &a->ids, l->zk);
}

static void free_ctx(void *c)
{
    if (c)
        lab_table_close_ctx(c);
    lab_ctx_free(c);
}

static const char *verdict(const lab_strategy *s)
{
    return s->safe ? "safe" : "unsafe";
}

/* Answers 200 with body, whose reference it takes (NULL: out of memory). */
static void reply_object_new(http_exchange *ex, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    http_exchange_reply_new(ex, 200, text);
}

/* Counts a sale in {item:N}:lab:sold: the audit's number of units sold. */
static void record_sale(lab_ctx *c, const lab_request *r)
{
    char key[KEYS_MAX];
    lab_keys_sold(key, sizeof(key), r->item);
    redisReply *rep = lab_ctx_redis(c, key, "HINCRBY %s %s 1", key, r->strategy);
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
        lab_status_reply(j->ex, st, st == SK_NOT_FOUND ? "no such item" : NULL);
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
    int bad = pg_value_i64(res, 0, 0, out);
    PQclear(res);
    return bad ? SK_INTERNAL : SK_OK;
}

/* Counts the keys a scan finds. */
static int count_key(void *ctx, const char *key, size_t len)
{
    (void)key;
    (void)len;
    ++*(int64_t *)ctx;
    return 0;
}

/* Lock keys of the strategy left in Redis: its lock, and its sub-locks
 * (<lock>:<n>, the segments). */
static sk_status redis_lock_keys(lab_ctx *c, const lab_request *r, int64_t *out)
{
    char key[KEYS_MAX], pattern[KEYS_MAX + 4];
    lab_keys_lock(key, sizeof(key), r->item, r->strategy);
    snprintf(pattern, sizeof(pattern), "%s:*", key);
    redisReply *rep = lab_ctx_redis(c, key, "EXISTS %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    *out = rep->integer;
    freeReplyObject(rep);
    return lab_ctx_scan(c, pattern, count_key, out) == 0 ? SK_OK : SK_BACKEND_DOWN;
}

/* The product's buyers' order locks of the item (lua_reserve takes them,
 * the worker frees them) and its orders not yet persisted: a lock that
 * stands once none is pending was left behind, which the audit reports as
 * a finding. */
static sk_status order_locks(lab_ctx *c, const lab_request *r, int64_t *locks, int64_t *pending)
{
    if (order_lock_count(c->redis, r->item, 1, locks) < 0)
        return SK_BACKEND_DOWN;
    char key[KEYS_MAX];
    keys_pending(key, sizeof(key), r->item);
    redisReply *rep = lab_ctx_redis(c, key, "HLEN %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    *pending = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    freeReplyObject(rep);
    return SK_OK;
}

/* What the audit found wrong beyond an oversell (which its figures say). */
static json_t *findings(int64_t order_locks, int64_t pending)
{
    json_t *list = json_array();
    if (list && order_locks > 0 && pending == 0) {
        char text[160];
        snprintf(text, sizeof(text),
                 "%" PRId64 " buyers' order locks left after the drain: no order of the item "
                 "is pending, yet their locks stand",
                 order_locks);
        json_array_append_new(list, json_string(text));
    }
    return list;
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
        redisReply *rep = lab_ctx_redis(c, key, "HGET %s %s", key, r->strategy);
        st = !rep                                       ? SK_BACKEND_DOWN
             : redis_reply_number_or(rep, 0, &sold) < 0 ? SK_INTERNAL
                                                        : SK_OK;
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
    int64_t buyers_locks = 0, pending = 0;
    if (st == SK_OK)
        st = order_locks(c, r, &buyers_locks, &pending);
    if (st != SK_OK) {
        lab_status_reply(j->ex, st, st == SK_NOT_FOUND ? "no such item" : NULL);
        return;
    }
    json_t *body = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "strategy",
        j->strategy->name, "family", j->strategy->family, "verdict", verdict(j->strategy), "item",
        (json_int_t)r->item, "initial_stock", (json_int_t)initial, "remaining",
        (json_int_t)remaining, "sold", (json_int_t)sold, "oversold",
        (json_int_t)(sold > initial ? sold - initial : 0), "pg_sales", (json_int_t)pg_sales,
        "lock_keys", (json_int_t)(redis_locks + pg_locks + other_locks), "order_locks",
        (json_int_t)buyers_locks, "orders_pending", (json_int_t)pending, "findings",
        findings(buyers_locks, pending));
    reply_object_new(j->ex, body);
}

/* Whether the laboratory may act on item: only an item created with "lab":
 * true, never a product item. PostgreSQL says so the first time (and after
 * each new round of the item), lab_items keeps its answer. The question
 * goes through the one connection of the laboratory's admin context, open
 * already on the instance that made the round: a lab thread that runs only
 * Redis strategies never opens a PostgreSQL connection of its own, and its
 * first purchase is not held back by one. SK_OK, SK_NOT_LAB_ITEM,
 * SK_NOT_FOUND or SK_BACKEND_DOWN. */
static sk_status lab_item(lab *l, int64_t item)
{
    uint64_t epoch;
    lab_items_kind k = lab_items_lookup(l->items, item, &epoch);
    if (k != LAB_ITEMS_UNKNOWN)
        return k == LAB_ITEMS_LAB ? SK_OK : SK_NOT_LAB_ITEM;
    pthread_mutex_lock(&l->admin_mu);
    PGresult *res =
        lab_ctx_sql_id(l->admin, "SELECT lab FROM items WHERE id = $1", item, PGRES_TUPLES_OK);
    pthread_mutex_unlock(&l->admin_mu);
    if (!res)
        return SK_BACKEND_DOWN;
    int rows = PQntuples(res);
    int is_lab = rows > 0 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (rows == 0)
        return SK_NOT_FOUND;
    lab_items_learn(l->items, item, is_lab, epoch);
    return is_lab ? SK_OK : SK_NOT_LAB_ITEM;
}

static void run_job(void *thread_ctx, void *arg)
{
    lab_ctx *c = thread_ctx;
    lab_job *j = arg;
    sk_status st;
    if (!c)
        lab_status_reply(j->ex, SK_BACKEND_DOWN, "the laboratory has no connections");
    else if ((st = lab_item(j->l, j->req.item)) != SK_OK)
        lab_status_reply(j->ex, st, st == SK_NOT_FOUND ? "no such item" : NULL);
    else if (j->route == ROUTE_LAB_AUDIT)
        audit(c, j);
    else
        purchase(c, j);
    free(j);
}

static void list(http_exchange *ex)
{
    json_t *all = json_array();
    for (size_t i = 0; all && i < lab_table_count(); i++) {
        const lab_strategy *s = lab_table_at(i);
        json_array_append_new(all, json_pack("{s:s, s:s, s:s}", "name", s->name, "family",
                                             s->family, "verdict", verdict(s)));
    }
    reply_object_new(ex, all ? json_pack("{s:o}", "strategies", all) : NULL);
}

/* GET /lab/results.json: read at every request, since `make experiments`
 * rewrites it while the server runs. A few kilobytes from the page cache:
 * read inline rather than on the pool. */
static void reply_results(lab *l, http_exchange *ex)
{
    size_t len;
    char *body = web_read_file(l->cfg->lab_results, LAB_RESULTS_MAX, &len);
    if (!body) {
        lab_status_reply(ex, SK_NOT_FOUND, "no laboratory results yet: run `make experiments`");
        return;
    }
    http_exchange_reply(ex, 200, body, len, NULL);
    free(body);
}

static void handle(void *ctx, http_exchange *ex, const route_match *m)
{
    lab *l = ctx;
    if (m->route == ROUTE_LAB_RESULTS) {
        reply_results(l, ex);
        return;
    }
    if (m->route == ROUTE_LAB_LIST) {
        list(ex);
        return;
    }
    lab_job job = {.l = l, .ex = ex, .route = m->route};
    job.strategy = lab_table_find(m->name, m->name_len);
    if (!job.strategy) {
        lab_status_reply(ex, SK_NOT_FOUND, "no such strategy (GET /api/v1/experiments lists them)");
        return;
    }
    const char *why = NULL;
    if (lab_request_parse(http_exchange_query(ex, "item"), http_exchange_query(ex, "user_id"),
                          http_exchange_query(ex, "delay_ms"), l->cfg->lab_delay_ms, &job.req,
                          &why) != SK_OK ||
        lab_request_fault(http_exchange_query(ex, "crash"), http_exchange_query(ex, "race"),
                          l->cfg->lab_faults, &job.req, &why) != SK_OK) {
        lab_status_reply(ex, SK_INVALID, why);
        return;
    }
    job.req.strategy = job.strategy->name;
    lab_job *j = malloc(sizeof(*j));
    if (!j) {
        lab_status_reply(ex, SK_INTERNAL, "out of memory");
        return;
    }
    *j = job;
    pool_submit_exchange(l->pool, ex, run_job, j);
}

/* Every lab key of the item, of every strategy, in one UNLINK. */
static sk_status clear_keys(lab *l, int64_t item)
{
    const char *names[64];
    size_t n = lab_table_count() < 64 ? lab_table_count() : 64;
    for (size_t i = 0; i < n; i++)
        names[i] = lab_table_at(i)->name;
    int argc = 0;
    char **argv = lab_keys_all(item, names, n, l->cfg->lab_segments, &argc);
    if (!argv)
        return SK_INTERNAL;
    redisReply *rep = lab_ctx_redis_argv(l->admin, argc, (const char **)argv);
    lab_keys_free_all(argv, argc);
    freeReplyObject(rep);
    return rep ? SK_OK : SK_BACKEND_DOWN;
}

/* The item's rows: its sales and lock rows go, its stock row starts anew. */
static sk_status clear_rows(lab *l, int64_t item, int64_t initial_stock)
{
    char item_s[24], stock_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, item);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, initial_stock);
    const char *p[] = {item_s, stock_s};
    static const char *const sql[] = {
        "DELETE FROM lab_sales WHERE item_id = $1",
        "DELETE FROM lab_locks WHERE item_id = $1",
        "INSERT INTO lab_stock (item_id, stock, version) VALUES ($1, $2, 0) "
        "ON CONFLICT (item_id) DO UPDATE SET stock = excluded.stock, version = 0",
    };
    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
        PGresult *res = lab_ctx_sql(l->admin, sql[i], i < 2 ? 1 : 2, p, PGRES_COMMAND_OK);
        if (!res)
            return SK_BACKEND_DOWN;
        PQclear(res);
    }
    return SK_OK;
}

/* A new round of item through this instance: everything of the item the
 * experiments left in Redis, PostgreSQL and ZooKeeper goes, so that an id
 * that comes back (an explicit one) or a reset starts the experiments anew. */
static sk_status item_round(void *ctx, int64_t item, int64_t initial_stock)
{
    lab *l = ctx;
    lab_items_forget(l->items, item);
    pthread_mutex_lock(&l->admin_mu);
    sk_status st = clear_keys(l, item);
    if (st == SK_OK)
        st = clear_rows(l, item, initial_stock);
    pthread_mutex_unlock(&l->admin_mu);
    /* This instance's counters reload at once; the others' when the round
     * announcement reaches them. */
    lab_local_forget(l->local, item);
    if (lab_zookeeper_clear(l->zk, item) < 0)
        log_msg(LOG_WARN, "lab", "new round of item %" PRId64 ": its ZooKeeper locks stay", item);
    return st;
}

/* A round began on some instance: the counters of older rounds reload. */
static void new_round(void *ctx, int64_t item, int64_t round)
{
    lab *l = ctx;
    lab_local_new_round(l->local, item, round);
    lab_items_forget(l->items, item);
}

static void resync(void *ctx)
{
    lab *l = ctx;
    lab_local_forget_all(l->local);
    lab_items_forget_all(l->items);
}

static void lab_free(void *ctx)
{
    lab *l = ctx;
    if (!l)
        return;
    pool_free(l->pool); /* its threads answer what they hold first */
    lab_ctx_free(l->admin);
    lab_zookeeper_free(l->zk); /* after the pool: its threads used it */
    lab_local_free(l->local);
    lab_items_free(l->items);
    pthread_mutex_destroy(&l->admin_mu);
    free(l);
}

int lab_plug(app *a, char *err, size_t errlen)
{
    lab *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&l->admin_mu, NULL);
    l->cfg = a->cfg;
    l->local = lab_local_create(4096);
    l->items = lab_items_create(4096);
    l->zk = lab_zookeeper_create(a->cfg);
    l->admin = lab_ctx_create(a->cfg, &a->scripts, l->local, &a->ids, l->zk);
    app_plugin p = {l, handle, item_round, new_round, resync, lab_free};
    app_plug(a, &p); /* before the pool: its threads' contexts read it */
    if (l->local && l->items && l->zk && l->admin)
        l->pool = pool_create(a->cfg->lab_threads, make_ctx, free_ctx, a);
    if (!l->pool) {
        snprintf(err, errlen, "cannot start the laboratory's threads");
        return -1; /* app_free() frees what was made */
    }
    return 0;
}
