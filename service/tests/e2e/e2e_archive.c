/* e2e_archive.c: items apart from the sale (issue 25), on real servers: an
 * archived item leaves the lists and sells nothing on any instance (a
 * server that had it flagged sold out included, an item in segments too),
 * keeps its orders readable, lets its queued orders drain, refuses reset
 * and restock, and stays archived through `reconcile --rebuild`; an
 * unlisted item sells but is never listed (the archived and the unlisted are,
 * each when asked for); an anonymous purchase is refused
 * where the per-buyer limit is below the stock. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;
static char resp[8192];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-archive",
                      "SECKILL_ALLOW_ANONYMOUS=true", NULL};

HARNESS_SYSTEM_SUITE(archive, harness_system_start, sys, env, "e2e-archive", .timeout = 300);

/* Creates an item from the JSON members `terms` adds to name and stock; its
 * view in resp. */
static int64_t create_item(int64_t stock, const char *terms)
{
    return sale_create_item_view(sys.port, TOKEN, resp, sizeof(resp), "archive", stock, "%s",
                                 terms);
}

static int item_call(const char *method, int64_t item, const char *tail, const char *token,
                     const char *body)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "%s", item, tail);
    return harness_http(sys.port, method, path, token, body, resp, sizeof(resp));
}

static int archive(int64_t item)
{
    return item_call("DELETE", item, "", TOKEN, NULL);
}

/* A purchase by user (0: anonymous, an empty body) on the server at port. */
static int buy_on(int port, int64_t item, int64_t user)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\"}", user);
    return harness_http(port, "POST", path, NULL, user ? body : NULL, resp, sizeof(resp));
}

static int buy(int64_t item, int64_t user)
{
    return buy_on(sys.port, item, user);
}

/* Whether GET /api/v1/items<query> lists item. */
static int listed(int64_t item, const char *query)
{
    char path[64], id[40];
    snprintf(path, sizeof(path), "/api/v1/items%s", query);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    snprintf(id, sizeof(id), "{\"id\":%" PRId64 ",", item);
    return strstr(resp, id) != NULL;
}

/* The order id of a 202 in resp. */
static int64_t order_of_answer(void)
{
    return sale_order_id(resp);
}

static int64_t orders_in_pg(int64_t item)
{
    PGconn *pg = harness_pg();
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item);
    int64_t n = harness_pg_int(pg, sql);
    PQfinish(pg);
    return n;
}

Test(archive, an_archived_item_leaves_the_lists_sells_nothing_and_keeps_its_orders_readable)
{
    int64_t item = create_item(10, "\"per_buyer_limit\":2");
    int64_t other = create_item(10, "");
    cr_assert_eq(buy(item, 7), 202, "%s", resp);
    int64_t order = order_of_answer();
    sale_wait_drained(30000);
    cr_assert(listed(item, ""), "a live item is listed: %s", resp);

    cr_expect_eq(item_call("DELETE", item, "", NULL, NULL), 401, "archive needs the admin: %s",
                 resp);
    cr_expect_eq(item_call("DELETE", item, "", "not-the-token", NULL), 401, "%s", resp);
    cr_assert_eq(archive(item), 200, "%s", resp);
    cr_expect(strstr(resp, "\"archived\":true"), "%s", resp);
    cr_expect(strstr(resp, "\"state\":\"archived\""), "%s", resp);
    const char *at = strstr(resp, "\"archived_at\":\"");
    cr_assert_not_null(at, "%s", resp);
    char first_at[40];
    snprintf(first_at, sizeof(first_at), "%.24s", at + strlen("\"archived_at\":\""));

    cr_expect(!listed(item, ""), "archived, still listed: %s", resp);
    cr_expect(!listed(item, "?unlisted=1&lab=1"), "archived, listed on asking: %s", resp);
    cr_expect(listed(other, ""), "the other item left the list too: %s", resp);

    /* Its detail stays readable, so that an order's item can be read. */
    cr_assert_eq(item_call("GET", item, "", NULL, NULL), 200, "%s", resp);
    cr_expect(strstr(resp, "\"archived\":true"), "%s", resp);
    cr_expect(strstr(resp, "\"orders\":1,"), "%s", resp);

    cr_expect_eq(buy(item, 8), 404, "a purchase of an archived item: %s", resp);
    cr_expect(strstr(resp, "archived"), "the 404 says why: %s", resp);
    cr_expect_eq(buy(item, 7), 404, "%s", resp);
    cr_expect_eq(buy(other, 8), 202, "the other item still sells: %s", resp);

    char path[96];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order);
    cr_expect_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    cr_expect(strstr(resp, "\"status\":\"persisted\""), "%s", resp);
    cr_expect_eq(
        harness_http(sys.port, "GET", "/api/v1/orders?user_id=7", NULL, NULL, resp, sizeof(resp)),
        200, "%s", resp);
    snprintf(path, sizeof(path), "\"order_id\":\"%" PRId64 "\"", order);
    cr_expect(strstr(resp, path), "the buyer's list lost the order: %s", resp);

    cr_expect_eq(item_call("POST", item, "/reset", TOKEN, "{\"stock\":5}"), 409, "%s", resp);
    cr_expect(strstr(resp, "\"error\":\"archived\""), "%s", resp);
    cr_expect_eq(item_call("POST", item, "/stock", TOKEN, "{\"add\":5}"), 409, "%s", resp);
    cr_expect(strstr(resp, "\"error\":\"archived\""), "%s", resp);

    /* Twice: the same answer, archived at the first time. */
    cr_assert_eq(archive(item), 200, "%s", resp);
    cr_expect(strstr(resp, first_at), "archived_at moved from %s: %s", first_at, resp);
    cr_expect_eq(archive(999999), 404, "%s", resp);
    cr_expect_eq(buy(item, 9), 404, "%s", resp);
    harness_system_stop(&sys);
}

