/* e2e_lab.c: the oversell laboratory against a real server, Redis and
 * PostgreSQL. 50 buyers at once on a stock of 5, with 100 ms of business
 * work inside the critical section (delay_ms) to open the race: every
 * unsafe strategy sells more than exists, every safe one exactly the stock,
 * and each one's recorded sales match its 200 answers. (A safe strategy
 * sells one unit at a time, each after its 100 ms: the stock, not the
 * buyers, sets a storm's length, and five units are as many sales to keep
 * apart as ten.) Then the documents'
 * lock failures (issue 5): work longer than the lock's TTL, an unlock by a
 * holder whose lock expired, and a Redlock with one of its servers killed. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <dirent.h>

#include <criterion/criterion.h>

#include "blast.h"
#include "clock.h"
#include "harness.h"
#include "sale.h"
#include "keys.h"
#include "lab_keys.h"
#include "lab_strategy.h"
#include "sale.h"

#define TOKEN "e2e-lab-token"
#define STOCK 5
#define BUYERS 50
#define DELAY_MS 100

static int port;
static pid_t server_pid;
static pid_t worker_pid; /* the tests that need one start it */

static const char *expected_names[] = {
    "local_unsafe",      "local_atomic_check",      "local_mutex",       "db_read_modify_write",
    "db_single_update",  "db_for_update",           "db_optimistic",     "redis_read_check_decr",
    "redis_watch",       "redis_lock_setnx_expire", "redis_lock_getset", "redis_lock",
    "redis_lock_fenced", "redis_lock_reentrant",    "redlock",           "pg_lock_table",
    "pg_advisory",       "zookeeper_lock",          "segmented",         "lua_reserve"};

/* A server on a free port with two extra "KEY=VALUE" settings (or NULL). */
static void start_server_with(char *extra1, char *extra2)
{
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, extra1, extra2, NULL};
    server_pid = harness_start_server(&port, env, "e2e-lab-server.log");
}

static void start_server(void)
{
    harness_reset_backends();
    start_server_with(NULL, NULL);
}

/* The end of every test: the server stops cleanly. */
static void stop_server(void)
{
    harness_stop_clean(&server_pid, "server");
}

static void kill_leftover(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
}

TestSuite(lab, .init = start_server, .fini = kill_leftover, .timeout = 120);

static int64_t create_item(int64_t stock)
{
    return sale_create_lab_item(port, TOKEN, "lab", stock);
}

/* One lab purchase; the answer lands in resp. */
static int buy(const char *strategy, int64_t item, int delay_ms, char *resp, size_t cap)
{
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/experiments/%s/purchase?item=%" PRId64 "&delay_ms=%d",
             strategy, item, delay_ms);
    return harness_http(port, "GET", path, NULL, NULL, resp, cap);
}

/* The audit endpoint's number for `field`. */
static int64_t audited(const char *strategy, int64_t item, const char *field)
{
    return harness_lab_audit(port, strategy, item, field);
}

/* BUYERS buyers at once on a new item of STOCK units. */
static blast_result run_storm(const char *strategy, int64_t *item)
{
    *item = create_item(STOCK);
    return harness_lab_storm(port, strategy, *item, BUYERS, DELAY_MS);
}

/* Sales as the server recorded them, read from Redis and PostgreSQL. */
static void expect_sales_recorded(const char *strategy, int64_t item, size_t sold)
{
    redisContext *c = harness_redis();
    char key[64];
    snprintf(key, sizeof(key), "{item:%" PRId64 "}:lab:sold", item);
    redisReply *r = redisCommand(c, "HGET %s %s", key, strategy);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    int64_t counted = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    redisFree(c);
    cr_expect_eq(counted, (int64_t)sold, "%s: %zu answers 200, %" PRId64 " sales counted", strategy,
                 sold, counted);
    cr_expect_eq(audited(strategy, item, "sold"), (int64_t)sold, "%s: audited sales", strategy);

    PGconn *pg = harness_pg();
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM lab_sales WHERE item_id = %" PRId64 " AND strategy = '%s'", item,
             strategy);
    int64_t rows = harness_pg_int(pg, sql);
    PQfinish(pg);
    if (strncmp(strategy, "db_", 3) == 0 || strncmp(strategy, "pg_", 3) == 0)
        cr_expect_eq(rows, (int64_t)sold, "%s: %zu answers 200, %" PRId64 " rows in lab_sales",
                     strategy, sold, rows);
    else
        cr_expect_eq(rows, 0, "%s wrote to lab_sales", strategy);
}

