/* e2e_draw_cluster.c: the draw on a real Redis Cluster of 3 masters and 3
 * replicas (issue 28): buyers entering several times at once are one entry
 * each (PostgreSQL's primary key decides, whatever Redis is), the draw's
 * grant takes the winners' units on the master of the item's slot, and a
 * purchase of the draw item is refused there. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "draw_sale.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "redis_cluster.h"

#define TOKEN "e2e-draw-cluster-token"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-draw-cluster", NULL};

HARNESS_CLUSTER_SYSTEM_SUITE(draw_cluster, sys, env, "e2e-draw-cluster", .timeout = 180);

Test(draw_cluster, entries_are_one_per_buyer_and_the_grant_takes_the_stock_once)
{
    enum { BUYERS = 300, STOCK = 60 };
    int64_t item = draw_sale_create(sys.port, TOKEN, STOCK, -1000, 600000, "");
    /* Each buyer three times, over 24 connections at once. */
    cr_assert_eq(draw_sale_enter_many(sys.port, item, 1, BUYERS, 3, 1, 24), BUYERS,
                 "one entry created per buyer");
    PGconn *pg = harness_pg();
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64, item);
    cr_assert_eq(harness_pg_int(pg, sql), BUYERS, "one entry per buyer");
    json_t *o;
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    cr_assert_eq(draw_sale_call(sys.port, "POST", path, NULL, "{\"user_id\":1}", &o), 409);
    cr_assert_str_eq(json_string_value(json_object_get(o, "error")), "draw_item");
    json_decref(o);

    draw_sale_close_now(pg, item);
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, "cluster", &o), 200);
    cr_assert_eq(draw_sale_num(json_object_get(o, "draw"), "units_won"), STOCK);
    json_decref(o);
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, NULL, &o), 200, "again: the first result");
    json_decref(o);
    cr_assert_eq(draw_sale_assert_audit(sys.port, item, 1, BUYERS, 200), STOCK);
    draw_sale_assert_orders(pg, item, STOCK);

    redis_cluster_map *map = harness_cluster_map();
    char state[KEYS_MAX], granted[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    keys_item_granted(granted, sizeof(granted), item);
    cr_assert_eq(harness_cluster_int(map, "HLEN", granted), STOCK, "each winner granted once");
    redis_cluster_map_free(map);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(draw_sale_call(sys.port, "GET", path, NULL, NULL, &o), 200);
    cr_assert_eq(draw_sale_num(o, "remaining"), 0, "the stock taken once, on the cluster");
    json_decref(o);
    PQfinish(pg);
    harness_system_stop(&sys);
}