Test(archive, another_server_that_flagged_the_item_sold_out_answers_404_once_it_is_archived)
{
    int port_b;
    pid_t second = harness_start_server(&port_b, env, "e2e-archive-b-server.log");
    int64_t item = create_item(1, "");
    cr_assert_eq(buy_on(port_b, item, 1), 202, "%s", resp);
    cr_assert_eq(buy_on(port_b, item, 2), 409, "%s", resp);
    cr_assert(strstr(resp, "sold_out"), "%s", resp);
    cr_assert_eq(archive(item), 200, "%s", resp);
    /* The announcement reaches it within moments; from then on every
     * answer is 404, never the sold-out flag's 409. */
    int status = 0;
    for (int i = 0; i < 200 && status != 404; i++) {
        status = buy_on(port_b, item, 3);
        if (status != 404)
            harness_sleep_ms(10);
    }
    cr_assert_eq(status, 404, "%s", resp);
    for (int64_t user = 4; user < 24; user++)
        cr_expect_eq(buy_on(port_b, item, user), 404, "buyer %" PRId64 ": %s", user, resp);
    harness_stop(second, SIGTERM);
    harness_system_stop(&sys);
}

Test(archive, every_segment_of_an_archived_item_refuses_named_and_anonymous_buyers)
{
    int64_t item = create_item(40, "\"segments\":4,\"per_buyer_limit\":1000");
    for (int64_t user = 1; user <= 8; user++)
        cr_assert_eq(buy(item, user), 202, "%s", resp);
    cr_assert_eq(buy(item, 0), 202, "anonymous, where the limit is the stock: %s", resp);
    cr_assert_eq(archive(item), 200, "%s", resp);
    redisContext *c = harness_redis();
    for (int j = 0; j < 4; j++) {
        char state[KEYS_MAX];
        keys_item_state(state, sizeof(state), keys_segment(item, j, 4));
        redisReply *r = redisCommand(c, "HGET %s archived", state);
        cr_expect(r && r->type == REDIS_REPLY_STRING, "segment %d is not marked", j);
        freeReplyObject(r);
    }
    redisFree(c);
    /* A server that has not learnt the item's segments yet, and this one. */
    int port_b;
    pid_t second = harness_start_server(&port_b, env, "e2e-archive-seg-server.log");
    for (int64_t user = 1; user <= 40; user++) {
        cr_expect_eq(buy(item, user), 404, "buyer %" PRId64 ": %s", user, resp);
        cr_expect_eq(buy_on(port_b, item, user + 100), 404, "buyer %" PRId64 ": %s", user, resp);
    }
    cr_expect_eq(buy(item, 0), 404, "%s", resp);
    cr_expect_eq(buy_on(port_b, item, 0), 404, "%s", resp);
    sale_wait_drained(30000);
    cr_expect_eq(orders_in_pg(item), 9, "the orders before the archive are kept");
    harness_stop(second, SIGTERM);
    harness_system_stop(&sys);
}

Test(archive, orders_queued_before_the_archive_still_reach_postgresql)
{
    int64_t item = create_item(20, "");
    harness_stop(sys.worker, SIGTERM);
    for (int64_t user = 1; user <= 5; user++)
        cr_assert_eq(buy(item, user), 202, "%s", resp);
    cr_assert_eq(archive(item), 200, "%s", resp);
    cr_expect(strstr(resp, "\"queued\":5,"), "%s", resp);
    sys.worker = harness_start_worker(env, "e2e-archive-worker-2.log");
    sale_wait_drained(30000);
    cr_expect_eq(orders_in_pg(item), 5);
    cr_expect_eq(buy(item, 6), 404, "%s", resp);
    harness_system_stop(&sys);
}