static void expect_oversells(const char *strategy)
{
    int64_t item;
    blast_result res = run_storm(strategy, &item);
    size_t sold = blast_count(&res, 200);
    cr_expect_gt(sold, STOCK, "%s sold %zu of %d units: the race did not show", strategy, sold,
                 STOCK);
    cr_expect_eq(sold + blast_count(&res, 409), BUYERS, "%s: 200: %zu, 409: %zu, 429: %zu",
                 strategy, sold, blast_count(&res, 409), blast_count(&res, 429));
    expect_sales_recorded(strategy, item, sold);
    cr_expect_eq(audited(strategy, item, "oversold"), (int64_t)sold - STOCK);
}

static void expect_never_oversells(const char *strategy)
{
    int64_t item;
    blast_result res = run_storm(strategy, &item);
    size_t sold = blast_count(&res, 200);
    cr_expect_eq(sold, STOCK, "%s sold %zu of %d units", strategy, sold, STOCK);
    cr_expect_eq(blast_count(&res, 409), BUYERS - STOCK, "%s: 200: %zu, 409: %zu, 429: %zu",
                 strategy, sold, blast_count(&res, 409), blast_count(&res, 429));
    expect_sales_recorded(strategy, item, sold);
    cr_expect_eq(audited(strategy, item, "remaining"), 0, "%s: stock left", strategy);
    cr_expect_eq(audited(strategy, item, "oversold"), 0, "%s", strategy);
    cr_expect_eq(audited(strategy, item, "lock_keys"), 0, "%s left a lock behind", strategy);
}

