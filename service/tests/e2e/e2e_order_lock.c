/* e2e_order_lock.c: the buyer's order lock end to end, a real server and
 * worker on the run's Redis and PostgreSQL: a buyer's twin purchase while
 * their order is being created is answered 429 in_progress and buys
 * nothing; the lock holds the order id until the order is persisted and is
 * gone after; a cancel of a still-queued order frees it; a worker killed
 * mid-batch leaves locks that its next run frees; the item's detail counts
 * the locks held for a shop's credential. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "backend.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;
/* A heartbeat of 3 s (3 sweep periods), not 15: a worker started again
 * after a crash waits out its predecessor's heartbeat before it takes its
 * id, and its orders, back. */
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-lock",
                      "SECKILL_WORKER_SWEEP_MS=1000", NULL};

HARNESS_SYSTEM_SUITE(order_lock, harness_system_start, sys, env, "e2e-lock", .timeout = 120);

static int64_t create_item(int64_t stock, int limit)
{
    return sale_create_item_with(sys.port, TOKEN, "locked", stock,
                                 "\"per_buyer_limit\":%d,\"payment_timeout_s\":600", limit);
}

/* A purchase of one unit for user; the whole response (head and body) in
 * resp. Returns its status. */
static int buy(int64_t item, int64_t user, char *resp, size_t cap)
{
    char body[64], req[512];
    int blen = snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    int n = snprintf(req, sizeof(req),
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Connection: close\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     item, blen, body);
    return harness_raw(sys.port, req, (size_t)n, 10000, resp, cap);
}

/* The value of user's order lock on item, 0 when there is none. */
static int64_t lock_of(int64_t item, int64_t user)
{
    char lock[KEYS_MAX];
    keys_order_lock(lock, sizeof(lock), item, user);
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "GET %s", lock);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    int64_t v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    redisFree(c);
    return v;
}

static int64_t pg_int(const char *fmt, int64_t a, int64_t b)
{
    char sql[256];
    snprintf(sql, sizeof(sql), fmt, a, b);
    PGconn *pg = harness_pg();
    int64_t v = harness_pg_int(pg, sql);
    PQfinish(pg);
    return v;
}

static int64_t remaining(int64_t item)
{
    char path[64], resp[4096];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
    const char *at = strstr(resp, "\"remaining\":");
    cr_assert_not_null(at, "%s", resp);
    return strtoll(at + strlen("\"remaining\":"), NULL, 10);
}

Test(order_lock, a_twin_purchase_while_the_order_is_queued_gets_429_in_progress_and_buys_nothing)
{
    enum { STOCK = 5 };
    int64_t item = create_item(STOCK, 2);
    /* The worker frozen: the order stays accepted and not yet persisted. */
    harness_freeze(sys.worker);
    char resp[4096];
    cr_assert_eq(buy(item, 11, resp, sizeof(resp)), 202, "%s", resp);
    int64_t order = sale_order_id(resp);
    cr_assert_eq(lock_of(item, 11), order, "the lock holds the order id while it is queued");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(buy(item, 11, resp, sizeof(resp)), 429, "%s", resp);
        cr_assert(strstr(resp, "\"error\":\"in_progress\""), "%s", resp);
        cr_assert(strstr(resp, "Retry-After: "), "%s", resp);
    }
    cr_assert_eq(remaining(item), STOCK - 1, "the twins bought nothing");
    static char metrics[1 << 16];
    cr_assert_eq(harness_http(sys.port, "GET", "/metrics", TOKEN, NULL, metrics, sizeof(metrics)),
                 200);
    cr_assert_eq(harness_metric(metrics, "seckill_purchases_total{outcome=\"in_progress\"}"), 3,
                 "each twin counted");
    cr_assert_eq(buy(item, 12, resp, sizeof(resp)), 202, "another buyer is not held up: %s", resp);

    cr_assert_eq(kill(sys.worker, SIGCONT), 0);
    sale_wait_drained(20000);
    cr_assert_eq(lock_of(item, 11), 0, "persisted: the lock is gone");
    cr_assert_eq(lock_of(item, 12), 0);
    cr_assert_eq(pg_int("SELECT count(*) FROM orders WHERE item_id = %" PRId64
                        " AND user_id = %" PRId64,
                        item, 11),
                 1, "one order of buyer 11");
    /* The buyer's next purchase, within the limit, goes through. */
    cr_assert_eq(buy(item, 11, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000);
    cr_assert_eq(remaining(item), STOCK - 3);
    harness_system_stop(&sys);
}