Test(archive, reconcile_and_its_rebuild_never_put_an_archived_item_back_on_sale)
{
    int64_t item = create_item(50, "");
    for (int64_t user = 1; user <= 5; user++)
        cr_assert_eq(buy(item, user), 202, "%s", resp);
    sale_wait_drained(30000);
    cr_assert_eq(archive(item), 200, "%s", resp);

    char *check[] = {"reconcile", NULL};
    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_expect_eq(harness_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    cr_expect_eq(buy(item, 6), 404, "a rebuild put it back on sale: %s", resp);

    /* A Redis that lost the item (and its mark): still nothing to rebuild. */
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisContext *c = harness_redis();
    freeReplyObject(redisCommand(c, "DEL %s", state));
    cr_expect_eq(harness_admin(check, resp, sizeof(resp)), 0, "archived, yet judged: %s", resp);
    cr_expect_eq(harness_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    cr_expect_eq(harness_redis_int(c, "EXISTS", state), 0, "the rebuild made the item again");
    redisFree(c);
    /* A fresh server: nothing in memory says archived; Redis has nothing. */
    int port_b;
    pid_t second = harness_start_server(&port_b, env, "e2e-archive-rb-server.log");
    cr_expect_eq(buy_on(port_b, item, 7), 404, "%s", resp);
    harness_stop(second, SIGTERM);
    harness_system_stop(&sys);
}

Test(archive, an_unlisted_item_sells_but_is_listed_only_when_asked_for)
{
    int64_t item = create_item(5, "\"listed\":false");
    cr_expect(strstr(resp, "\"listed\":false"), "%s", resp);
    cr_expect(!listed(item, ""), "unlisted, yet on the list: %s", resp);
    cr_expect(listed(item, "?unlisted=1"), "%s", resp);
    cr_expect_eq(buy(item, 1), 202, "%s", resp);
    int status = harness_http(sys.port, "POST", "/api/v1/items", TOKEN,
                              "{\"name\":\"x\",\"stock\":1,\"listed\":\"no\"}", resp, sizeof(resp));
    cr_expect_eq(status, 400, "%s", resp);
    harness_system_stop(&sys);
}

/* The operator's console lists them behind a switch: ?archived=1 adds the
 * archived items to the list, marked so; anything else leaves them out. */
Test(archive, an_archived_item_is_listed_only_when_the_archived_are_asked_for)
{
    int64_t item = create_item(5, "");
    int64_t live = create_item(5, "");
    cr_assert_eq(archive(item), 200, "%s", resp);
    cr_expect(!listed(item, ""), "%s", resp);
    cr_expect(!listed(item, "?archived=yes"), "only 1 asks: %s", resp);
    cr_expect(listed(item, "?archived=1"), "%s", resp);
    cr_expect(strstr(resp, "\"archived\":true"), "%s", resp);
    cr_expect(listed(live, "?archived=1"), "the live ones stay on it: %s", resp);
    harness_system_stop(&sys);
}

Test(archive, an_anonymous_purchase_is_refused_where_the_limit_is_below_the_stock)
{
    int64_t limited = create_item(10, "\"per_buyer_limit\":2");
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(buy(limited, 0), 409, "anonymous purchase %d: %s", i, resp);
        cr_expect(strstr(resp, "\"error\":\"buyer_required\""), "%s", resp);
    }
    cr_expect_eq(buy(limited, 5), 202, "a named buyer buys: %s", resp);

    /* The limit at the stock: anonymity bypasses nothing, until a restock
     * puts the stock above the limit. */
    int64_t open = create_item(10, "\"per_buyer_limit\":10");
    cr_expect_eq(buy(open, 0), 202, "%s", resp);
    cr_assert_eq(item_call("POST", open, "/stock", TOKEN, "{\"add\":1}"), 200, "%s", resp);
    cr_expect_eq(buy(open, 0), 409, "%s", resp);
    cr_expect(strstr(resp, "buyer_required"), "%s", resp);

    /* The same over segments: each segment judges by the round's units. */
    int64_t split = create_item(8, "\"per_buyer_limit\":8,\"segments\":2");
    cr_expect_eq(buy(split, 0), 202, "%s", resp);
    cr_assert_eq(item_call("POST", split, "/stock", TOKEN, "{\"add\":1}"), 200, "%s", resp);
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(buy(split, 0), 409, "anonymous purchase %d after the restock: %s", i, resp);
        cr_expect(strstr(resp, "buyer_required"), "%s", resp);
    }
    int64_t big = create_item(4000, "\"per_buyer_limit\":1000,\"segments\":4");
    cr_expect_eq(buy(big, 0), 409, "1000 of 4000 a buyer: %s", resp);
    harness_system_stop(&sys);
}
