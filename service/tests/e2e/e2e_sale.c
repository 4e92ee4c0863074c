/* e2e_sale.c: a sale, not just an item, end to end on real servers: the
 * window by Redis's clock under a storm that starts before it, limits and
 * quantities bought concurrently, a restock during a sell-out seen by two
 * servers, a reset that keeps the history, and bad input. Every test audits
 * the books in PostgreSQL. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "blast.h"
#include "harness.h"
#include "harness_suite.h"
#include "rfc3339.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;
static char resp[4096];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-sale", NULL};

HARNESS_SYSTEM_SUITE(sale, harness_system_start, sys, env, "e2e-sale", .timeout = 300);

/* Creates an item from the JSON members `terms` adds to name and stock; its
 * view in resp. */
static int64_t create_item(int64_t stock, const char *terms)
{
    return sale_create_item_view(sys.port, TOKEN, resp, sizeof(resp), "sale", stock, "%s", terms);
}

/* RFC 3339 text of Unix ms. */
static const char *when(int64_t ms, char *buf)
{
    cr_assert_gt(rfc3339_format(ms, buf, RFC3339_MAX), 0);
    return buf;
}

static int buy_on(int on_port, int64_t item, int64_t user, int quantity)
{
    char path[96], body[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\",\"quantity\":%d}", user, quantity);
    return harness_http(on_port, "POST", path, NULL, body, resp, sizeof(resp));
}

static int buy(int64_t item, int64_t user, int quantity)
{
    return buy_on(sys.port, item, user, quantity);
}

static int get_item(int64_t item)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    return harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp));
}

/* The integer member `"name":N` of resp; aborts when absent. */
static int64_t member(const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *at = strstr(resp, key);
    cr_assert_not_null(at, "no %s in %s", name, resp);
    return strtoll(at + strlen(key), NULL, 10);
}

static int64_t sql_int(PGconn *pg, const char *fmt, int64_t item)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, item);
    return harness_pg_int(pg, sql);
}

/* This purchase path's outcome counter in /metrics. */
static int64_t outcome_count(int on_port, const char *outcome)
{
    static char text[65536];
    cr_assert_eq(harness_http(on_port, "GET", "/metrics", TOKEN, NULL, text, sizeof(text)), 200);
    char series[96];
    snprintf(series, sizeof(series), "seckill_purchases_total{outcome=\"%s\"}", outcome);
    return harness_metric(text, series);
}

static void sleep_until(int64_t wall_ms)
{
    int64_t left = wall_ms - clock_wall_ms();
    if (left > 0)
        harness_sleep_ms((int)left);
}

