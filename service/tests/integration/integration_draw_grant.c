/* integration_draw_grant.c: a draw order's grant (draw_grant.h,
 * lua/draw_grant.lua) against the test run's Redis and PostgreSQL: the
 * units taken once however often the grant runs, the buyers counted, a
 * return that came first leaving nothing to take, and an order committed
 * without its grant granted once by the owed grants' run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "draw_grant.h"
#include "harness.h"
#include "keys.h"
#include "redis_nodes.h"
#include "scripts.h"

#define ITEM 42
#define ROUND 3

static redisContext *redis;
static PGconn *pg;
static scripts sc;
static config cfg;
static redis_nodes *nodes;

static void setup(void)
{
    harness_reset_tables();
    redis = harness_redis_with_scripts(&sc);
    pg = harness_pg();
    harness_config(&cfg);
    nodes = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(nodes);
    harness_item_reset(redis, &sc, ITEM, 10, ROUND);
}

static void teardown(void)
{
    redis_nodes_free(nodes);
    config_free(&cfg);
    PQfinish(pg);
    redisFree(redis);
}

TestSuite(draw_grant, .init = setup, .fini = teardown, .timeout = 30);

static void sql(const char *statement)
{
    PGresult *res = PQexec(pg, statement);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s: %s", statement,
                 PQresultErrorMessage(res));
    PQclear(res);
}

/* The item's row, and n draw orders of it committed as the draw commits
 * them (draw_position set, granted_at null): order 100 + i for buyer
 * 7 + i, positions 1.., quantities q[i]. */
static void commit_draw_orders(const int *q, int n)
{
    char s[512];
    snprintf(s, sizeof(s),
             "INSERT INTO items (id, name, initial_stock, round, admission, entries_open_at, "
             "entries_close_at, room_secret) VALUES (%d, 'draw', 10, %d, 'draw', "
             "now() - interval '2 min', now() - interval '1 min', repeat('ab', 32))",
             ITEM, ROUND);
    sql(s);
    for (int i = 0; i < n; i++) {
        snprintf(s, sizeof(s),
                 "INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, "
                 "draw_position) VALUES (%d, %d, %d, %d, now(), %d, %d)",
                 100 + i, ITEM, 7 + i, ROUND, q[i], i + 1);
        sql(s);
    }
}

static order_ref ref(int i, int quantity)
{
    return (order_ref){
        .id = 100 + i, .item_id = ITEM, .round = ROUND, .user_id = 7 + i, .quantity = quantity};
}

static long long buyer_units(int64_t user)
{
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    redisReply *r = redisCommand(redis, "HGET %s %" PRId64, buyers, user);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

static int64_t owed(void)
{
    return harness_pg_int(pg, "SELECT count(*) FROM orders WHERE draw_position IS NOT NULL "
                              "AND granted_at IS NULL");
}

Test(draw_grant, a_grant_run_twice_takes_the_units_once_and_counts_the_buyers)
{
    int q[] = {2, 3};
    commit_draw_orders(q, 2);
    order_ref o[] = {ref(0, 2), ref(1, 3)};
    unsigned char done[2];
    cr_assert_eq(draw_grant_units(nodes, pg, &sc, o, 2, done, "test"), 0);
    cr_assert(done[0] && done[1], "both confirmed");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 5, "five units taken");
    cr_assert_eq(buyer_units(7), 2);
    cr_assert_eq(buyer_units(8), 3);
    cr_assert_eq(owed(), 0, "granted_at set for both");

    cr_assert_eq(draw_grant_units(nodes, pg, &sc, o, 2, done, "test"), 0, "again: confirmed");
    cr_assert(done[0] && done[1]);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 5, "nothing taken twice");
    cr_assert_eq(buyer_units(7), 2, "the buyer counted once");
    cr_assert_eq(buyer_units(8), 3);
}

Test(draw_grant, an_order_committed_without_its_grant_is_granted_once_by_the_owed_run)
{
    /* The crash between the steps: both orders committed, one granted in
     * Redis whose granted_at never landed, the other not granted at all. */
    int q[] = {1, 4};
    commit_draw_orders(q, 2);
    order_ref first = ref(0, 1);
    unsigned char done[1];
    cr_assert_eq(draw_grant_redis(nodes, &sc, &first, 1, done, "test"), 0);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 9);
    cr_assert_eq(owed(), 2, "both owed in PostgreSQL");

    cr_assert_eq(draw_grant_owed(nodes, pg, &sc, ITEM, "test"), 2, "both finished");
    cr_assert_eq(owed(), 0);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 5, "each order's units taken once");
    cr_assert_eq(buyer_units(7), 1);
    cr_assert_eq(buyer_units(8), 4);
    cr_assert_eq(draw_grant_owed(nodes, pg, &sc, 0, "test"), 0, "nothing owed any more");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 5);
}

Test(draw_grant, an_order_returned_before_its_grant_takes_nothing)
{
    /* lua/order_return.lua marks a draw order returned before its grant
     * with 0 in the granted hash: its units never left. */
    int q[] = {2};
    commit_draw_orders(q, 1);
    char granted[KEYS_MAX];
    keys_item_granted(granted, sizeof(granted), ITEM);
    freeReplyObject(redisCommand(redis, "HSET %s 100 0", granted));
    order_ref o = ref(0, 2);
    unsigned char done[1];
    cr_assert_eq(draw_grant_units(nodes, pg, &sc, &o, 1, done, "test"), 0);
    cr_assert_eq(done[0], 1, "confirmed: nothing is owed");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 10, "nothing taken");
    cr_assert_eq(buyer_units(7), 0);
}

Test(draw_grant, an_order_of_an_older_round_takes_nothing)
{
    int q[] = {2};
    commit_draw_orders(q, 1);
    order_ref o = ref(0, 2);
    o.round = ROUND - 1;
    unsigned char done[1];
    cr_assert_eq(draw_grant_redis(nodes, &sc, &o, 1, done, "test"), 0);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 10, "its units went with its round");
}

Test(draw_grant, a_grant_to_an_item_without_state_stays_owed)
{
    int q[] = {2};
    commit_draw_orders(q, 1);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), ITEM);
    freeReplyObject(redisCommand(redis, "DEL %s", state));
    cr_assert_eq(draw_grant_owed(nodes, pg, &sc, ITEM, "test"), -1);
    cr_assert_eq(owed(), 1, "still owed");
    cr_assert_eq(harness_redis_int(redis, "EXISTS", state), 0, "no state made up");
}
