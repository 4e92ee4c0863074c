/* e2e_instances.c: two servers behind nginx (round robin), as a shop runs
 * several, one Redis, PostgreSQL and worker behind them. The sale must hold
 * on every instance whichever one a buyer reaches: the window, the per-buyer
 * limit across instances, exactly the stock sold through the balancer,
 * sold out everywhere, a restock made through one and sold through the
 * other, a cancellation through one whose unit the other sells again. The
 * books are audited in PostgreSQL. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "blast.h"
#include "harness.h"
#include "rfc3339.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"
#define STOCK 100
#define LIMIT 2
#define STORM_BUYERS 600
#define RESTOCK 5

static harness_system sys; /* server A and the worker */
static pid_t second;       /* server B */
static int port_b, lb;     /* B's port, nginx's */
static char resp[4096];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-instances", NULL};

static void start_all(void)
{
    harness_system_start(&sys, env, "e2e-instances-a");
    second = harness_start_server(&port_b, env, "e2e-instances-b-server.log");
    int ports[] = {sys.port, port_b};
    lb = harness_nginx_start(ports, 2);
}

static void kill_leftovers(void)
{
    harness_nginx_stop();
    harness_kill_leftover(&second);
    harness_system_kill(&sys);
}

TestSuite(instances, .init = start_all, .fini = kill_leftovers, .timeout = 300);

static int64_t member(const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *at = strstr(resp, key);
    cr_assert_not_null(at, "no %s in %s", name, resp);
    if (at[strlen(key)] == '"')
        at++; /* ids are strings */
    return strtoll(at + strlen(key), NULL, 10);
}

static int has(const char *needle)
{
    return strstr(resp, needle) != NULL;
}

static int buy_on(int port, int64_t item, int64_t user)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\"}", user);
    return harness_http(port, "POST", path, NULL, body, resp, sizeof(resp));
}

/* Buys on port for new buyers from *user on until one is answered 202, for up
 * to timeout_ms (an announcement from the other instance is on its way).
 * Returns the order id. */
static int64_t buy_until_queued(int port, int64_t item, int64_t *user, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        int status = buy_on(port, item, (*user)++);
        if (status == 202)
            return member("order_id");
        cr_assert_eq(status, 409, "%s", resp);
        cr_assert(has("\"sold_out\""), "%s", resp);
        harness_sleep_ms(20);
    }
    cr_assert_fail("no unit came back on sale on port %d within %d ms", port, timeout_ms);
    return 0;
}

static void assert_sold_out_everywhere(int64_t item, int64_t user)
{
    int ports[] = {sys.port, port_b, lb};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(buy_on(ports[i], item, user + i), 409, "port %d: %s", ports[i], resp);
        cr_assert(has("\"sold_out\""), "port %d: %s", ports[i], resp);
    }
}

typedef struct storm {
    int64_t item;
    int64_t first_user;
} storm;

static size_t build_purchase(void *ctx, size_t index, char *buf, size_t cap)
{
    const storm *s = ctx;
    char body[64];
    int blen = snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\"}",
                        s->first_user + (int64_t)index);
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     s->item, blen, body);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

Test(instances, a_sale_holds_on_every_instance_behind_nginx)
{
    /* An item whose sale opens in 2 s, created through the balancer. */
    int64_t starts = clock_wall_ms() + 2000;
    char at[RFC3339_MAX], body[256];
    cr_assert_gt(rfc3339_format(starts, at, sizeof(at)), 0);
    snprintf(
        body, sizeof(body),
        "{\"name\":\"two instances\",\"stock\":%d,\"per_buyer_limit\":%d,\"starts_at\":\"%s\"}",
        STOCK, LIMIT, at);
    cr_assert_eq(harness_http(lb, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201,
                 "%s", resp);
    int64_t item = member("id");

    /* Before the start: refused by both, however reached. */
    int ports[] = {sys.port, port_b, lb, lb, lb, lb};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(buy_on(ports[i], item, 1 + i), 409, "port %d: %s", ports[i], resp);
        cr_assert(has("\"not_started\""), "port %d: %s", ports[i], resp);
    }
    while (clock_wall_ms() < starts + 50)
        harness_sleep_ms(20);

    /* The buyer's order lock holds on every instance while the order is
     * being created; the limit counts the units bought on every instance. */
    cr_assert_eq(buy_on(sys.port, item, 1), 202, "%s", resp);
    int64_t first_order = member("order_id");
    int status = buy_on(port_b, item, 1);
    if (status == 429) /* the order not persisted yet: its lock stood */
        cr_assert(has("\"in_progress\""), "%s", resp);
    else
        cr_assert_eq(status, 202, "%s", resp);
    sale_wait_drained(30000);
    if (status == 429)
        cr_assert_eq(buy_on(port_b, item, 1), 202, "%s", resp);
    sale_wait_drained(30000);
    cr_assert_eq(buy_on(lb, item, 1), 409, "%s", resp);
    cr_assert(has("\"limit_reached\""), "%s", resp);

    /* A storm through the balancer sells exactly what is left. */
    storm s = {item, 1000};
    blast_spec spec = {.port = lb,
                       .connections = 64,
                       .requests = STORM_BUYERS,
                       .timeout_ms = 60000,
                       .build = build_purchase,
                       .ctx = &s};
    blast_result r;
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    cr_assert_eq(blast_count(&r, 202), STOCK - LIMIT, "202: %zu", blast_count(&r, 202));
    cr_assert_eq(blast_count(&r, 409), STORM_BUYERS - (STOCK - LIMIT));
    int64_t user = 10000;
    assert_sold_out_everywhere(item, user);
    user += 3;

    /* A restock through A is sold through B (its sold-out flag was of the
     * older stock), and only that. */
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    snprintf(body, sizeof(body), "{\"add\":%d}", RESTOCK);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s",
                 resp);
    buy_until_queued(port_b, item, &user, 3000);
    for (int i = 1; i < RESTOCK; i++)
        buy_until_queued(i % 2 ? sys.port : port_b, item, &user, 3000);
    assert_sold_out_everywhere(item, user);
    user += 3;

    /* The buyer cancels through B an order A accepted; A sells the unit. */
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", first_order);
    cr_assert_eq(
        harness_http(port_b, "POST", path, NULL, "{\"user_id\":\"1\"}", resp, sizeof(resp)), 200,
        "%s", resp);
    buy_until_queued(sys.port, item, &user, 3000);
    assert_sold_out_everywhere(item, user);

    /* The books: every unit that existed sold once, each order persisted
     * once, no buyer above the limit. */
    sale_wait_drained(30000);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(harness_http(lb, "GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(member("remaining"), 0, "%s", resp);
    cr_assert_eq(member("cancelled"), 1, "%s", resp);
    cr_assert_eq(member("returned"), 1, "%s", resp);
    PGconn *pg = harness_pg();
    char sql[256];
    int64_t accepted = LIMIT + (STOCK - LIMIT) + RESTOCK + 1;
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item);
    cr_assert_eq(harness_pg_int(pg, sql), accepted);
    snprintf(sql, sizeof(sql), "SELECT count(DISTINCT id) FROM orders WHERE item_id = %" PRId64,
             item);
    cr_assert_eq(harness_pg_int(pg, sql), accepted);
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM orders WHERE item_id = "
             "%" PRId64 " GROUP BY user_id) b",
             item);
    cr_assert_leq(harness_pg_int(pg, sql), LIMIT);
    PQfinish(pg);

    harness_nginx_stop();
    harness_stop_clean(&second, "server B");
    harness_system_stop(&sys);
}