Test(sale, a_storm_from_before_the_start_takes_nothing_early_and_exactly_the_stock_after)
{
    enum { STOCK = 1000, CHUNKS = 10, PER_CHUNK = 500, CONNECTIONS = 200 };
    char a[RFC3339_MAX], b[RFC3339_MAX], terms[160];
    int64_t starts = (clock_wall_ms() / 1000 + 3) * 1000, ends = starts + 60000;
    snprintf(terms, sizeof(terms), "\"starts_at\":\"%s\",\"ends_at\":\"%s\"", when(starts, a),
             when(ends, b));
    int64_t item = create_item(STOCK, terms);
    cr_assert_eq(get_item(item), 200);
    cr_expect(strstr(resp, "\"state\":\"upcoming\""), "%s", resp);
    cr_expect_gt(member("starts_in_ms"), 1000, "%s", resp);

    /* 5,000 buyers in ten waves of 500 from 200 connections, one every
     * 200 ms from 1 s before the start. */
    sale s;
    sale_init(&s, sys.port, item, PER_CHUNK, CONNECTIONS, 1, CHUNKS * PER_CHUNK);
    /* A wave answered in full before the start (however slow the machine
     * made it) sold nothing: all not_started. */
    size_t before_start = 0, waves_before = 0;
    for (int k = 0; k < CHUNKS; k++) {
        sleep_until(starts - 1000 + k * 200);
        size_t other = s.other;
        s.first_user = 1 + (size_t)k * PER_CHUNK;
        cr_assert_eq(sale_run(&s), 0, "wave %d: %s", k, s.result.errstr);
        if (clock_wall_ms() < starts) {
            before_start += s.other - other;
            waves_before++;
        }
    }
    cr_expect_eq(s.naccepted, STOCK, "answered 202: %zu", s.naccepted);
    cr_expect_eq(s.unavailable + s.queue_full, 0);
    cr_expect_gt(waves_before, 0, "no wave was over before the start");
    cr_expect_geq(before_start, waves_before * PER_CHUNK - 5,
                  "the %zu waves before the start: not_started", waves_before);
    cr_expect_eq(s.naccepted + s.sold_out + s.other, CHUNKS * PER_CHUNK);
    cr_expect_gt(outcome_count(sys.port, "not_started_memory"), PER_CHUNK,
                 "the pre-start storm was answered from memory");

    PGconn *pg = harness_pg();
    sale_wait_drained(60000);
    sale_assert_exactly_persisted(&s, pg);
    cr_expect_eq(sql_int(pg,
                         "SELECT count(*) FROM orders o JOIN items i ON i.id = o.item_id "
                         "WHERE o.item_id = %" PRId64 " AND o.created_at < i.starts_at",
                         item),
                 0, "an order accepted before the start");
    cr_expect_eq(sql_int(pg, "SELECT sum(quantity) FROM orders WHERE item_id = %" PRId64, item),
                 STOCK);
    PQfinish(pg);
    sale_free(&s);

    /* A sale that ended refuses everyone, with stock left. */
    int64_t now = clock_wall_ms();
    snprintf(terms, sizeof(terms), "\"starts_at\":\"%s\",\"ends_at\":\"%s\"", when(now - 5000, a),
             when(now + 1500, b));
    int64_t short_sale = create_item(100, terms);
    cr_expect_eq(buy(short_sale, 1, 1), 202, "%s", resp);
    sleep_until(now + 1600);
    for (int64_t u = 2; u < 50; u++) {
        cr_expect_eq(buy(short_sale, u, 1), 409, "%s", resp);
        cr_expect(strstr(resp, "\"error\":\"ended\"") && strstr(resp, "\"ends_at\":\""), "%s",
                  resp);
    }
    cr_assert_eq(get_item(short_sale), 200);
    cr_expect(strstr(resp, "\"state\":\"ended\"") && strstr(resp, "\"remaining\":99,"), "%s", resp);
    harness_system_stop(&sys);
}

/* Request index is buyer 1 + index / 4's, for quantity 1 + index % 3: each
 * buyer presses buy four times at once (asking 6 to 8 units under a limit
 * of 3). */
enum { LIMIT_BUYERS = 500 };

typedef struct limit_run {
    int64_t item;
    int64_t units_accepted;
    size_t accepted, limit_reached, insufficient, sold_out, other;
} limit_run;

static size_t build_quantity(void *ctx, size_t index, char *buf, size_t cap)
{
    limit_run *l = ctx;
    char body[64];
    int blen = snprintf(body, sizeof(body), "{\"user_id\":%zu,\"quantity\":%zu}", 1 + index / 4,
                        1 + index % 3);
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     l->item, blen, body);
    return n > 0 ? (size_t)n : 0;
}

static void on_quantity(void *ctx, size_t index, int status, const char *body, size_t len)
{
    limit_run *l = ctx;
    (void)len;
    if (status == 202) {
        l->accepted++;
        l->units_accepted += (int64_t)(1 + index % 3);
    } else if (status == 409 && strstr(body, "\"limit_reached\"")) {
        l->limit_reached++;
    } else if (status == 409 && strstr(body, "\"insufficient_stock\"")) {
        l->insufficient++;
    } else if (status == 409 && strstr(body, "\"sold_out\"")) {
        l->sold_out++;
    } else {
        l->other++;
    }
}

