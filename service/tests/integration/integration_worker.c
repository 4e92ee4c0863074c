/* integration_worker.c: seckill-worker against real Redis and PostgreSQL:
 * what it persists, what it skips, where bad payloads go, and how it gets
 * over a previous crash, a lost Redis connection, a missing database and a
 * concurrent reset. */
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "keys.h"
#include "order.h"
#include "registry.h"

#define WORKER_ID "it"
#define CREATED_MS 1767225600000LL
#define DRAIN_TIMEOUT_MS 30000

/* The worker child of the running test, so that .fini stops it even when an
 * assertion ended the test early (each test runs in its own process). */
static pid_t worker_pid;

static void stop_leftover_worker(void)
{
    if (worker_pid > 0)
        harness_stop(worker_pid, SIGKILL);
    worker_pid = 0;
}

TestSuite(worker, .fini = stop_leftover_worker, .timeout = 120);

/* Starts seckill-worker with this test's servers; extra_env may be NULL. */
static void start_worker(const char *batch_size, char *const extra_env[])
{
    char *argv[] = {"seckill-worker",
                    "--worker-id",
                    WORKER_ID,
                    "--worker-batch-size",
                    (char *)batch_size,
                    "--log-level",
                    "debug",
                    "--worker-retry-max-ms",
                    "200",
                    NULL};
    worker_pid =
        harness_spawn(SECKILL_WORKER_BIN, argv, extra_env, harness_path("integration_worker.log"));
}

/* SIGTERM, and the worker must exit 0. */
static void stop_worker(void)
{
    int status = harness_stop(worker_pid, SIGTERM);
    worker_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the worker did not exit cleanly (status %d)", status);
}

static const char *processing_key(void)
{
    static char key[KEYS_MAX];
    keys_processing(key, sizeof(key), 1, WORKER_ID);
    return key;
}

static const char *dead_key(void)
{
    static char key[KEYS_MAX];
    keys_dead(key, sizeof(key), 1);
    return key;
}

/* The orders in this worker's processing lists of every registered item. */
static long long processing_total(redisContext *c)
{
    int64_t *items;
    size_t n;
    redisReply *r = redisCommand(c, "SMEMBERS %s", KEYS_ITEMS);
    cr_assert_eq(registry_from_reply(r, &items, &n), 0);
    freeReplyObject(r);
    long long total = 0;
    for (size_t i = 0; i < n; i++) {
        char key[KEYS_MAX];
        keys_processing(key, sizeof(key), items[i], WORKER_ID);
        total += harness_redis_int(c, "LLEN", key);
    }
    free(items);
    return total;
}

/* LPUSHes a payload onto list key, a list of item 1, registered as its
 * creation would. */
static void push_payload(redisContext *c, const char *key, const char *payload)
{
    freeReplyObject(redisCommand(c, "SADD %s 1", KEYS_ITEMS));
    redisReply *r = redisCommand(c, "LPUSH %s %s", key, payload);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "LPUSH failed");
    freeReplyObject(r);
}

static void insert_item(PGconn *pg, int64_t id, int64_t round)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO items (id, name, initial_stock, round) "
             "VALUES (%lld, 'item', 100000, %lld)",
             (long long)id, (long long)round);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(res);
}

static void pg_ok(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(pg));
    PQclear(res);
}

/* Waits until the queues and the worker's processing lists are all empty:
 * then every order has been committed and acknowledged. */
static void wait_drained(redisContext *c)
{
    int64_t deadline = clock_mono_ms() + DRAIN_TIMEOUT_MS;
    while (harness_redis_sum(c, "LLEN", keys_queue) > 0 || processing_total(c) > 0) {
        cr_assert(clock_mono_ms() < deadline, "the worker did not drain the queue in %d ms",
                  DRAIN_TIMEOUT_MS);
        usleep(10 * 1000);
    }
}