Test(lab, lab_items_stay_off_the_sale_list_unless_asked_for)
{
    int64_t item = create_item(3);
    char needle[48], resp[65536];
    snprintf(needle, sizeof(needle), "{\"id\":%" PRId64 ",", item);
    int status = harness_http(port, "GET", "/api/v1/items", NULL, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    cr_expect_null(strstr(resp, needle), "a lab item is listed as a product: %s", resp);
    status = harness_http(port, "GET", "/api/v1/items?lab=1", NULL, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    cr_expect_not_null(strstr(resp, needle), "?lab=1 leaves out item %" PRId64 ": %s", item, resp);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    status = harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    cr_expect_not_null(strstr(resp, "\"lab\":true"), "%s", resp);
    stop_server();
}

Test(lab, lua_reserve_answers_queue_full_like_the_product)
{
    /* max_pending_orders bounds the orders waiting for PostgreSQL; the
     * lab's lua_reserve makes the product's own reserve call, so it stops
     * at the same bound with the same answer (503 queue_full). */
    stop_server();
    start_server_with("SECKILL_MAX_PENDING_ORDERS=3", NULL);
    int64_t item = create_item(10);
    char resp[512];
    for (int i = 0; i < 3; i++) {
        int status = buy("lua_reserve", item, 0, resp, sizeof(resp));
        cr_assert_eq(status, 200, "purchase %d of 3 under the bound: %d %s", i + 1, status, resp);
    }
    int status = buy("lua_reserve", item, 0, resp, sizeof(resp));
    cr_expect_eq(status, 503, "over the bound: %d %s", status, resp);
    cr_expect_not_null(strstr(resp, "\"queue_full\""), "%s", resp);
    stop_server();
}

Test(lab, local_unsafe_oversells)
{
    expect_oversells("local_unsafe");
    stop_server();
}

Test(lab, local_atomic_check_oversells)
{
    expect_oversells("local_atomic_check");
    stop_server();
}

Test(lab, db_read_modify_write_oversells)
{
    expect_oversells("db_read_modify_write");
    stop_server();
}

Test(lab, redis_read_check_decr_oversells)
{
    expect_oversells("redis_read_check_decr");
    stop_server();
}

Test(lab, local_mutex_never_oversells_on_one_instance)
{
    expect_never_oversells("local_mutex");
    stop_server();
}

Test(lab, db_single_update_never_oversells)
{
    expect_never_oversells("db_single_update");
    stop_server();
}

Test(lab, db_for_update_never_oversells)
{
    expect_never_oversells("db_for_update");
    stop_server();
}

Test(lab, db_optimistic_never_oversells)
{
    expect_never_oversells("db_optimistic");
    stop_server();
}

Test(lab, redis_watch_never_oversells)
{
    expect_never_oversells("redis_watch");
    stop_server();
}

Test(lab, redis_lock_setnx_expire_never_oversells_while_nobody_crashes)
{
    expect_never_oversells("redis_lock_setnx_expire");
    stop_server();
}

Test(lab, redis_lock_getset_never_oversells_while_the_work_fits_its_expiry)
{
    expect_never_oversells("redis_lock_getset");
    stop_server();
}

Test(lab, redis_lock_never_oversells)
{
    expect_never_oversells("redis_lock");
    stop_server();
}

Test(lab, pg_lock_table_never_oversells)
{
    expect_never_oversells("pg_lock_table");
    stop_server();
}

Test(lab, pg_advisory_never_oversells)
{
    expect_never_oversells("pg_advisory");
    stop_server();
}

Test(lab, redis_lock_fenced_never_oversells)
{
    expect_never_oversells("redis_lock_fenced");
    stop_server();
}

Test(lab, redis_lock_reentrant_never_oversells)
{
    expect_never_oversells("redis_lock_reentrant");
    stop_server();
}

Test(lab, segmented_never_oversells)
{
    expect_never_oversells("segmented");
    stop_server();
}

Test(lab, lua_reserve_never_oversells_and_queues_an_order_per_sale)
{
    expect_never_oversells("lua_reserve");
    redisContext *c = harness_redis();
    cr_expect_eq(harness_redis_sum(c, "HLEN", keys_pending), STOCK,
                 "lua_reserve queues one order per sale");
    redisFree(c);
    stop_server();
}

/* The audit of strategy on item as the server answers it. */
static void audit_body(const char *strategy, int64_t item, char *resp, size_t cap)
{
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/experiments/%s/audit?item=%" PRId64, strategy, item);
    cr_assert_eq(harness_http(port, "GET", path, NULL, NULL, resp, cap), 200, "%s", resp);
}

Test(lab, lua_reserve_takes_the_products_order_locks_and_its_audit_finds_any_left_after_the_drain)
{
    int64_t item = create_item(STOCK);
    char resp[2048];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(buy("lua_reserve", item, 0, resp, sizeof(resp)), 200, "%s", resp);
    /* No worker yet: each sale's order waits, its buyer's lock stands. */
    cr_expect_eq(audited("lua_reserve", item, "order_locks"), 3, "one lock a sale in flight");
    cr_expect_eq(audited("lua_reserve", item, "orders_pending"), 3);
    audit_body("lua_reserve", item, resp, sizeof(resp));
    cr_expect_not_null(strstr(resp, "\"findings\":[]"), "in flight is no finding: %s", resp);

    char *env[] = {"SECKILL_WORKER_ID=e2e-lab", NULL};
    worker_pid = harness_start_worker(env, "e2e-lab-worker.log");
    sale_wait_drained(20000);
    cr_expect_eq(audited("lua_reserve", item, "order_locks"), 0, "the worker freed every lock");
    audit_body("lua_reserve", item, resp, sizeof(resp));
    cr_expect_not_null(strstr(resp, "\"findings\":[]"), "%s", resp);

    /* A lock left behind once nothing is pending is the audit's finding. */
    char lock[KEYS_MAX];
    keys_order_lock(lock, sizeof(lock), item, 424242);
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "SET %s 1", lock);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);
    cr_expect_eq(audited("lua_reserve", item, "order_locks"), 1);
    audit_body("lua_reserve", item, resp, sizeof(resp));
    cr_expect_not_null(strstr(resp, "order locks left after the drain"), "a finding: %s", resp);
    harness_stop_clean(&worker_pid, "worker");
    stop_server();
}

#define BUSY_STRATEGIES 10
#define BUSY_BUYERS 5

/* The storms of a_lock_or_a_retry_...: BUSY_BUYERS buyers on each strategy's
 * own item, all of them at once in one blast, answers counted per
 * strategy. */
typedef struct busy_storms {
    const char *const *strategies;
    int64_t items[BUSY_STRATEGIES];
    blast_result res[BUSY_STRATEGIES];
} busy_storms;

static size_t build_busy(void *ctx, size_t index, char *buf, size_t cap)
{
    const busy_storms *b = ctx;
    size_t k = index / BUSY_BUYERS;
    return harness_lab_buy_request(buf, cap, b->strategies[k], b->items[k], index + 1, 1000);
}

static void count_busy(void *ctx, size_t index, int status, const char *body, size_t len)
{
    (void)body;
    (void)len;
    busy_storms *b = ctx;
    b->res[index / BUSY_BUYERS].by_status[status > 0 && status < BLAST_STATUS_MAX ? status : 0]++;
}