Test(sale, concurrent_buyers_with_quantities_never_pass_their_limit_and_sell_the_stock_exactly)
{
    enum { STOCK = 600 };
    /* The limit alone, under a buyer's concurrent presses: with the order
     * lock (the default) a buyer's twins would mostly hear in_progress, and
     * the script's limit would not be put to the test. */
    harness_system_stop(&sys);
    static char *script_env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-sale",
                                 "SECKILL_ORDER_GUARD=script", NULL};
    harness_system_start(&sys, script_env, "e2e-sale-script");
    limit_run l = {.item = create_item(STOCK, "\"per_buyer_limit\":3")};
    blast_spec spec = {.port = sys.port,
                       .connections = 200,
                       .requests = 4 * LIMIT_BUYERS,
                       .timeout_ms = 60000,
                       .build = build_quantity,
                       .on_response = on_quantity,
                       .ctx = &l};
    blast_result r;
    cr_assert_eq(blast_run(&spec, &r), 0, "%s", r.errstr);
    cr_expect_eq(l.units_accepted, STOCK, "units answered 202");
    cr_expect_gt(l.limit_reached, 0);
    cr_expect_eq(l.other, 0);
    cr_log_info("202 %zu, limit_reached %zu, insufficient_stock %zu, sold_out %zu", l.accepted,
                l.limit_reached, l.insufficient, l.sold_out);

    PGconn *pg = harness_pg();
    sale_wait_drained(60000);
    cr_expect_eq(sql_int(pg, "SELECT sum(quantity) FROM orders WHERE item_id = %" PRId64, l.item),
                 STOCK);
    cr_expect_eq(sql_int(pg, "SELECT count(*) FROM orders WHERE item_id = %" PRId64, l.item),
                 (int64_t)l.accepted);
    cr_expect_eq(sql_int(pg,
                         "SELECT coalesce(max(units), 0) FROM (SELECT sum(quantity) AS units "
                         "FROM orders WHERE item_id = %" PRId64 " GROUP BY user_id) b",
                         l.item),
                 3, "the most units one buyer holds");
    cr_assert_eq(get_item(l.item), 200);
    cr_expect_eq(member("remaining"), 0, "%s", resp);
    cr_expect_eq(member("persisted"), STOCK, "%s", resp);
    cr_expect_eq(member("orders"), (int64_t)l.accepted, "%s", resp);
    char *args[] = {"reconcile", NULL};
    static char out[8192];
    cr_expect_eq(harness_admin(args, out, sizeof(out)), 0, "%s", out);
    PQfinish(pg);
    harness_system_stop(&sys);
}

Test(sale, refusals_carry_the_numbers_a_buyer_needs)
{
    int64_t item = create_item(2, "\"per_buyer_limit\":5");
    cr_expect_eq(buy(item, 1, 3), 409, "%s", resp);
    cr_expect(strstr(resp, "\"error\":\"insufficient_stock\""), "%s", resp);
    cr_expect_eq(member("remaining"), 2);
    cr_expect_eq(buy(item, 1, 2), 202, "%s", resp);
    cr_expect(strstr(resp, "\"quantity\":2,\"remaining\":0"), "%s", resp);
    int64_t limited = create_item(10, "\"per_buyer_limit\":2");
    cr_expect_eq(buy(limited, 7, 2), 202, "%s", resp);
    sale_wait_drained(20000); /* persisted: the order lock is gone, the limit answers */
    cr_expect_eq(buy(limited, 7, 1), 409, "%s", resp);
    cr_expect(strstr(resp, "\"error\":\"limit_reached\""), "%s", resp);
    cr_expect_eq(member("bought"), 2);
    cr_expect_eq(member("per_buyer_limit"), 2);
    char a[RFC3339_MAX], terms[96];
    snprintf(terms, sizeof(terms), "\"starts_at\":\"%s\"", when(clock_wall_ms() + 60000, a));
    int64_t later = create_item(10, terms);
    cr_expect_eq(buy(later, 7, 1), 409, "%s", resp);
    cr_expect(strstr(resp, "\"error\":\"not_started\""), "%s", resp);
    cr_expect(strstr(resp, a), "the start as given: %s", resp);
    cr_expect_gt(member("starts_in_ms"), 55000);
    harness_system_stop(&sys);
}