Test(worker, persists_every_queued_order_once_and_leaves_both_lists_empty)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 1);
    harness_push_orders(c, 1000, 1, 2500, 1, 1, CREATED_MS);

    start_worker("100", NULL);
    wait_drained(c);
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 2500);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT id) FROM orders "
                                    "WHERE id BETWEEN 1000 AND 3499 AND item_id = 1 AND round = 1"),
                 2500);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE created_at = "
                                    "to_timestamp((1767225600000 + id - 1000) / 1000.0)"),
                 2500, "created_at is the acceptance time");
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_queue), 0);
    cr_assert_eq(harness_redis_int(c, "EXISTS", processing_key()), 0);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, persists_an_order_pushed_twice_and_the_same_units_of_a_buyer_only_once)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 1);
    char buf[256];
    order o = {42, 1, 7, 1, CREATED_MS, 2, 1, 0, 0};
    cr_assert(order_encode(&o, buf, sizeof(buf)) > 0);
    push_payload(c, harness_queue_key(1), buf);
    push_payload(c, harness_queue_key(1), buf);
    order third = {44, 1, 7, 1, CREATED_MS, 1, 3, 0, 0}; /* the buyer's third unit */
    cr_assert(order_encode(&third, buf, sizeof(buf)) > 0);
    push_payload(c, harness_queue_key(1), buf);

    start_worker("10", NULL);
    wait_drained(c);
    /* The same order once more, in a batch of its own this time, and
     * another order for the buyer's first unit (a Redis that forgot its
     * buyers would make one): both refused. */
    order_encode(&o, buf, sizeof(buf));
    push_payload(c, harness_queue_key(1), buf);
    order again = {43, 1, 7, 1, CREATED_MS, 1, 1, 0, 0};
    cr_assert(order_encode(&again, buf, sizeof(buf)) > 0);
    push_payload(c, harness_queue_key(1), buf);
    wait_drained(c);
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 2);
    cr_assert_eq(harness_pg_int(pg, "SELECT sum(quantity) FROM orders WHERE user_id = 7"), 3);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE id IN (42, 44)"), 2);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0, "duplicates are not dead letters");
    PQfinish(pg);
    redisFree(c);
}

Test(worker, keeps_orders_of_an_old_round_and_drops_those_of_unknown_items)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 2);
    harness_push_orders(c, 100, 1, 5, 1, 1, CREATED_MS);   /* round 1: before a reset */
    harness_push_orders(c, 200, 101, 5, 1, 2, CREATED_MS); /* the current round */
    harness_push_orders(c, 300, 1, 3, 99, 1, CREATED_MS);  /* no item 99 */

    start_worker("50", NULL);
    wait_drained(c);
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 10);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE round = 2 "
                                    "AND id BETWEEN 200 AND 204"),
                 5);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE round = 1 "
                                    "AND id BETWEEN 100 AND 104"),
                 5, "accepted before the reset: kept under their round");
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0, "dropped on purpose, not dead");
    PQfinish(pg);
    redisFree(c);
}