Test(lab, a_lock_or_a_retry_not_won_within_its_wait_answers_429_busy)
{
    /* A server of its own that waits 300 ms, with one segment; the winner
     * works 1 s, so the 4 others give up (or lose their retry) first. The
     * strategies' storms run side by side: each on an item of its own, so
     * they share no lock (pg_lock_table's is a row per lock key). */
    stop_server();
    start_server_with("SECKILL_LAB_LOCK_WAIT_MS=300", "SECKILL_LAB_SEGMENTS=1");
    static const char *strategies[BUSY_STRATEGIES] = {
        "local_mutex",       "redis_lock",          "redis_lock_setnx_expire", "redis_lock_getset",
        "segmented",         "pg_lock_table",       "db_optimistic",           "redis_watch",
        "redis_lock_fenced", "redis_lock_reentrant"};
    busy_storms b = {.strategies = strategies};
    for (size_t i = 0; i < BUSY_STRATEGIES; i++)
        b.items[i] = create_item(STOCK);
    size_t n = BUSY_STRATEGIES * BUSY_BUYERS; /* a connection each; the default 60 s bound */
    blast_spec spec = {.port = port,
                       .connections = n,
                       .requests = n,
                       .build = build_busy,
                       .on_response = count_busy,
                       .ctx = &b};
    blast_result all;
    cr_assert_eq(blast_run(&spec, &all), 0, "%s", all.errstr);
    for (size_t i = 0; i < BUSY_STRATEGIES; i++) {
        const char *strategy = strategies[i];
        const blast_result *res = &b.res[i];
        cr_expect_eq(blast_count(res, 200), 1, "%s: 200: %zu", strategy, blast_count(res, 200));
        cr_expect_eq(blast_count(res, 429), 4, "%s: 429: %zu", strategy, blast_count(res, 429));
        expect_sales_recorded(strategy, b.items[i], blast_count(res, 200));
    }
    stop_server();
}

Test(lab, bad_parameters_get_400_and_unknown_strategies_or_items_404)
{
    char resp[512];
    int64_t item = create_item(STOCK);
    struct {
        const char *path;
        int status;
        const char *code;
    } cases[] = {
        {"/api/v1/experiments/redis_lock/purchase", 400, "invalid_request"},
        {"/api/v1/experiments/redis_lock/purchase?item=0", 400, "invalid_request"},
        {"/api/v1/experiments/redis_lock/purchase?item=abc", 400, "invalid_request"},
        {"/api/v1/experiments/redis_lock/purchase?item=1&user_id=-2", 400, "invalid_request"},
        {"/api/v1/experiments/redis_lock/purchase?item=1&delay_ms=-1", 400, "invalid_request"},
        {"/api/v1/experiments/redis_lock/purchase?item=1&delay_ms=10001", 400, "invalid_request"},
        {"/api/v1/experiments/redis_lock/purchase?item=1&delay_ms=x", 400, "invalid_request"},
        {"/api/v1/experiments/etcd_lock/purchase?item=1", 404, "not_found"},
        {"/api/v1/experiments/Redis_Lock/purchase?item=1", 404, "not_found"},
        {"/api/v1/experiments/etcd_lock/audit?item=1", 404, "not_found"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int status = harness_http(port, "GET", cases[i].path, NULL, NULL, resp, sizeof(resp));
        cr_expect_eq(status, cases[i].status, "%s -> %d %s", cases[i].path, status, resp);
        cr_expect(strstr(resp, cases[i].code), "%s -> %s", cases[i].path, resp);
    }
    /* An item that does not exist, for every strategy (zookeeper_lock too,
     * although it has no ZooKeeper in this suite: the item is looked up
     * before any strategy runs). */
    for (size_t i = 0; i < sizeof(expected_names) / sizeof(expected_names[0]); i++) {
        int status = buy(expected_names[i], 987654, 0, resp, sizeof(resp));
        cr_expect_eq(status, 404, "%s on a missing item: %d %s", expected_names[i], status, resp);
    }
    cr_expect_eq(harness_http(port, "DELETE", "/api/v1/experiments/redis_lock/purchase?item=1",
                              NULL, NULL, resp, sizeof(resp)),
                 405);
    /* Nothing of the above sold anything. */
    for (size_t i = 0; i < sizeof(expected_names) / sizeof(expected_names[0]); i++)
        cr_expect_eq(audited(expected_names[i], item, "sold"), 0, "%s", expected_names[i]);
    stop_server();
}

/* A product item (created without "lab": true) of stock units, with id
 * when it is positive. */
static int64_t create_product_item(int64_t id, int64_t stock)
{
    char id_field[32] = "", body[128], resp[512];
    if (id > 0)
        snprintf(id_field, sizeof(id_field), "\"id\":%" PRId64 ",", id);
    snprintf(body, sizeof(body), "{%s\"name\":\"phone\",\"stock\":%" PRId64 "}", id_field, stock);
    int status = harness_http(port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(status, 201, "create item: %d %s", status, resp);
    int64_t got = 0;
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &got), 1, "create item: %s", resp);
    return got;
}

