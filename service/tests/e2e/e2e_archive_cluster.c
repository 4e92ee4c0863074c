/* e2e_archive_cluster.c: an archived item on a real Redis Cluster of 3
 * masters and 3 replicas (issue 25): an item split in 4 segments over the
 * masters is marked archived on the master of every segment, and no server
 * sells it any more, to a named buyer or an anonymous one, whichever segment
 * they reach; the orders taken before drain to PostgreSQL, and
 * `reconcile --rebuild` does not put it back on sale. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-archive-cluster-token"

static harness_system sys;
static char resp[4096];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-archive-cluster",
                      "SECKILL_ALLOW_ANONYMOUS=true", NULL};

HARNESS_CLUSTER_SYSTEM_SUITE(archive_cluster, sys, env, "e2e-archive-cluster", .timeout = 180);

/* A purchase by user (0: anonymous) on the server at port. */
static int buy_on(int port, int64_t item, int64_t user)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return harness_http(port, "POST", path, NULL, user ? body : NULL, resp, sizeof(resp));
}

/* Whether the state of segment key says archived, read on its master. */
static int segment_archived(const redis_cluster_map *map, int64_t key)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), key);
    redisContext *c =
        harness_cluster_connect(redis_cluster_map_master_of_key(map, state, strlen(state)));
    redisReply *r = redisCommand(c, "HGET %s archived", state);
    cr_assert_not_null(r);
    int archived = r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    redisFree(c);
    return archived;
}

Test(archive_cluster, no_segment_of_an_archived_item_sells_on_any_master_nor_after_a_rebuild)
{
    enum { SEGMENTS = 4 };
    const char *spec = "{\"name\":\"hot\",\"stock\":40,\"segments\":4,\"per_buyer_limit\":1000,"
                       "\"payment_timeout_s\":0}";
    cr_assert_eq(harness_http(sys.port, "POST", "/api/v1/items", TOKEN, spec, resp, sizeof(resp)),
                 201, "%s", resp);
    int64_t item = 0;
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &item), 1, "%s", resp);
    int port_b;
    pid_t second = harness_cluster_start_server(&port_b, env, "e2e-archive-cluster-b.log");
    for (int64_t user = 1; user <= 6; user++)
        cr_assert_eq(buy_on(user % 2 ? sys.port : port_b, item, user), 202, "%s", resp);
    cr_assert_eq(buy_on(port_b, item, 0), 202, "anonymous, the limit covering the stock: %s", resp);

    char path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(harness_http(sys.port, "DELETE", path, TOKEN, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    redis_cluster_map *map = harness_cluster_map();
    for (int j = 0; j < SEGMENTS; j++)
        cr_expect(segment_archived(map, keys_segment(item, j, SEGMENTS)), "segment %d", j);

    /* Buyers whose homes are on every segment, on both servers. */
    for (int64_t user = 100; user < 140; user++) {
        cr_expect_eq(buy_on(sys.port, item, user), 404, "buyer %" PRId64 ": %s", user, resp);
        cr_expect_eq(buy_on(port_b, item, user + 100), 404, "buyer %" PRId64 ": %s", user, resp);
    }
    for (int i = 0; i < 8; i++)
        cr_expect_eq(buy_on(i % 2 ? sys.port : port_b, item, 0), 404, "anonymous: %s", resp);
    /* The orders taken before the archive drain (the view counts them). */
    for (int i = 0; i < 600 && sale_item_number(sys.port, item, "persisted") < 7; i++)
        harness_sleep_ms(100);
    cr_expect_eq(sale_item_number(sys.port, item, "persisted"), 7, "the orders taken before");
    cr_expect_eq(sale_item_number(sys.port, item, "queued"), 0);

    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_expect_eq(harness_cluster_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    for (int j = 0; j < SEGMENTS; j++)
        cr_expect(segment_archived(map, keys_segment(item, j, SEGMENTS)),
                  "segment %d lost its mark in the rebuild", j);
    for (int64_t user = 300; user < 320; user++)
        cr_expect_eq(buy_on(port_b, item, user), 404, "after the rebuild: %s", resp);
    redis_cluster_map_free(map);
    harness_stop(second, SIGTERM);
    harness_system_stop(&sys);
}
