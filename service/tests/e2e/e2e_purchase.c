/* e2e_purchase.c: the production path end to end: a real server and worker
 * on the run's Redis and PostgreSQL, concurrent buyers, then an audit of the
 * books (answers 202 == orders persisted == units that existed). */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "blast.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;

static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e", NULL};
HARNESS_SYSTEM_SUITE(purchase, harness_system_start, sys, env, "e2e", .timeout = 300);

static int64_t create_item(const char *name, int64_t stock)
{
    return sale_create_item(sys.port, TOKEN, name, stock);
}

static int buy(int64_t item, int64_t user, char *resp, size_t cap)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return harness_http(sys.port, "POST", path, NULL, body, resp, cap);
}

/* Waits until PostgreSQL holds `rows` orders of item and nothing of it is
 * left between Redis and PostgreSQL. */
static void wait_drained(PGconn *pg, int64_t item, int64_t rows)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item);
    redisContext *c = harness_redis();
    int64_t deadline = clock_mono_ms() + 60000, n = -1, pending = -1;
    while (clock_mono_ms() < deadline) {
        n = harness_pg_int(pg, sql);
        pending = harness_redis_sum(c, "HLEN", keys_pending);
        if (n >= rows && pending == 0)
            break;
        usleep(50 * 1000);
    }
    redisFree(c);
    cr_assert_eq(n, rows, "orders persisted: %" PRId64 ", expected %" PRId64, n, rows);
    cr_assert_eq(pending, 0, "orders still pending in Redis: %" PRId64, pending);
}

Test(purchase, a_storm_of_buyers_sells_exactly_the_stock_and_every_accepted_order_persists_once)
{
    enum { STOCK = 1000, REQUESTS = 20000, CONNECTIONS = 200 };
    sale s;
    sale_init(&s, sys.port, create_item("storm", STOCK), REQUESTS, CONNECTIONS, 1, REQUESTS);
    cr_assert_eq(sale_run(&s), 0, "load: %s", s.result.errstr);

    cr_expect_eq(s.naccepted, STOCK, "answered 202: %zu", s.naccepted);
    cr_expect_eq(s.sold_out, REQUESTS - STOCK, "answered 409 sold_out: %zu", s.sold_out);
    cr_expect_eq(s.other + s.unavailable + s.queue_full, 0, "other answers");

    PGconn *pg = harness_pg();
    wait_drained(pg, s.item, STOCK);
    /* The set of ids answered 202 is exactly the set in PostgreSQL. */
    sale_assert_exactly_persisted(&s, pg);
    /* Each order's lock went with its acknowledgement: none is left. */
    redisContext *c = harness_redis();
    redisReply *locks = redisCommand(c, "KEYS seckill:{item:*}:lock:*");
    cr_assert(locks && locks->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(locks->elements, 0, "order locks left after the drain: %zu", locks->elements);
    freeReplyObject(locks);
    redisFree(c);

    char resp[2048], path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, s.item);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
    cr_expect(strstr(resp, "\"remaining\":0,") && strstr(resp, "\"sold\":1000,") &&
                  strstr(resp, "\"persisted\":1000"),
              "item detail: %s", resp);
    /* The black-box audit's figure (make load's): the shop's view of the
     * item counts its order locks, none left. */
    cr_assert_eq(harness_http(sys.port, "GET", path, TOKEN, NULL, resp, sizeof(resp)), 200);
    cr_expect(strstr(resp, "\"locks_held\":0"), "the shop's view of the item: %s", resp);
    PQfinish(pg);
    sale_free(&s);
    harness_system_stop(&sys);
}

Test(purchase, a_repeat_buyer_gets_409_limit_reached)
{
    char resp[512];
    int64_t item = create_item("repeat", 10);
    cr_assert_eq(buy(item, 7, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000); /* persisted: the order lock is gone, the limit answers */
    cr_assert_eq(buy(item, 7, resp, sizeof(resp)), 409, "%s", resp);
    cr_expect(strstr(resp, "\"limit_reached\""), "%s", resp);
    harness_system_stop(&sys);
}

static size_t build_same_buyer(void *ctx, size_t index, char *buf, size_t cap)
{
    (void)index;
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/purchase?user_id=42 HTTP/1.1\r\n"
                     "Host: t\r\nContent-Length: 0\r\n\r\n",
                     *(int64_t *)ctx);
    return n > 0 ? (size_t)n : 0;
}

Test(purchase, one_buyer_pressing_buy_on_many_connections_at_once_gets_one_unit)
{
    int64_t item = create_item("eager", 100);
    blast_spec spec = {.port = sys.port,
                       .connections = 50,
                       .requests = 500,
                       .timeout_ms = 30000,
                       .build = build_same_buyer,
                       .ctx = &item};
    blast_result res;
    cr_assert_eq(blast_run(&spec, &res), 0, "load: %s", res.errstr);
    cr_expect_eq(blast_count(&res, 202), 1);
    cr_expect_eq(blast_count(&res, 409) + blast_count(&res, 429), 499, "409: %zu, 429: %zu",
                 blast_count(&res, 409), blast_count(&res, 429));
    PGconn *pg = harness_pg();
    wait_drained(pg, item, 1);
    PQfinish(pg);
    harness_system_stop(&sys);
}