Test(lab, a_product_item_gets_409_not_lab_item_from_every_strategy_and_sells_nothing)
{
    char resp[512], path[160];
    int64_t product = create_product_item(0, 3);
    for (size_t i = 0; i < sizeof(expected_names) / sizeof(expected_names[0]); i++) {
        const char *s = expected_names[i];
        int status = buy(s, product, 0, resp, sizeof(resp));
        cr_expect_eq(status, 409, "%s on a product item: %d %s", s, status, resp);
        cr_expect(strstr(resp, "\"error\":\"not_lab_item\""), "%s: %s", s, resp);
        snprintf(path, sizeof(path), "/api/v1/experiments/%s/audit?item=%" PRId64, s, product);
        status = harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp));
        cr_expect_eq(status, 409, "%s audit of a product item: %d %s", s, status, resp);
        cr_expect(strstr(resp, "\"error\":\"not_lab_item\""), "%s: %s", s, resp);
    }
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, product);
    cr_assert_eq(harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
    cr_expect(strstr(resp, "\"remaining\":3"), "the product's stock is untouched: %s", resp);
    /* A lab item beside it is served, up to the bound of delay_ms. */
    int64_t item = create_item(STOCK);
    cr_expect_eq(buy("local_unsafe", item, 0, resp, sizeof(resp)), 200, "%s", resp);
    cr_expect_eq(audited("local_unsafe", item, "sold"), 1);
    int status = buy("redis_lock", item, LAB_DELAY_MAX_MS + 1, resp, sizeof(resp));
    cr_expect_eq(status, 400, "delay_ms above the bound: %d %s", status, resp);
    cr_expect(strstr(resp, "delay_ms"), "%s", resp);
    stop_server();
}

Test(lab, an_item_id_that_comes_back_is_judged_by_its_new_item)
{
    char resp[512];
    /* A product item, judged (and remembered) as such... */
    int64_t id = create_product_item(0, 3);
    cr_expect_eq(buy("redis_lock", id, 0, resp, sizeof(resp)), 409, "%s", resp);
    /* ...then a clean slate, and the same id made a laboratory item. */
    harness_reset_backends();
    char body[96];
    snprintf(body, sizeof(body), "{\"id\":%" PRId64 ",\"name\":\"lab\",\"stock\":2,\"lab\":true}",
             id);
    cr_assert_eq(harness_http(port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201,
                 "%s", resp);
    cr_expect_eq(buy("redis_lock", id, 0, resp, sizeof(resp)), 200, "%s", resp);
    /* And back: a product item under that id is refused again. */
    harness_reset_backends();
    cr_assert_eq(create_product_item(id, 2), id);
    cr_expect_eq(buy("redis_lock", id, 0, resp, sizeof(resp)), 409, "%s", resp);
    stop_server();
}

Test(lab, with_lab_on_the_laboratory_runs_its_threads)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)server_pid);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    cr_expect_geq(n, 64, "lab_threads (64) threads at least: %d", n);
    stop_server();
}

Test(lab, the_list_names_every_strategy_with_its_verdict)
{
    char resp[4096];
    cr_assert_eq(harness_http(port, "GET", "/api/v1/experiments", NULL, NULL, resp, sizeof(resp)),
                 200);
    for (size_t i = 0; i < sizeof(expected_names) / sizeof(expected_names[0]); i++) {
        char entry[128];
        snprintf(entry, sizeof(entry), "\"name\":\"%s\"", expected_names[i]);
        cr_expect(strstr(resp, entry), "%s is not listed: %s", expected_names[i], resp);
    }
    cr_expect(
        strstr(resp, "{\"name\":\"local_unsafe\",\"family\":\"local\",\"verdict\":\"unsafe\"}"),
        "%s", resp);
    stop_server();
}