Test(worker, moves_payloads_that_are_not_orders_to_the_dead_letter_list)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 1);
    harness_push_orders(c, 1, 1, 3, 1, 1, CREATED_MS);
    push_payload(c, harness_queue_key(1), "garbage");
    push_payload(c, harness_queue_key(1), "{\"order_id\":\"5\",\"item_id\":1}");
    /* Decodes, but PostgreSQL could never store its time: it would block
     * the queue forever if it were retried. */
    order far = {6, 1, 6, 1, INT64_MAX / 2, 1, 1, 0, 0};
    char buf[256];
    order_encode(&far, buf, sizeof(buf));
    push_payload(c, harness_queue_key(1), buf);
    harness_push_orders(c, 10, 10, 3, 1, 1, CREATED_MS);

    start_worker("100", NULL);
    wait_drained(c);
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 6);
    redisReply *r = redisCommand(c, "LRANGE %s 0 -1", dead_key());
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 3, "3 dead letters, got %zu", r->elements);
    int garbage = 0, partial = 0, far_seen = 0;
    for (size_t i = 0; i < r->elements; i++) {
        garbage += strcmp(r->element[i]->str, "garbage") == 0;
        partial += strstr(r->element[i]->str, "\"item_id\":1}") != NULL;
        far_seen += strcmp(r->element[i]->str, buf) == 0;
    }
    cr_assert(garbage == 1 && partial == 1 && far_seen == 1, "the dead letters are the payloads");
    freeReplyObject(r);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, persists_orders_a_previous_run_left_in_its_processing_list_before_new_ones)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 1);
    /* A previous run with a larger batch size died holding 700 orders. */
    harness_push_orders_onto(c, processing_key(), 1, 1, 700, 1, 1, CREATED_MS);
    harness_push_orders(c, 5000, 5000, 300, 1, 1, CREATED_MS);

    start_worker("200", NULL);
    wait_drained(c);
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 1000);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE id < 5000 AND "
                                    "persisted_at <= (SELECT min(persisted_at) FROM orders "
                                    "WHERE id >= 5000)"),
                 700, "the leftovers go first");
    PQfinish(pg);
    redisFree(c);
}

/* Copies every payload of list key into item 1's pending hash under its order id,
 * as the reserve script leaves each accepted order. */
static void pend_all(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "LRANGE %s 0 -1", key);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "LRANGE %s", key);
    for (size_t i = 0; i < r->elements; i++) {
        order o;
        cr_assert_eq(order_decode(r->element[i]->str, r->element[i]->len, &o), 0);
        redisReply *h = redisCommand(c, "HSET %s %lld %b", harness_pending_key(1), (long long)o.id,
                                     r->element[i]->str, r->element[i]->len);
        cr_assert(h && h->type == REDIS_REPLY_INTEGER, "HSET %s", harness_pending_key(1));
        freeReplyObject(h);
    }
    freeReplyObject(r);
}

Test(worker, a_crash_after_commit_before_its_acknowledgement_leaves_every_order_once)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 1);
    /* What a worker killed between its COMMIT and the MULTI that removes the
     * batch from Redis leaves: 400 orders in PostgreSQL, still in its
     * processing list and still pending; and 100 more queued behind them. */
    harness_push_orders_onto(c, processing_key(), 1, 1, 400, 1, 1, CREATED_MS);
    harness_push_orders(c, 1001, 1001, 100, 1, 1, CREATED_MS);
    pend_all(c, processing_key());
    pend_all(c, harness_queue_key(1));
    pg_ok(pg, "INSERT INTO orders (id, item_id, user_id, round, created_at) "
              "SELECT g, 1, g, 1, to_timestamp((1767225600000 + g - 1) / 1000.0) "
              "FROM generate_series(1, 400) g");
    cr_assert_eq(harness_redis_sum(c, "HLEN", keys_pending), 500);

    start_worker("150", NULL);
    wait_drained(c);
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 500);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT id) FROM orders WHERE item_id = 1 AND "
                                    "((id BETWEEN 1 AND 400) OR (id BETWEEN 1001 AND 1100))"),
                 500, "every order exactly once");
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT user_id) FROM orders"), 500);
    cr_assert_eq(harness_redis_int(c, "EXISTS", processing_key()), 0, "processing list emptied");
    cr_assert_eq(harness_redis_sum(c, "HLEN", keys_pending), 0, "pending emptied");
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, an_order_row_with_a_segment_and_no_home_is_refused_by_the_table)
{
    harness_reset_backends();
    PGconn *pg = harness_pg();
    insert_item(pg, 1, 1);
    PGresult *res = PQexec(pg, "INSERT INTO orders (id, item_id, user_id, round, created_at, "
                               "segment_id) VALUES (1, 1, 1, 1, now(), 9007199254740993)");
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    cr_assert(state && strcmp(state, "23514") == 0, "a check violation: %s", PQerrorMessage(pg));
    PQclear(res);
    pg_ok(pg, "INSERT INTO orders (id, item_id, user_id, round, created_at, segment_id, home_id) "
              "VALUES (2, 1, 1, 1, now(), 9007199254740993, 1)");
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 1);
    PQfinish(pg);
}

