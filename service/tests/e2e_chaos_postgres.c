/* e2e_chaos_postgres.c: PostgreSQL crashes (immediate stop) in the middle of a
 * sale and stays down for a while. The sale goes on into Redis up to
 * max_pending_orders, then buyers get 503 queue_full; once PostgreSQL is back
 * the worker drains everything, and the books are audited: the set of order
 * ids answered 202 is the set in PostgreSQL, no item over its stock, no buyer
 * twice, and seckill-admin reconcile balances. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "keys.h"

#define TOKEN "chaos-admin-token"
#define BOUND 300
#define DOWN_MS 15000

static int port;
static pid_t server_pid, worker_pid;
static char resp[1 << 16];

static void start_system(void)
{
    harness_reset_backends();
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=chaos-pg",
                   "SECKILL_MAX_PENDING_ORDERS=300", "SECKILL_WORKER_RETRY_MAX_MS=500", NULL};
    server_pid = harness_start_server(&port, env, "chaos-pg-server.log");
    worker_pid = harness_start_worker(env, "chaos-pg-worker.log");
}

/* A test that failed while PostgreSQL was down must not leave it down for
 * the tests that follow. */
static void restore(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
    PGconn *pg = PQconnectdb(getenv("SECKILL_PG_CONNINFO"));
    int down = PQstatus(pg) != CONNECTION_OK;
    PQfinish(pg);
    if (down)
        harness_pg_restart();
}

TestSuite(chaos_postgres, .init = start_system, .fini = restore, .timeout = 180);

static int64_t create_item(int64_t stock)
{
    char body[96];
    int64_t id = 0;
    snprintf(body, sizeof(body), "{\"name\":\"chaos-pg\",\"stock\":%" PRId64 "}", stock);
    cr_assert_eq(harness_http(port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201,
                 "%s", resp);
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &id), 1);
    return id;
}

typedef struct sale {
    int64_t item;
    size_t first_user;
    int64_t *accepted; /* order ids answered 202, over every round of buyers */
    size_t naccepted;
    size_t queue_full; /* 503 queue_full */
    size_t other;      /* any other answer */
} sale;

static size_t build_purchase(void *ctx, size_t index, char *buf, size_t cap)
{
    sale *s = ctx;
    char body[48];
    int blen = snprintf(body, sizeof(body), "{\"user_id\":%zu}", s->first_user + index);
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     s->item, blen, body);
    return n > 0 ? (size_t)n : 0;
}

static void on_purchase(void *ctx, size_t index, int status, const char *body, size_t len)
{
    sale *s = ctx;
    (void)index;
    (void)len;
    const char *id = body ? strstr(body, "\"order_id\":\"") : NULL;
    if (status == 202 && id)
        s->accepted[s->naccepted++] = strtoll(id + 12, NULL, 10);
    else if (status == 503 && body && strstr(body, "\"queue_full\""))
        s->queue_full++;
    else
        s->other++;
}

/* buyers new buyers, numbered from s->first_user on. */
static void run_buyers(sale *s, size_t buyers)
{
    blast_spec spec = {.port = port,
                       .connections = 32,
                       .requests = buyers,
                       .timeout_ms = 30000,
                       .build = build_purchase,
                       .on_response = on_purchase,
                       .ctx = s};
    blast_result r;
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    s->first_user += buyers;
}

static void wait_drained(int timeout_ms)
{
    int64_t deadline = backend_mono_ms() + timeout_ms;
    for (;;) {
        redisContext *c = harness_redis();
        long long pending = harness_redis_int(c, "HLEN", KEYS_PENDING);
        long long queue = harness_redis_int(c, "LLEN", KEYS_QUEUE);
        redisFree(c);
        if (pending == 0 && queue == 0)
            return;
        cr_assert(backend_mono_ms() < deadline, "not drained: %lld pending, %lld queued", pending,
                  queue);
        usleep(50 * 1000);
    }
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

Test(chaos_postgres, postgres_down_mid_sale_fills_the_queue_to_its_bound_then_drains_every_order)
{
    enum { STOCK = 2000 };
    sale s = {.item = create_item(STOCK), .first_user = 1};
    s.accepted = calloc(STOCK, sizeof(int64_t));

    /* The sale is under way and keeping up. */
    run_buyers(&s, 200);
    cr_assert_eq(s.naccepted, 200);
    wait_drained(10000);

    harness_pg_crash();
    int64_t up_at = backend_mono_ms() + DOWN_MS;

    /* Redis goes on selling while the orders pile up, up to the bound. */
    run_buyers(&s, 1000);
    cr_log_info("PostgreSQL down: accepted %zu, queue_full %zu, other %zu", s.naccepted - 200,
                s.queue_full, s.other);
    cr_assert_eq(s.naccepted, 200 + BOUND, "accepted up to the bound, not beyond");
    cr_assert_eq(s.queue_full, 1000 - BOUND);
    cr_assert_eq(s.other, 0);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), s.item);
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "HGET %s stock", state);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_eq(atoll(r->str), STOCK - 200 - BOUND, "a refused buyer took no unit");
    freeReplyObject(r);
    cr_assert_eq(harness_redis_int(c, "HLEN", KEYS_PENDING), BOUND);
    redisFree(c);

    int64_t now = backend_mono_ms();
    if (now < up_at)
        harness_sleep_ms((int)(up_at - now));
    harness_pg_restart();
    wait_drained(20000);

    /* Room again: the sale goes on (fewer buyers than the bound, so that
     * none of them depends on how fast the worker keeps up). */
    size_t more = BOUND - 50;
    run_buyers(&s, more);
    cr_assert_eq(s.naccepted, 200 + BOUND + more,
                 "the sale did not go on after the drain: %zu accepted, %zu queue_full, %zu other",
                 s.naccepted, s.queue_full, s.other);
    wait_drained(20000);

    /* The audit. */
    PGconn *pg = harness_pg();
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT id FROM orders WHERE item_id = %" PRId64 " ORDER BY id",
             s.item);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    size_t rows = (size_t)PQntuples(res);
    cr_assert_leq(rows, STOCK, "%zu orders for %d units", rows, STOCK);
    cr_assert_eq(rows, s.naccepted, "%zu orders in PostgreSQL, %zu answered 202", rows,
                 s.naccepted);
    qsort(s.accepted, s.naccepted, sizeof(int64_t), cmp_id);
    for (size_t i = 0; i < rows; i++)
        cr_assert_eq(strtoll(PQgetvalue(res, (int)i, 0), NULL, 10), s.accepted[i],
                     "the order ids answered 202 and those in PostgreSQL differ at %zu", i);
    PQclear(res);
    snprintf(sql, sizeof(sql),
             "SELECT count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64, s.item);
    cr_assert_eq((size_t)harness_pg_int(pg, sql), rows, "a buyer got two units");
    PQfinish(pg);
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "the books do not balance:\n%s", resp);
    free(s.accepted);
    harness_stop_clean(&server_pid, "server");
    harness_stop_clean(&worker_pid, "worker");
}