Test(lab, a_reset_gives_every_strategy_its_stock_back)
{
    char resp[512], body[32], path[96];
    int64_t item = create_item(2);
    const char *strategies[] = {"local_unsafe", "local_mutex", "db_for_update", "redis_watch",
                                "redis_lock",   "segmented",   "pg_lock_table"};
    size_t n = sizeof(strategies) / sizeof(strategies[0]);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(strategies[i], "pg_lock_table") == 0)
            continue; /* shares items.stock with db_for_update */
        for (int k = 0; k < 2; k++)
            cr_assert_eq(buy(strategies[i], item, 0, resp, sizeof(resp)), 200, "%s: %s",
                         strategies[i], resp);
        cr_assert_eq(buy(strategies[i], item, 0, resp, sizeof(resp)), 409, "%s: %s", strategies[i],
                     resp);
    }
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    snprintf(body, sizeof(body), "{\"stock\":5}");
    cr_assert_eq(harness_http(port, "POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s",
                 resp);

    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "KEYS {item:%" PRId64 "}:lab:*", item);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(r->elements, 0, "lab keys left after the reset: %zu", r->elements);
    freeReplyObject(r);
    redisFree(c);
    PGconn *pg = harness_pg();
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM lab_sales WHERE item_id = %" PRId64, item);
    cr_expect_eq(harness_pg_int(pg, sql), 0, "lab_sales rows left after the reset");
    PQfinish(pg);

    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(audited(strategies[i], item, "remaining"), 5, "%s", strategies[i]);
        cr_expect_eq(audited(strategies[i], item, "sold"), 0, "%s", strategies[i]);
    }
    for (size_t i = 0; i < n; i++) {
        int status = buy(strategies[i], item, 0, resp, sizeof(resp));
        cr_expect_eq(status, 200, "%s after the reset: %d %s", strategies[i], status, resp);
    }
    stop_server();
}

/* --- the documents' lock failure scenarios (issue 5) --- */

/* Answers whose body names `code` (409 sold_out and 409 fenced apart). */
typedef struct coded {
    const char *strategy;
    int64_t item;
    int delay_ms;
    const char *code;
    size_t count;
} coded;

static void count_code(void *ctx, size_t index, int status, const char *body, size_t len)
{
    (void)index;
    (void)status;
    coded *k = ctx;
    if (body && memmem(body, len, k->code, strlen(k->code)))
        k->count++;
}

static size_t build_coded_buy(void *ctx, size_t index, char *buf, size_t cap)
{
    const coded *k = ctx;
    return harness_lab_buy_request(buf, cap, k->strategy, k->item, index + 1, k->delay_ms);
}

#define EXPIRY_STOCK 2
#define EXPIRY_BUYERS 8
#define EXPIRY_TTL_MS 200
#define EXPIRY_WORK_MS 500

/* EXPIRY_BUYERS at once on EXPIRY_STOCK units, each working longer than
 * the lock's TTL. Returns the sales; *fenced counts 409 "fenced". */
static size_t storm_past_the_ttl(const char *strategy, int64_t *item, size_t *fenced)
{
    coded k = {strategy, create_item(EXPIRY_STOCK), EXPIRY_WORK_MS, "\"fenced\"", 0};
    blast_spec spec = {.port = port,
                       .connections = EXPIRY_BUYERS,
                       .requests = EXPIRY_BUYERS,
                       .timeout_ms = 30000,
                       .build = build_coded_buy,
                       .on_response = count_code,
                       .ctx = &k};
    blast_result res;
    cr_assert_eq(blast_run(&spec, &res), 0, "%s: %s", strategy, res.errstr);
    size_t sold = blast_count(&res, 200);
    cr_expect_eq(sold + blast_count(&res, 409), EXPIRY_BUYERS, "%s: 200: %zu, 409: %zu, 429: %zu",
                 strategy, sold, blast_count(&res, 409), blast_count(&res, 429));
    expect_sales_recorded(strategy, k.item, sold);
    *item = k.item;
    *fenced = k.count;
    return sold;
}

Test(lab, lock_expiry_lets_two_holders_of_redis_lock_sell_but_not_a_fenced_or_watched_lock)
{
    /* A lock of 200 ms and 500 ms of work: every holder's lock expires
     * mid-work and the next buyer takes it (documents 001 and 004's GC
     * pause). */
    stop_server();
    start_server_with("SECKILL_LAB_LOCK_TTL_MS=200", NULL);
    int64_t item;
    size_t fenced;
    size_t sold = storm_past_the_ttl("redis_lock", &item, &fenced);
    cr_expect_gt(sold, EXPIRY_STOCK, "redis_lock sold %zu of %d units past its TTL", sold,
                 EXPIRY_STOCK);
    cr_expect_eq(audited("redis_lock", item, "oversold"), (int64_t)sold - EXPIRY_STOCK);

    /* The stale holders' writes are refused: fewer sales, never too many. */
    sold = storm_past_the_ttl("redis_lock_fenced", &item, &fenced);
    cr_expect_leq(sold, EXPIRY_STOCK, "redis_lock_fenced sold %zu of %d", sold, EXPIRY_STOCK);
    cr_expect_geq(sold, 1, "the last holder, whom nobody follows, sells");
    cr_expect_geq(fenced, 1, "no write was fenced off");
    cr_expect_eq(audited("redis_lock_fenced", item, "oversold"), 0);
    cr_expect_eq(audited("redis_lock_fenced", item, "remaining"), EXPIRY_STOCK - (int64_t)sold,
                 "the stock and the sales disagree");

    /* The watchdog keeps the lock past its TTL: exactly the stock. */
    sold = storm_past_the_ttl("redis_lock_reentrant", &item, &fenced);
    cr_expect_eq(sold, EXPIRY_STOCK, "redis_lock_reentrant sold %zu of %d", sold, EXPIRY_STOCK);
    cr_expect_eq(audited("redis_lock_reentrant", item, "remaining"), 0);
    cr_expect_eq(audited("redis_lock_reentrant", item, "lock_keys"), 0);
    stop_server();
}