Test(sale, a_restock_during_a_sell_out_is_sold_exactly_and_clears_the_flag_of_both_servers)
{
    enum { STOCK = 500, ADD = 300 };
    int other_port;
    pid_t other = harness_start_server(&other_port, env, "e2e-sale-server-b.log");
    int64_t item = create_item(STOCK, "");
    sale on_a, on_b;
    sale_init(&on_a, sys.port, item, 3000, 100, 1, 3000);
    sale_init(&on_b, other_port, item, 3000, 100, 100001, 3000);
    sale_start(&on_a);
    sale_start(&on_b);
    sale_wait_sold(item, STOCK, 30000);
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    snprintf(body, sizeof(body), "{\"add\":%d}", ADD);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s",
                 resp);
    cr_expect_eq(member("restocked"), ADD, "%s", resp);
    cr_expect_eq(member("initial_stock"), STOCK, "%s", resp);
    sale_join(&on_a);
    sale_join(&on_b);

    /* Both servers flagged the item sold out before the restock; the
     * announcement clears both flags. A second wave sells what is left. */
    sale again_a, again_b;
    sale_init(&again_a, sys.port, item, 1000, 50, 200001, 1000);
    sale_init(&again_b, other_port, item, 1000, 50, 300001, 1000);
    sale_start(&again_a);
    sale_start(&again_b);
    sale_join(&again_a);
    sale_join(&again_b);
    size_t accepted = on_a.naccepted + on_b.naccepted + again_a.naccepted + again_b.naccepted;
    cr_expect_eq(accepted, STOCK + ADD, "202s: %zu", accepted);
    cr_expect_gt(again_a.naccepted + on_a.naccepted, 0);
    cr_expect_gt(again_b.naccepted + on_b.naccepted, 0);

    PGconn *pg = harness_pg();
    sale_wait_drained(60000);
    cr_expect_eq(sql_int(pg, "SELECT sum(quantity) FROM orders WHERE item_id = %" PRId64, item),
                 STOCK + ADD);
    cr_expect_eq(sql_int(pg, "SELECT restocked FROM items WHERE id = %" PRId64, item), ADD);
    cr_assert_eq(get_item(item), 200);
    cr_expect_eq(member("remaining"), 0, "%s", resp);
    cr_expect_eq(member("sold"), STOCK + ADD, "%s", resp);
    cr_expect_eq(member("persisted"), STOCK + ADD, "%s", resp);

    /* Sold out again; one more restock reaches a server whose flag is set. */
    cr_expect_eq(buy_on(other_port, item, 999999, 1), 409, "%s", resp);
    snprintf(body, sizeof(body), "{\"add\":1}");
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s",
                 resp);
    int status = 0;
    for (int tries = 0; tries < 100 && status != 202; tries++) {
        status = buy_on(other_port, item, 999999, 1);
        if (status != 202)
            harness_sleep_ms(20);
    }
    cr_expect_eq(status, 202, "server B never saw the restock: %s", resp);
    char *args[] = {"reconcile", NULL};
    static char out[8192];
    sale_wait_drained(60000);
    cr_expect_eq(harness_admin(args, out, sizeof(out)), 0, "%s", out);
    PQfinish(pg);
    sale_free(&on_a);
    sale_free(&on_b);
    sale_free(&again_a);
    sale_free(&again_b);
    harness_stop_clean(&other, "server B");
    harness_system_stop(&sys);
}

Test(sale, a_reset_keeps_the_previous_rounds_orders_and_the_same_buyer_buys_again)
{
    int64_t item = create_item(3, "");
    cr_assert_eq(buy(item, 7, 1), 202, "%s", resp);
    char order_id[32];
    const char *at = strstr(resp, "\"order_id\":\"");
    cr_assert_not_null(at);
    snprintf(order_id, sizeof(order_id), "%.*s", (int)strcspn(at + 12, "\""), at + 12);
    cr_assert_eq(buy(item, 8, 1), 202, "%s", resp);
    sale_wait_drained(30000);
    cr_assert_eq(get_item(item), 200);
    int64_t old_round = member("round");

    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"stock\":5}", resp, sizeof(resp)),
                 200, "%s", resp);
    cr_expect_gt(member("round"), old_round);
    cr_expect_eq(member("persisted"), 0, "the detail counts the current round: %s", resp);
    cr_expect_eq(member("orders"), 0, "%s", resp);
    cr_expect_eq(member("remaining"), 5, "%s", resp);

    snprintf(path, sizeof(path), "/api/v1/orders/%s", order_id);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200,
                 "an order of the previous round: %s", resp);
    cr_expect(strstr(resp, "\"status\":\"persisted\"") && strstr(resp, "\"user_id\":\"7\""), "%s",
              resp);
    cr_expect_eq(member("round"), old_round);

    cr_expect_eq(buy(item, 7, 1), 202, "the same buyer in the new round: %s", resp);
    sale_wait_drained(30000);
    PGconn *pg = harness_pg();
    cr_expect_eq(sql_int(pg, "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item), 3,
                 "the history: two orders of the old round, one of the new");
    cr_assert_eq(get_item(item), 200);
    cr_expect_eq(member("persisted"), 1, "%s", resp);
    cr_expect_eq(member("sold"), 1, "%s", resp);
    PQfinish(pg);
    harness_system_stop(&sys);
}