Test(order_lock, a_cancel_of_a_queued_order_frees_its_lock)
{
    int64_t item = create_item(5, 2);
    harness_freeze(sys.worker);
    char resp[4096], path[96];
    cr_assert_eq(buy(item, 21, resp, sizeof(resp)), 202, "%s", resp);
    int64_t order = sale_order_id(resp);
    cr_assert_eq(lock_of(item, 21), order);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", order);
    cr_assert_eq(harness_http(sys.port, "POST", path, NULL, "{\"user_id\":21}", resp, sizeof(resp)),
                 200, "%s", resp);
    cr_assert_eq(lock_of(item, 21), 0, "the cancel persisted the order and freed its lock");
    cr_assert_eq(buy(item, 21, resp, sizeof(resp)), 202, "the buyer may buy again: %s", resp);
    int64_t again = sale_order_id(resp);
    cr_assert_eq(lock_of(item, 21), again, "the new order's lock");
    /* The worker wakes and meets the cancelled order: it frees nothing of
     * the newer order's, then persists that one and frees its lock. */
    cr_assert_eq(kill(sys.worker, SIGCONT), 0);
    sale_wait_drained(20000);
    cr_assert_eq(lock_of(item, 21), 0);
    harness_system_stop(&sys);
}

Test(order_lock, a_worker_killed_mid_batch_leaves_locks_that_its_next_run_frees)
{
    enum { BUYERS = 20 };
    int64_t item = create_item(100, 1);
    /* Frozen while blocked on the queue: Redis still moves the first order
     * into its processing list, where it stays, unacknowledged. */
    harness_freeze(sys.worker);
    char resp[4096];
    int64_t orders[BUYERS];
    for (int i = 0; i < BUYERS; i++) {
        cr_assert_eq(buy(item, 100 + i, resp, sizeof(resp)), 202, "%s", resp);
        orders[i] = sale_order_id(resp);
    }
    cr_assert_eq(kill(sys.worker, SIGKILL), 0);
    cr_assert_eq(waitpid(sys.worker, NULL, 0), sys.worker);
    sys.worker = 0;
    for (int i = 0; i < BUYERS; i++)
        cr_assert_eq(lock_of(item, 100 + i), orders[i], "buyer %d's lock outlives the worker", i);
    cr_assert_eq(buy(item, 100, resp, sizeof(resp)), 429, "%s", resp);

    sys.worker = harness_start_worker(env, "e2e-lock-worker-2.log");
    sale_wait_drained(20000);
    for (int i = 0; i < BUYERS; i++)
        cr_assert_eq(lock_of(item, 100 + i), 0, "buyer %d's lock is freed by the next run", i);
    cr_assert_eq(pg_int("SELECT count(*) FROM orders WHERE item_id = %" PRId64
                        " AND user_id >= %" PRId64,
                        item, 100),
                 BUYERS, "every order answered 202 persisted");
    cr_assert_eq(buy(item, 100, resp, sizeof(resp)), 409, "the limit answers now: %s", resp);
    cr_assert(strstr(resp, "\"error\":\"limit_reached\""), "%s", resp);
    harness_system_stop(&sys);
}

/* The item's locks_held as GET /api/v1/items/{id} says it with token (NULL:
 * the public's view); -1 when the view has none. */
static int64_t locks_held(int64_t item, const char *token)
{
    char path[64], resp[4096];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(harness_http(sys.port, "GET", path, token, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    const char *at = strstr(resp, "\"locks_held\":");
    return at ? strtoll(at + strlen("\"locks_held\":"), NULL, 10) : -1;
}

Test(order_lock,
     the_items_detail_counts_the_locks_held_for_a_shop_credential_and_none_after_the_drain)
{
    int64_t item = create_item(10, 1);
    char body[160], resp[4096];
    snprintf(body, sizeof(body), "{\"name\":\"split\",\"stock\":40,\"segments\":4}");
    cr_assert_eq(harness_http(sys.port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)),
                 201, "%s", resp);
    int64_t split = strtoll(resp + strlen("{\"id\":"), NULL, 10);
    cr_assert_eq(locks_held(item, TOKEN), 0);

    harness_freeze(sys.worker);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(buy(item, 300 + i, resp, sizeof(resp)), 202, "%s", resp);
    /* A split item's buyers are locked at their homes, on several segments. */
    for (int i = 0; i < 12; i++)
        cr_assert_eq(buy(split, 400 + i, resp, sizeof(resp)), 202, "%s", resp);
    cr_assert_eq(locks_held(item, TOKEN), 4, "one lock a buyer whose order is queued");
    cr_assert_eq(locks_held(split, TOKEN), 12, "every segment's locks");
    cr_assert_eq(locks_held(item, NULL), -1, "the public's view, a hot read, counts none");

    cr_assert_eq(kill(sys.worker, SIGCONT), 0);
    sale_wait_drained(20000);
    cr_assert_eq(locks_held(item, TOKEN), 0, "none after the drain");
    cr_assert_eq(locks_held(split, TOKEN), 0);
    harness_system_stop(&sys);
}