typedef struct buyer {
    const char *strategy;
    int64_t item;
    int delay_ms;
    int status;
    _Atomic int done;
} buyer;

/* Waits until a buyer holds strategy's Redis lock of item: a holder started
 * in a thread is inside its critical section, however slow the machine. */
static void await_redis_lock(const char *strategy, int64_t item)
{
    char key[128];
    lab_keys_lock(key, sizeof(key), item, strategy);
    redisContext *c = harness_redis();
    for (int i = 0; harness_redis_int(c, "EXISTS", key) == 0; i++) {
        cr_assert_lt(i, 1000, "%s: nobody took the lock %s in 10 s", strategy, key);
        harness_sleep_ms(10);
    }
    redisFree(c);
}

/* The same for the PostgreSQL strategies: a transaction holds an advisory
 * lock or a row lock of lab_stock. */
static void await_pg_lock(const char *strategy)
{
    PGconn *pg = harness_pg();
    const char *sql = "SELECT count(*) FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation "
                      "WHERE l.granted AND (l.locktype = 'advisory' OR "
                      "(c.relname = 'lab_stock' AND l.mode = 'RowShareLock'))";
    for (int i = 0; harness_pg_int(pg, sql) == 0; i++) {
        cr_assert_lt(i, 1000, "%s: nobody took the lock in 10 s", strategy);
        harness_sleep_ms(10);
    }
    PQfinish(pg);
}

static void *buy_in_thread(void *arg)
{
    buyer *b = arg;
    char resp[256];
    b->status = buy(b->strategy, b->item, b->delay_ms, resp, sizeof(resp));
    b->done = 1;
    return NULL;
}

/* A (1.2 s of work) takes the lock of 1 s; B asks once A holds it, gets it
 * when A's expires, at 1 s, for 1 s, and works until 2.5 s; A unlocks at
 * 1.2 s. Returns whether B's lock still exists when A has answered. */
static int lock_survives_the_stale_unlock(const char *strategy)
{
    int64_t item = create_item(STOCK);
    buyer a = {strategy, item, 1200, 0, 0}, b = {strategy, item, 1500, 0, 0};
    pthread_t ta, tb;
    cr_assert_eq(pthread_create(&ta, NULL, buy_in_thread, &a), 0);
    await_redis_lock(strategy, item);
    cr_assert_eq(pthread_create(&tb, NULL, buy_in_thread, &b), 0);
    pthread_join(ta, NULL);
    redisContext *c = harness_redis();
    char key[96];
    snprintf(key, sizeof(key), "{item:%" PRId64 "}:lab:lock:%s", item, strategy);
    long long exists = harness_redis_int(c, "EXISTS", key);
    redisFree(c);
    cr_expect_not(b.done, "%s: B answered before A", strategy);
    pthread_join(tb, NULL);
    cr_expect_eq(a.status, 200, "%s: A answered %d", strategy, a.status);
    cr_expect_eq(b.status, 200, "%s: B answered %d", strategy, b.status);
    return exists == 1;
}

Test(lab, wrong_unlock_a_plain_del_frees_the_next_holders_lock_compare_and_delete_does_not)
{
    stop_server();
    start_server_with("SECKILL_LAB_LOCK_TTL_MS=1000", NULL);
    cr_expect_not(lock_survives_the_stale_unlock("redis_lock_setnx_expire"),
                  "A's DEL left B's lock in place");
    cr_expect(lock_survives_the_stale_unlock("redis_lock"),
              "A's compare-and-delete freed B's lock");
    stop_server();
}

/* A buyer of the second server (its port), in a thread. */
typedef struct remote_buyer {
    int port;
    int64_t item;
    int delay_ms;
    int status;
    char resp[256];
} remote_buyer;

static void *buy_reentrant_in_thread(void *arg)
{
    remote_buyer *b = arg;
    char path[160];
    snprintf(path, sizeof(path),
             "/api/v1/experiments/redis_lock_reentrant/purchase?item=%" PRId64 "&delay_ms=%d",
             b->item, b->delay_ms);
    b->status = harness_http(b->port, "GET", path, NULL, NULL, b->resp, sizeof(b->resp));
    return NULL;
}

