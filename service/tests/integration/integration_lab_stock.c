/* integration_lab_stock.c: a strategy's stock made on its first use
 * (lab_counter_read) against the run's Redis and PostgreSQL: the Redis
 * strategies' stock string and the PostgreSQL strategies' stock row come
 * from the item's initial stock the first time they are read, are read as
 * they stand after that, and an item without a round gets none. The
 * in-process counters keep what they sold through a resync of the same round. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "lab_ctx.h"
#include "lab_db.h"
#include "lab_keys.h"
#include "lab_local.h"
#include "lab_redis.h"
#include "scripts.h"

#define ITEM 42
#define NO_ITEM 43 /* no round in Redis, no row in items */
#define STOCK 5

static config cfg;
static scripts sc;
static redisContext *redis;
static PGconn *pg;
static lab_ctx *ctx;

static void pg_ok(const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(pg));
    PQclear(res);
}

/* Item ITEM with a round of STOCK units in Redis and its row in items, and
 * no stock of any strategy made yet. */
static void setup(void)
{
    harness_config(&cfg);
    harness_reset_tables();
    redis = harness_redis_with_scripts(&sc);
    pg = harness_pg();
    harness_item_reset(redis, &sc, ITEM, STOCK, 1);
    char sql[160];
    snprintf(sql, sizeof(sql),
             "INSERT INTO items (id, name, initial_stock, round, lab) VALUES (%d, 'lab', %d, 1, "
             "true)",
             ITEM, STOCK);
    pg_ok(sql);
    pg_ok("DELETE FROM lab_stock WHERE item_id IN (42, 43)");
    ctx = lab_ctx_create(&cfg, &sc, NULL, NULL, NULL);
    cr_assert_not_null(ctx);
}

static void teardown(void)
{
    lab_ctx_free(ctx);
    PQfinish(pg);
    redisFree(redis);
    config_free(&cfg);
}

TestSuite(lab_stock, .init = setup, .fini = teardown, .timeout = 60);

static lab_request request(const char *strategy, int64_t item)
{
    return (lab_request){.strategy = strategy, .item = item};
}

/* The stock string of strategy on item: its value, -1 when there is none. */
static long long stock_string(const char *strategy, int64_t item)
{
    char key[KEYS_MAX];
    lab_keys_stock(key, sizeof(key), item, strategy);
    redisReply *r = redisCommand(redis, "GET %s", key);
    cr_assert_not_null(r);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* lab_stock.stock of item: -1 when it has no row. */
static int64_t stock_row(int64_t item)
{
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT coalesce(max(stock), -1) FROM lab_stock WHERE item_id = %d",
             (int)item);
    return harness_pg_int(pg, sql);
}

Test(lab_stock, a_redis_strategys_stock_string_is_made_from_the_initial_stock_on_first_use)
{
    lab_request r = request("redis_watch", ITEM);
    cr_assert_eq(stock_string("redis_watch", ITEM), -1, "not made before its first use");
    int64_t left = -1;
    cr_assert_eq(lab_redis_remaining(ctx, &r, &left), SK_OK);
    cr_expect_eq(left, STOCK);
    cr_expect_eq(stock_string("redis_watch", ITEM), STOCK);
    cr_assert_eq(lab_redis_watch(ctx, &r, &left), SK_OK);
    cr_expect_eq(left, STOCK - 1);
    cr_expect_eq(stock_string("redis_watch", ITEM), STOCK - 1, "read as it stands, not made again");
}

Test(lab_stock, a_purchase_is_the_first_use_of_a_redis_stock_too)
{
    lab_request r = request("redis_read_check_decr", ITEM);
    int64_t left = -1;
    cr_assert_eq(lab_redis_read_check_decr(ctx, &r, &left), SK_OK);
    cr_expect_eq(left, STOCK - 1);
    cr_expect_eq(stock_string("redis_read_check_decr", ITEM), STOCK - 1);
    cr_expect_eq(stock_string("redis_watch", ITEM), -1, "each strategy has a stock of its own");
}

Test(lab_stock, a_postgresql_strategys_stock_row_is_made_from_the_initial_stock_on_first_use)
{
    lab_request r = request("db_optimistic", ITEM);
    cr_assert_eq(stock_row(ITEM), -1, "not made before its first use");
    int64_t left = -1;
    cr_assert_eq(lab_db_optimistic(ctx, &r, &left), SK_OK);
    cr_expect_eq(left, STOCK - 1);
    cr_expect_eq(stock_row(ITEM), STOCK - 1);
    cr_assert_eq(lab_db_remaining(ctx, &r, &left), SK_OK);
    cr_expect_eq(left, STOCK - 1, "read as it stands, not made again");
}

Test(lab_stock, an_item_without_a_round_gets_no_stock_and_is_not_found)
{
    lab_request r = request("redis_watch", NO_ITEM);
    int64_t left = -1;
    cr_expect_eq(lab_redis_watch(ctx, &r, &left), SK_NOT_FOUND);
    cr_expect_eq(lab_redis_remaining(ctx, &r, &left), SK_NOT_FOUND);
    cr_expect_eq(stock_string("redis_watch", NO_ITEM), -1);
    r.strategy = "db_for_update";
    cr_expect_eq(lab_db_for_update(ctx, &r, &left), SK_NOT_FOUND);
    cr_expect_eq(lab_db_remaining(ctx, &r, &left), SK_NOT_FOUND);
    cr_expect_eq(stock_row(NO_ITEM), -1);
}

/* A purchase of strategy on item through the in-process counters of local
 * (a context of its own); the units left after it. */
static int64_t local_buy(lab_local *local, lab_strategy_fn *buy)
{
    lab_ctx *c = lab_ctx_create(&cfg, &sc, local, NULL, NULL);
    cr_assert_not_null(c);
    lab_request r = request("local_mutex", ITEM);
    int64_t left = -1;
    cr_assert_eq(buy(c, &r, &left), SK_OK);
    lab_ctx_free(c);
    return left;
}

Test(lab_stock, a_resync_keeps_what_the_local_counters_sold_in_the_same_round)
{
    lab_local *local = lab_local_create(16);
    cr_assert_not_null(local);
    cr_assert_eq(local_buy(local, lab_local_mutex), STOCK - 1);
    cr_assert_eq(local_buy(local, lab_local_mutex), STOCK - 2);
    /* The events' subscription made again: announcements may be lost, the
     * round is not. Reloading would sell the two units again. */
    lab_local_forget_all(local);
    cr_expect_eq(local_buy(local, lab_local_mutex), STOCK - 3, "the same round: kept");
    /* A round begun while announcements were lost: reloaded. */
    harness_item_reset(redis, &sc, ITEM, STOCK, 2);
    lab_local_forget_all(local);
    cr_expect_eq(local_buy(local, lab_local_mutex), STOCK - 1, "a new round: reloaded");
    /* A reset on this instance reloads at once, whatever the round says. */
    lab_local_forget(local, ITEM);
    cr_expect_eq(local_buy(local, lab_local_mutex), STOCK - 1, "forgotten: reloaded");
    lab_local_free(local);
}