Test(sale, bad_input_is_400_and_changes_nothing)
{
    const char *creates[] = {
        "{\"name\":\"x\",\"stock\":9223372036854775807}",
        "{\"name\":\"x\",\"stock\":1000000000001}",
        "{\"name\":\"x\",\"stock\":99999999999999999999}",
        "{\"name\":\"x\",\"stock\":1,\"per_buyer_limit\":0}",
        "{\"name\":\"x\",\"stock\":1,\"per_buyer_limit\":1001}",
        "{\"name\":\"x\",\"stock\":1,\"per_buyer_limit\":\"3\"}",
        "{\"name\":\"x\",\"stock\":1,\"starts_at\":\"soon\"}",
        "{\"name\":\"x\",\"stock\":1,\"starts_at\":1795377600}",
        "{\"name\":\"x\",\"stock\":1,\"ends_at\":\"2026-02-30T00:00:00Z\"}",
        "{\"name\":\"x\",\"stock\":1,\"ends_at\":\"2026-01-01T00:00:00Z\"}", /* over */
        "{\"name\":\"x\",\"stock\":1,\"starts_at\":\"2026-11-22T21:00:00Z\","
        "\"ends_at\":\"2026-11-22T20:00:00Z\"}",
        "{\"name\":\"x\",\"stock\":1,\"id\":9007199254740992}",
    };
    for (size_t i = 0; i < sizeof(creates) / sizeof(creates[0]); i++) {
        cr_expect_eq(
            harness_http(sys.port, "POST", "/api/v1/items", TOKEN, creates[i], resp, sizeof(resp)),
            400, "%s: %s", creates[i], resp);
        cr_expect(strstr(resp, "\"message\":"), "%s", resp);
    }
    cr_expect_eq(
        harness_http(sys.port, "POST", "/api/v1/items", TOKEN, creates[0], resp, sizeof(resp)),
        400);
    cr_expect(strstr(resp, "out of range"), "a number out of range says so: %s", resp);

    char a[RFC3339_MAX], terms[96];
    snprintf(terms, sizeof(terms), "\"starts_at\":\"%s\"", when(clock_wall_ms() - 60000, a));
    int64_t item = create_item(10, terms);
    char path[96];
    const char *purchases[] = {"{\"user_id\":1,\"quantity\":0}",
                               "{\"user_id\":1,\"quantity\":1001}",
                               "{\"user_id\":1,\"quantity\":\"2\"}", "{\"user_id\":\"x\"}",
                               "{\"user_id\":92233720368547758070}"};
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    for (size_t i = 0; i < sizeof(purchases) / sizeof(purchases[0]); i++)
        cr_expect_eq(harness_http(sys.port, "POST", path, NULL, purchases[i], resp, sizeof(resp)),
                     400, "%s: %s", purchases[i], resp);
    /* A NUL byte inside the body: today's jansson would stop at it. */
    char raw[256];
    static const char nul_body[] = "{\"user_id\":1\0}";
    int head = snprintf(raw, sizeof(raw),
                        "POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                        path, sizeof(nul_body) - 1);
    memcpy(raw + head, nul_body, sizeof(nul_body) - 1);
    harness_raw(sys.port, raw, (size_t)head + sizeof(nul_body) - 1, 5000, resp, sizeof(resp));
    cr_expect(strstr(resp, " 400 ") && strstr(resp, "NUL"), "%s", resp);

    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    const char *restocks[] = {"{\"add\":0}", "{\"add\":-1}", "{\"add\":1000000000001}", "{}",
                              "{\"add\":999999999991}"};
    for (size_t i = 0; i < sizeof(restocks) / sizeof(restocks[0]); i++)
        cr_expect_eq(harness_http(sys.port, "POST", path, TOKEN, restocks[i], resp, sizeof(resp)),
                     400, "%s: %s", restocks[i], resp);
    cr_expect_eq(harness_http(sys.port, "POST", path, NULL, "{\"add\":1}", resp, sizeof(resp)),
                 401);
    cr_expect_eq(harness_http(sys.port, "POST", "/api/v1/items/999999/stock", TOKEN, "{\"add\":1}",
                              resp, sizeof(resp)),
                 404, "%s", resp);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    const char *resets[] = {"{\"stock\":5,\"per_buyer_limit\":0}", "{\"stock\":5,\"starts_at\":5}",
                            "{\"stock\":-5}", "{\"stock\":5,\"ends_at\":\"yesterday\"}"};
    for (size_t i = 0; i < sizeof(resets) / sizeof(resets[0]); i++)
        cr_expect_eq(harness_http(sys.port, "POST", path, TOKEN, resets[i], resp, sizeof(resp)),
                     400, "%s: %s", resets[i], resp);
    char body[160];
    snprintf(body, sizeof(body), "{\"stock\":5,\"ends_at\":\"%s\"}",
             when(clock_wall_ms() - 120000, a));
    cr_expect_eq(harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp)), 400,
                 "an end before the kept start: %s", resp);

    cr_assert_eq(get_item(item), 200);
    cr_expect_eq(member("remaining"), 10, "nothing changed: %s", resp);
    cr_expect_eq(member("restocked"), 0, "%s", resp);

    char lab_body[] = "{\"name\":\"lab\",\"stock\":5,\"lab\":true}";
    cr_assert_eq(
        harness_http(sys.port, "POST", "/api/v1/items", TOKEN, lab_body, resp, sizeof(resp)), 201,
        "%s", resp);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", member("id"));
    cr_expect_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"add\":1}", resp, sizeof(resp)),
                 400, "a laboratory item: %s", resp);
    harness_system_stop(&sys);
}