/* The id of the worker's Redis connection, from CLIENT LIST; 0 if none. */
static long long worker_client_id(redisContext *c)
{
    redisReply *r = redisCommand(c, "CLIENT LIST");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    long long id = 0;
    const char *name = strstr(r->str, " name=seckill-worker:" WORKER_ID " ");
    if (name) {
        const char *line = name;
        while (line > r->str && line[-1] != '\n')
            line--;
        sscanf(line, "id=%lld", &id);
    }
    freeReplyObject(r);
    return id;
}

/* Waits until PostgreSQL holds at least n orders. */
static void wait_rows(PGconn *pg, int64_t n)
{
    int64_t deadline = clock_mono_ms() + DRAIN_TIMEOUT_MS;
    while (harness_pg_int(pg, "SELECT count(*) FROM orders") < n) {
        cr_assert(clock_mono_ms() < deadline, "the worker stalled");
        usleep(1000);
    }
}

/* Orders 1..n, each persisted once, and nothing else. */
static void assert_each_persisted_once(PGconn *pg, int64_t n)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(DISTINCT id) FROM orders WHERE id BETWEEN 1 AND %lld",
             (long long)n);
    cr_assert_eq(harness_pg_int(pg, sql), n, "orders 1..%lld, each once", (long long)n);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), n);
}

/* The stream tests' start: clean backends, item 1 of round 1, and STREAM_ORDERS orders
 * 1..STREAM_ORDERS queued, more than a few batches of 100 take to drain. */
enum { STREAM_ORDERS = 30000 };
static void stream_begin(redisContext **c, PGconn **pg)
{
    harness_reset_backends();
    *c = harness_redis();
    *pg = harness_pg();
    insert_item(*pg, 1, 1);
    harness_push_orders(*c, 1, 1, STREAM_ORDERS, 1, 1, CREATED_MS);
}