static pid_t paused_pid;

static void stop_paused(void)
{
    if (paused_pid > 0)
        kill(paused_pid, SIGCONT);
    harness_kill_leftover(&paused_pid);
    harness_kill_leftover(&server_pid);
}

/* The pause of documents 001 and 004 (a GC stop-the-world): it stops the
 * watchdog with its holder, so the lease runs out and another server takes
 * the lock and sells the last unit. When the paused holder wakes, only the
 * fencing token stops its stale write: without it, two units of one. */
Test(lab, a_holder_paused_past_its_lease_is_fenced_off_although_the_watchdog_could_not_renew,
     .fini = stop_paused)
{
    char ttl[] = "SECKILL_LAB_LOCK_TTL_MS=300";
    stop_server();
    start_server_with(ttl, NULL);
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, ttl, NULL};
    int port_a;
    paused_pid = harness_start_server(&port_a, env, "e2e-lab-paused.log");

    remote_buyer a = {port_a, create_item(1), 1500, 0, ""};
    pthread_t ta;
    cr_assert_eq(pthread_create(&ta, NULL, buy_reentrant_in_thread, &a), 0);
    await_redis_lock("redis_lock_reentrant", a.item);
    harness_sleep_ms(100); /* A has read the stock, works */
    harness_freeze(paused_pid);
    harness_sleep_ms(600); /* two leases */

    char resp[256];
    int status = buy("redis_lock_reentrant", a.item, 0, resp, sizeof(resp));
    cr_expect_eq(status, 200, "B, on the other server, could not buy: %d %s", status, resp);
    cr_assert_eq(kill(paused_pid, SIGCONT), 0);
    pthread_join(ta, NULL);
    cr_expect_eq(a.status, 409, "the paused holder answered %d %s", a.status, a.resp);
    cr_expect(strstr(a.resp, "\"fenced\"") != NULL, "%s", a.resp);
    cr_expect_eq(audited("redis_lock_reentrant", a.item, "oversold"), 0);
    cr_expect_eq(audited("redis_lock_reentrant", a.item, "remaining"), 0);
    expect_sales_recorded("redis_lock_reentrant", a.item, 1);
    harness_stop_clean(&paused_pid, "paused server");
    stop_server();
}

/* PostgreSQL's locks are waited for as long as the lab's other locks: a
 * holder working 1.5 s keeps the second buyer out, who gets 429 busy after
 * the 200 ms wait instead of a thread blocked until the holder is done. */
Test(lab, a_postgresql_lock_not_won_within_the_wait_is_busy_not_a_blocked_thread)
{
    stop_server();
    start_server_with("SECKILL_LAB_LOCK_WAIT_MS=200", NULL);
    const char *strategies[] = {"pg_advisory", "db_for_update"};
    for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++) {
        int64_t item = create_item(STOCK);
        buyer a = {strategies[i], item, 1500, 0, 0};
        pthread_t ta;
        cr_assert_eq(pthread_create(&ta, NULL, buy_in_thread, &a), 0);
        await_pg_lock(strategies[i]);
        char resp[256];
        int64_t started = clock_mono_ms();
        int status = buy(strategies[i], item, 0, resp, sizeof(resp));
        int64_t waited = clock_mono_ms() - started;
        cr_expect_eq(status, 429, "%s: the second buyer got %d %s", strategies[i], status, resp);
        cr_expect(strstr(resp, "\"busy\"") != NULL, "%s: %s", strategies[i], resp);
        cr_expect_lt(waited, 1000, "%s: the second buyer waited %lld ms", strategies[i],
                     (long long)waited);
        pthread_join(ta, NULL);
        cr_expect_eq(a.status, 200, "%s: the holder answered %d", strategies[i], a.status);
        cr_expect_eq(audited(strategies[i], item, "remaining"), STOCK - 1);
    }
    stop_server();
}

static void stop_all(void)
{
    harness_kill_leftover(&server_pid);
    harness_redlock_stop();
}

Test(lab, redlock_never_oversells_and_keeps_its_quorum_with_one_of_three_servers_killed,
     .fini = stop_all)
{
    char servers[128], setting[160];
    harness_redlock_start(servers, sizeof(servers));
    snprintf(setting, sizeof(setting), "SECKILL_REDLOCK_SERVERS=%s", servers);
    stop_server();
    start_server_with(setting, NULL);
    expect_never_oversells("redlock");
    harness_redlock_kill(1);
    expect_never_oversells("redlock");
    stop_server();
}