/* Sets the item's restocks and restocked total in Redis alone, adding
 * `add` to its stock: a restock that reached Redis and not PostgreSQL. */
static void restock_behind_postgresql(int64_t item, int restocks, int restocked, int add)
{
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "HSET {item:%lld}:state restocks %d restocked %d",
                                 (long long)item, restocks, restocked);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = redisCommand(c, "HINCRBY {item:%lld}:state stock %d", (long long)item, add);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    redisFree(c);
}

Test(sale, a_restock_that_reached_redis_alone_is_completed_once_or_refused_until_reconciled)
{
    int64_t item = create_item(10, "");
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    /* An earlier try of +5 reached Redis, its answer was lost and
     * PostgreSQL rolled back: the admin's retry completes it, adding nothing
     * twice. */
    restock_behind_postgresql(item, 1, 5, 5);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"add\":5}", resp, sizeof(resp)),
                 200, "%s", resp);
    cr_expect_eq(member("restocked"), 5, "%s", resp);
    cr_expect_eq(member("remaining"), 15, "not 20: %s", resp);
    /* Redis holds a restock PostgreSQL does not know, of other units: the
     * restock is refused and reconcile repairs it. */
    restock_behind_postgresql(item, 2, 9, 4);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"add\":3}", resp, sizeof(resp)),
                 503, "%s", resp);
    cr_expect(strstr(resp, "reconcile"), "the message says what to do: %s", resp);
    static char out[8192];
    char *check[] = {"reconcile", NULL};
    cr_expect_neq(harness_admin(check, out, sizeof(out)), 0, "reconcile sees it: %s", out);
    cr_expect(strstr(out, "restock differs"), "%s", out);
    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_expect_eq(harness_admin(rebuild, out, sizeof(out)), 0, "%s", out);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"add\":3}", resp, sizeof(resp)),
                 200, "%s", resp);
    cr_expect_eq(member("restocked"), 8, "%s", resp);
    cr_expect_eq(member("remaining"), 18, "%s", resp);
    cr_expect_eq(harness_admin(check, out, sizeof(out)), 0, "%s", out);
    harness_system_stop(&sys);
}