Test(worker, loses_nothing_when_its_redis_connection_is_killed_mid_stream)
{
    redisContext *c;
    PGconn *pg;
    stream_begin(&c, &pg);

    start_worker("100", NULL);
    int kills = 0;
    for (int part = 1; part <= 3; part++) {
        wait_rows(pg, STREAM_ORDERS * part / 4);
        long long id = worker_client_id(c);
        if (!id)
            continue;
        redisReply *r = redisCommand(c, "CLIENT KILL ID %lld", id);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        kills += (int)r->integer;
        freeReplyObject(r);
    }
    cr_assert(kills > 0, "no connection of the worker was found to kill");
    wait_drained(c);
    stop_worker();

    assert_each_persisted_once(pg, STREAM_ORDERS);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, a_sigterm_mid_stream_persists_the_batch_moved_with_the_last_acknowledgement)
{
    redisContext *c;
    PGconn *pg;
    stream_begin(&c, &pg);
    pend_all(c, harness_queue_key(1));

    /* While the queue is full, every acknowledgement moves the next batch:
     * a stop must persist that one too, not leave it behind. */
    start_worker("100", NULL);
    wait_rows(pg, STREAM_ORDERS / 10);
    stop_worker();

    int64_t rows = harness_pg_int(pg, "SELECT count(*) FROM orders");
    long long queued = harness_redis_sum(c, "LLEN", keys_queue);
    cr_assert_lt(rows, STREAM_ORDERS, "the worker finished before the stop: raise STREAM_ORDERS");
    cr_assert_eq(harness_redis_int(c, "LLEN", processing_key()), 0, "nothing left in hand");
    cr_assert_eq(rows + queued, STREAM_ORDERS, "every order persisted or still queued");
    cr_assert_eq(harness_redis_sum(c, "HLEN", keys_pending), queued,
                 "pending: exactly the orders still queued");

    start_worker("100", NULL);
    wait_drained(c);
    stop_worker();
    assert_each_persisted_once(pg, STREAM_ORDERS);
    cr_assert_eq(harness_redis_sum(c, "HLEN", keys_pending), 0);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, keeps_draining_when_redis_forgets_its_scripts_mid_stream)
{
    redisContext *c;
    PGconn *pg;
    stream_begin(&c, &pg);

    /* A Redis restart forgets the scripts: the move that rides on an
     * acknowledgement then gets NOSCRIPT, and the next fill moves by text. */
    start_worker("100", NULL);
    for (int part = 1; part <= 3; part++) {
        wait_rows(pg, STREAM_ORDERS * part / 4);
        redisReply *r = redisCommand(c, "SCRIPT FLUSH");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "SCRIPT FLUSH");
        freeReplyObject(r);
    }
    wait_drained(c);
    stop_worker();

    assert_each_persisted_once(pg, STREAM_ORDERS);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, keeps_the_old_rounds_orders_when_an_insert_races_with_a_reset)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    PGconn *reset = harness_pg();
    insert_item(pg, 1, 1);
    /* A reset under way (a new round, not yet committed) while orders of
     * the old round are drained: they are neither lost nor held up. */
    pg_ok(reset, "BEGIN");
    pg_ok(reset, "UPDATE items SET round = round + 1 WHERE id = 1");
    harness_push_orders(c, 1, 1, 20, 1, 1, CREATED_MS);
    start_worker("100", NULL);
    wait_drained(c);
    pg_ok(reset, "COMMIT");
    stop_worker();

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE round = 1"), 20);
    cr_assert_eq(harness_pg_int(pg, "SELECT round FROM items WHERE id = 1"), 2);
    PQfinish(reset);
    PQfinish(pg);
    redisFree(c);
}

/* cfg's conninfo with another database name, as a keyword string. */
static char *conninfo_with_dbname(const char *conninfo, const char *dbname)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
    cr_assert_not_null(opts, "conninfo: %s", err ? err : "?");
    size_t cap = 1024, len = 0;
    char *out = calloc(1, cap);
    cr_assert_not_null(out);
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        const char *v = strcmp(o->keyword, "dbname") == 0 ? dbname : o->val;
        if (!v || !*v)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "%s%s='%s'", len ? " " : "", o->keyword, v);
        cr_assert(len < cap, "conninfo too long");
    }
    PQconninfoFree(opts);
    return out;
}

static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Applies every migration of sql/, in order, to pg. */
static void apply_migrations(PGconn *pg)
{
    glob_t g;
    cr_assert_eq(glob(SECKILL_SOURCE_DIR "/sql/*.sql", 0, NULL, &g), 0, "no sql/*.sql");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "rb");
        cr_assert_not_null(f, "%s", g.gl_pathv[i]);
        char *text = calloc(1, 1 << 20);
        cr_assert_not_null(text);
        size_t len = fread(text, 1, (1 << 20) - 1, f);
        fclose(f);
        cr_assert(len > 0, "%s is empty", g.gl_pathv[i]);
        PGresult *res = PQexec(pg, text);
        cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s: %s", g.gl_pathv[i],
                     PQerrorMessage(pg));
        PQclear(res);
        free(text);
    }
    globfree(&g);
}