Test(purchase, bad_requests_get_clear_4xx_and_change_nothing)
{
    char resp[512];
    int64_t item = create_item("guarded", 5);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    struct {
        const char *body;
        int status;
    } cases[] = {
        {"{bad json", 400},
        {"[1,2]", 400},
        {"{\"user_id\":\"7x\"}", 400},
        {"{\"user_id\":7,\"quantity\":2}", 409}, /* over the default limit of one */
        {"{\"user_id\":-1}", 400},
        {"{\"user_id\":0}", 400},
        {"{\"user_id\":1.5}", 400},
        {"{\"user_id\":99999999999999999999}", 400},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int status = harness_http(sys.port, "POST", path, NULL, cases[i].body, resp, sizeof(resp));
        cr_expect_eq(status, cases[i].status, "%s -> %d %s", cases[i].body, status, resp);
        cr_expect(cases[i].status != 400 || strstr(resp, "\"error\":\"invalid_request\""),
                  "%s -> %s", cases[i].body, resp);
    }
    cr_expect_eq(buy(987654, 1, resp, sizeof(resp)), 404, "unknown item: %s", resp);
    cr_expect_eq(harness_http(sys.port, "POST", "/api/v1/items/abc/purchase", NULL, "{}", resp,
                              sizeof(resp)),
                 404);
    cr_expect_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 405);
    cr_expect_eq(harness_http(sys.port, "POST", "/api/v1/items", NULL,
                              "{\"name\":\"x\",\"stock\":1}", resp, sizeof(resp)),
                 401);
    cr_expect_eq(harness_http(sys.port, "POST", "/api/v1/items", "wrong",
                              "{\"name\":\"x\",\"stock\":1}", resp, sizeof(resp)),
                 401);
    cr_expect_eq(harness_http(sys.port, "POST", "/api/v1/items", TOKEN, "{\"name\":\"x\"}", resp,
                              sizeof(resp)),
                 400);
    /* Nothing above sold anything. */
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
    cr_expect(strstr(resp, "\"remaining\":5,"), "%s", resp);
    harness_system_stop(&sys);
}

Test(purchase, a_reset_starts_a_new_round_on_a_sold_out_item)
{
    char resp[512], path[96];
    int64_t item = create_item("rounds", 1);
    cr_assert_eq(buy(item, 1, resp, sizeof(resp)), 202, "%s", resp);
    cr_assert_eq(buy(item, 2, resp, sizeof(resp)), 409, "%s", resp); /* sets the flag */
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"stock\":2}", resp, sizeof(resp)),
                 200, "%s", resp);
    /* The flag is cleared by the announcement, which travels by pub/sub. */
    int status = 0;
    for (int i = 0; i < 100 && status != 202; i++) {
        status = buy(item, 1, resp, sizeof(resp));
        if (status != 202)
            usleep(20 * 1000);
    }
    cr_assert_eq(status, 202, "buyer 1 again in the new round: %s", resp);
    PGconn *pg = harness_pg();
    wait_drained(pg, item, 2); /* the first round's order is kept */
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders o JOIN items i ON i.id = o.item_id "
             "WHERE o.item_id = %" PRId64 " AND o.round = i.round",
             item);
    cr_expect_eq(harness_pg_int(pg, sql), 1, "the order is of the new round");
    PQfinish(pg);
    harness_system_stop(&sys);
}

Test(purchase, an_order_can_be_followed_until_it_is_persisted)
{
    char resp[512], path[96];
    int64_t item = create_item("followed", 3);
    cr_assert_eq(buy(item, 5, resp, sizeof(resp)), 202, "%s", resp);
    const char *id = strstr(resp, "\"order_id\":\"");
    cr_assert_not_null(id);
    snprintf(path, sizeof(path), "/api/v1/orders/%lld", strtoll(id + 12, NULL, 10));
    int persisted = 0;
    for (int i = 0; i < 200 && !persisted; i++) {
        cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s",
                     resp);
        persisted = strstr(resp, "\"persisted\"") != NULL;
        cr_assert(persisted || strstr(resp, "\"queued\""), "%s", resp);
        if (!persisted)
            usleep(20 * 1000);
    }
    cr_expect(persisted, "never persisted: %s", resp);
    cr_expect(strstr(resp, "\"user_id\":\"5\""), "the id as a string: %s", resp);
    cr_expect_eq(
        harness_http(sys.port, "GET", "/api/v1/orders/12345", NULL, NULL, resp, sizeof(resp)), 404);
    harness_system_stop(&sys);
}
