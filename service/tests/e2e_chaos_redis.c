/* e2e_chaos_redis.c: Redis dies in the middle of a sale, and Redis forgets
 * sales. The books are audited afterwards: every order answered 202 is
 * persisted exactly once, no item sells more than its stock, and
 * seckill-admin reconcile finds (and repairs) what a forgetful Redis broke. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "keys.h"

#define TOKEN "chaos-admin-token"

static int port;
static pid_t server_pid, worker_pid;
static char resp[1 << 16];

static void start_system(void)
{
    harness_reset_backends();
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=chaos", NULL};
    server_pid = harness_start_server(&port, env, "chaos-server.log");
    worker_pid = harness_start_worker(env, "chaos-worker.log");
}

/* The end of every test: both stop cleanly (no leak under valgrind). */
static void stop_system(void)
{
    harness_stop_clean(&server_pid, "server");
    harness_stop_clean(&worker_pid, "worker");
}

static void kill_leftovers(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
}

TestSuite(chaos_redis, .init = start_system, .fini = kill_leftovers, .timeout = 300);

static int64_t create_item(int64_t stock)
{
    char body[96];
    int64_t id = 0;
    snprintf(body, sizeof(body), "{\"name\":\"chaos\",\"stock\":%" PRId64 "}", stock);
    cr_assert_eq(harness_http(port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201,
                 "%s", resp);
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &id), 1);
    return id;
}

typedef struct sale {
    int64_t item;
    size_t first_user;
    int64_t *accepted; /* order ids answered 202 */
    size_t naccepted;
    size_t unavailable; /* 503: Redis was down */
    blast_spec spec;
    blast_result result;
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
    else if (status == 503)
        s->unavailable++;
}

static void *run_sale(void *arg)
{
    sale *s = arg;
    blast_run(&s->spec, &s->result);
    return NULL;
}

/* Waits until Redis holds no order between acceptance and PostgreSQL. */
static void wait_drained(void)
{
    int64_t deadline = backend_mono_ms() + 60000;
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

Test(chaos_redis, redis_killed_mid_sale_and_restarted_loses_no_accepted_order)
{
    enum { STOCK = 3000, BUYERS = 8000 };
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "CONFIG SET appendfsync always");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    sale s = {.item = create_item(STOCK), .first_user = 1};
    s.accepted = calloc(2 * BUYERS, sizeof(int64_t));
    s.spec = (blast_spec){.port = port,
                          .connections = 64,
                          .requests = BUYERS,
                          .timeout_ms = 120000,
                          .build = build_purchase,
                          .on_response = on_purchase,
                          .ctx = &s};
    pthread_t t;
    pthread_create(&t, NULL, run_sale, &s);

    /* Kill Redis once the sale is well under way. */
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), s.item);
    int64_t deadline = backend_mono_ms() + 30000;
    for (;;) {
        r = redisCommand(c, "HGET %s stock", state);
        long long left = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : STOCK;
        freeReplyObject(r);
        if (left <= STOCK - 500)
            break;
        cr_assert(backend_mono_ms() < deadline, "the sale did not start");
        usleep(1000);
    }
    redisFree(c);
    harness_redis_crash();
    usleep(500 * 1000);
    harness_redis_restart();
    pthread_join(t, NULL);
    cr_log_info("accepted %zu, answered 503 %zu, lost %zu", s.naccepted, s.unavailable,
                s.result.lost);
    cr_assert_gt(s.unavailable + s.result.lost, 0, "Redis was down and nobody noticed?");
    cr_assert_gt(s.naccepted, 500);

    /* The sale goes on once Redis is back (it forgot the scripts: the
     * server reloads them on NOSCRIPT) and sells out exactly. */
    cr_assert_eq(harness_wait_http(port, "/ready", 10000), 0);
    s.first_user = BUYERS + 1;
    s.spec.timeout_ms = 120000;
    run_sale(&s);
    cr_log_info("after the restart: accepted %zu in all", s.naccepted);
    wait_drained();

    PGconn *pg = harness_pg();
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE item_id = %" PRId64, s.item);
    int64_t rows = harness_pg_int(pg, sql);
    cr_expect_eq(rows, STOCK, "%" PRId64 " orders for %d units", rows, STOCK);
    snprintf(sql, sizeof(sql),
             "SELECT count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64, s.item);
    cr_expect_eq(harness_pg_int(pg, sql), rows, "a buyer got two units");
    /* Every 202 is in PostgreSQL. (Orders whose answer was lost with the
     * connection may be there too: the buyer polls for them.) */
    for (size_t i = 0; i < s.naccepted; i++) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE id = %" PRId64,
                 s.accepted[i]);
        cr_assert_eq(harness_pg_int(pg, sql), 1, "accepted order %" PRId64 " was lost",
                     s.accepted[i]);
    }
    PQfinish(pg);
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "the books do not balance:\n%s", resp);
    free(s.accepted);
    stop_system();
}

static int buy(int64_t item, int64_t user)
{
    char path[96], body[48];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return harness_http(port, "POST", path, NULL, body, resp, sizeof(resp));
}

Test(chaos_redis, a_redis_that_forgot_sales_is_caught_and_rebuilt_by_reconcile)
{
    int64_t item = create_item(50);
    for (int64_t user = 1; user <= 10; user++)
        cr_assert_eq(buy(item, user), 202, "%s", resp);
    wait_drained();

    /* What a Redis restarted from a snapshot taken before the sale looks
     * like: the stock is back to 50 and the buyers are gone, while the ten
     * orders are safe in PostgreSQL. Selling now would sell them twice. */
    char state[KEYS_MAX], buyers[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    keys_item_buyers(buyers, sizeof(buyers), item);
    redisContext *c = harness_redis();
    freeReplyObject(redisCommand(c, "HSET %s stock 50", state));
    freeReplyObject(redisCommand(c, "DEL %s", buyers));
    redisFree(c);

    char *check[] = {"reconcile", NULL};
    cr_assert_eq(harness_admin(check, resp, sizeof(resp)), 1, "%s", resp);
    cr_expect(strstr(resp, "would oversell"), "%s", resp);
    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_assert_eq(harness_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    cr_assert_eq(harness_admin(check, resp, sizeof(resp)), 0, "still drifting:\n%s", resp);

    char path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
    cr_expect(strstr(resp, "\"remaining\":40,"), "%s", resp);
    cr_expect_eq(buy(item, 3), 409, "buyer 3 bought again after the rebuild: %s", resp);
    cr_expect(strstr(resp, "already_purchased"), "%s", resp);
    stop_system();
}