Test(worker, keeps_the_batch_while_postgresql_is_unreachable_and_persists_it_later)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    config cfg;
    harness_config(&cfg);
    PQsetNoticeProcessor(pg, ignore_notice, NULL); /* "does not exist, skipping" */
    pg_ok(pg, "DROP DATABASE IF EXISTS seckill_worker_retry");
    char *conninfo = conninfo_with_dbname(cfg.pg_conninfo, "seckill_worker_retry");
    char env[1200];
    snprintf(env, sizeof(env), "SECKILL_PG_CONNINFO=%s", conninfo);
    char *extra_env[] = {env, NULL};
    harness_push_orders(c, 1, 1, 150, 1, 1, CREATED_MS);

    /* Its database does not exist yet: every connection attempt fails. */
    start_worker("100", extra_env);
    int64_t deadline = clock_mono_ms() + 10000;
    while (harness_redis_int(c, "LLEN", processing_key()) == 0) {
        cr_assert(clock_mono_ms() < deadline, "the worker took no batch");
        usleep(10 * 1000);
    }
    usleep(500 * 1000);
    cr_assert_eq(harness_redis_int(c, "LLEN", processing_key()), 100,
                 "the batch is kept, not dropped");
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_queue), 50,
                 "no second batch is taken meanwhile");

    /* The database appears whole, item included: built under another name
     * and renamed (a worker that got in between the migrations and the item
     * would rightly skip its orders as orders of an unknown item). */
    pg_ok(pg, "DROP DATABASE IF EXISTS seckill_worker_retry_build");
    pg_ok(pg, "CREATE DATABASE seckill_worker_retry_build");
    char *build_info = conninfo_with_dbname(cfg.pg_conninfo, "seckill_worker_retry_build");
    PGconn *build = PQconnectdb(build_info);
    cr_assert_eq(PQstatus(build), CONNECTION_OK, "%s", PQerrorMessage(build));
    apply_migrations(build);
    insert_item(build, 1, 1);
    PQfinish(build);
    free(build_info);
    /* The rename waits for our own session there to have ended (a backend
     * leaves a moment after its client closed). */
    int64_t rename_deadline = clock_mono_ms() + 10000;
    for (;;) {
        PGresult *res =
            PQexec(pg, "ALTER DATABASE seckill_worker_retry_build RENAME TO seckill_worker_retry");
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        if (ok)
            break;
        cr_assert(clock_mono_ms() < rename_deadline, "rename: %s", PQerrorMessage(pg));
        usleep(20 * 1000);
    }
    PGconn *retry = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(retry), CONNECTION_OK, "%s", PQerrorMessage(retry));
    wait_drained(c);
    stop_worker();
    cr_assert_eq(harness_pg_int(retry, "SELECT count(*) FROM orders"), 150);

    PQfinish(retry);
    pg_ok(pg, "DROP DATABASE seckill_worker_retry");
    free(conninfo);
    config_free(&cfg);
    PQfinish(pg);
    redisFree(c);
}

Test(worker, stops_promptly_on_sigterm_while_postgresql_is_unreachable_and_keeps_its_batch)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    config cfg;
    harness_config(&cfg);
    char *conninfo = conninfo_with_dbname(cfg.pg_conninfo, "seckill_worker_absent");
    char env[1200];
    snprintf(env, sizeof(env), "SECKILL_PG_CONNINFO=%s", conninfo);
    char *extra_env[] = {env, NULL};
    harness_push_orders(c, 1, 1, 30, 1, 1, CREATED_MS);

    start_worker("100", extra_env);
    int64_t deadline = clock_mono_ms() + 10000;
    while (harness_redis_int(c, "LLEN", processing_key()) == 0) {
        cr_assert(clock_mono_ms() < deadline, "the worker took no batch");
        usleep(10 * 1000);
    }
    int64_t asked = clock_mono_ms();
    stop_worker();
    cr_assert_lt(clock_mono_ms() - asked, 2000, "the stop took too long");
    cr_assert_eq(harness_redis_int(c, "LLEN", processing_key()), 30,
                 "the batch waits for the next run");
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_queue), 0);

    free(conninfo);
    config_free(&cfg);
    redisFree(c);
}
