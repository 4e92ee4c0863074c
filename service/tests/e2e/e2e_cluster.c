/* e2e_cluster.c: the server and the worker in cluster mode on a Redis
 * Cluster node (one node owning every slot, which refuses any call whose
 * keys span two slots):
 * two items sold at once, each exactly its stock, every accepted order
 * persisted once, and an order read back while it waits in its item's
 * pending hash or after. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;

/* One cluster node for the suite; harness_system_start empties it for each
 * test. */
HARNESS_CLUSTER_NODE_SUITE();

/* The cluster node first: the server, the worker and harness_redis() take
 * their Redis from the environment. */
static void start_system(void)
{
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", harness_cluster_node_port());
    cr_assert_eq(setenv("SECKILL_REDIS_PORT", port_s, 1), 0);
    /* And as the seed of the cluster mode: the slot map read from the node,
     * commands routed by their keys' slots. */
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "SECKILL_REDIS_CLUSTER=127.0.0.1:%d",
             harness_cluster_node_port());
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=cluster", seeds, NULL};
    harness_system_start(&sys, env, "e2e-cluster");
}

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

TestSuite(cluster, .init = start_system, .fini = kill_leftovers, .timeout = 300);

Test(cluster, two_items_sell_exactly_their_stock_and_every_accepted_order_persists_once)
{
    enum { STOCK = 300, BUYERS = 2000, CONNECTIONS = 50 };
    sale a, b;
    sale_init(&a, sys.port, sale_create_item(sys.port, TOKEN, "one", STOCK), BUYERS, CONNECTIONS, 1,
              BUYERS);
    sale_init(&b, sys.port, sale_create_item(sys.port, TOKEN, "two", STOCK), BUYERS, CONNECTIONS, 1,
              BUYERS);
    sale_start(&a);
    sale_start(&b);
    sale_join(&a);
    sale_join(&b);
    cr_expect_eq(a.naccepted, STOCK, "item one answered 202: %zu", a.naccepted);
    cr_expect_eq(b.naccepted, STOCK, "item two answered 202: %zu", b.naccepted);
    cr_expect_eq(a.other + a.unavailable + a.queue_full + b.other + b.unavailable + b.queue_full, 0,
                 "other answers");

    /* An accepted order reads back, pending or persisted. */
    char path[64], resp[1024];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, b.accepted[0]);
    cr_expect_eq(harness_http(sys.port, "GET", path, TOKEN, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);

    /* The server wrote to the cluster node: its registry holds both. */
    redisContext *c = harness_redis();
    cr_expect_eq(harness_redis_int(c, "SCARD", KEYS_ITEMS), 2);
    redisReply *r = redisCommand(c, "CLUSTER INFO");
    cr_assert(r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok"),
              "not the cluster node");
    freeReplyObject(r);
    /* In cluster mode: the server read the slot map (CLUSTER SLOTS). */
    r = redisCommand(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cmdstat_cluster|slots:calls="),
              "nobody read the slot map: not in cluster mode");
    freeReplyObject(r);
    redisFree(c);
    sale_wait_drained(60000);
    PGconn *pg = harness_pg();
    sale_assert_exactly_persisted(&a, pg);
    sale_assert_exactly_persisted(&b, pg);
    PQfinish(pg);
    sale_free(&a);
    sale_free(&b);
    harness_system_stop(&sys);
}

/* With the worker stopped, an order waits in its item's pending hash; the
 * order id does not name the item, so a lookup asks every registered
 * item's hash (in one round trip) and must find it there, among others',
 * and say it is queued; once the worker ran, the row says persisted. */
Test(cluster, a_queued_order_is_found_among_several_items_pending_hashes)
{
    harness_stop_clean(&sys.worker, "worker");
    int64_t items[3];
    for (int i = 0; i < 3; i++)
        items[i] = sale_create_item(sys.port, TOKEN, "pending", 5);
    char path[96], resp[1024];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", items[1]);
    cr_assert_eq(
        harness_http(sys.port, "POST", path, NULL, "{\"user_id\":\"7\"}", resp, sizeof(resp)), 202,
        "%s", resp);
    const char *at = strstr(resp, "\"order_id\":\"");
    cr_assert_not_null(at, "%s", resp);
    int64_t order_id = strtoll(at + strlen("\"order_id\":\""), NULL, 10);

    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order_id);
    cr_assert_eq(harness_http(sys.port, "GET", path, TOKEN, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    cr_expect(strstr(resp, "\"status\":\"queued\""), "%s", resp);
    char item_member[48];
    snprintf(item_member, sizeof(item_member), "\"item_id\":%" PRId64, items[1]);
    cr_expect(strstr(resp, item_member), "%s", resp);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order_id + 1);
    cr_expect_eq(harness_http(sys.port, "GET", path, TOKEN, NULL, resp, sizeof(resp)), 404, "%s",
                 resp);

    char *env[] = {"SECKILL_WORKER_ID=cluster", NULL};
    sys.worker = harness_start_worker(env, "e2e-cluster-worker-again.log");
    sale_wait_drained(30000);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order_id);
    cr_assert_eq(harness_http(sys.port, "GET", path, TOKEN, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    cr_expect(strstr(resp, "\"status\":\"persisted\""), "%s", resp);
    harness_system_stop(&sys);
}
