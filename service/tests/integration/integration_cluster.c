/* integration_cluster.c: the product's Redis calls on a Redis Cluster: a
 * one-node cluster that owns every slot refuses, as any cluster does, a
 * script call or a MULTI whose keys hash to different slots (CROSSSLOT).
 * The reserve script, the worker's move and acknowledgement, the sweep, the
 * returns and the restock all run there (the laboratory's scripts: in
 * integration_lab_cluster), and
 * redis_cluster_slot() agrees with the cluster's own hashing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "redis_cluster.h"
#include "redis_nodes.h"
#include "reserve_batch.h"
#include "scripts.h"
#include "sweep.h"
#include "worker_batch.h"
#include "worker_queue.h"

#define ITEM 42

static redisContext *redis;
static scripts sc;
static config cfg;         /* redis_cluster: the node */
static redis_nodes *nodes; /* the product's way there, for the worker's and the sweep's calls */

/* One node for the whole suite; each test finds it emptied, with the
 * scripts loaded. */
HARNESS_CLUSTER_NODE_SUITE();

HARNESS_NODES_SUITE(cluster, harness_cluster_node_open, harness_cluster_node_config, redis, sc, cfg,
                    nodes, .timeout = 60);

/* A script call's reply: anything but an error. Frees it. */
static void expect_ran(const char *what, redisReply *r)
{
    harness_expect_ran(redis, what, r);
}

static int64_t cluster_keyslot(const char *key)
{
    redisReply *r = redisCommand(redis, "CLUSTER KEYSLOT %s", key);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "CLUSTER KEYSLOT %s", key);
    int64_t slot = r->integer;
    freeReplyObject(r);
    return slot;
}

Test(cluster, the_slot_of_each_kind_of_key_is_the_slot_the_cluster_computes)
{
    char keys[8][KEYS_MAX];
    keys_queue(keys[0], KEYS_MAX, ITEM);
    keys_pending(keys[1], KEYS_MAX, 7);
    keys_processing(keys[2], KEYS_MAX, 123456789, "host-1");
    keys_item_state(keys[3], KEYS_MAX, 1);
    keys_worker_alive(keys[4], KEYS_MAX, "w");
    snprintf(keys[5], KEYS_MAX, "%s", KEYS_ITEMS);
    snprintf(keys[6], KEYS_MAX, "foo{}{bar}");
    snprintf(keys[7], KEYS_MAX, "foo{{bar}}zap");
    for (int i = 0; i < 8; i++)
        cr_expect_eq(redis_cluster_slot(keys[i], strlen(keys[i])), cluster_keyslot(keys[i]), "%s",
                     keys[i]);
}

Test(cluster, the_reserve_script_with_the_old_global_queue_is_refused_and_with_the_items_runs)
{
    harness_item_reset(redis, &sc, ITEM, 10, 1);
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert_not_null(b);
    reserve_batch_init(b, ITEM, 0);
    reserve_batch_add(b, 7, 0, 1001, 1);
    reserve_batch_add(b, 8, 0, 1002, 1);
    int argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    /* The layout before this one: one queue and one pending hash for all. */
    const char *queue = b->keys_args[2], *pending = b->keys_args[3];
    b->argv[5] = "seckill:queue";
    b->argv[6] = "seckill:pending";
    b->lens[5] = strlen(b->argv[5]);
    b->lens[6] = strlen(b->argv[6]);
    redisReply *r = redisCommandArgv(redis, argc, b->argv, b->lens);
    cr_assert(r && r->type == REDIS_REPLY_ERROR, "a cluster refuses keys of two slots");
    cr_expect(strstr(r->str, "CROSSSLOT") != NULL, "%s", r->str);
    freeReplyObject(r);

    argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    r = redisCommandArgv(redis, argc, b->argv, b->lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "%s", r && r->str ? r->str : redis->errstr);
    reserve_answer a;
    cr_expect_eq(reserve_batch_answer(r, 2, 0, &a), RESERVE_QUEUED);
    cr_expect_eq(reserve_batch_answer(r, 2, 1, &a), RESERVE_QUEUED);
    freeReplyObject(r);
    cr_expect_eq(harness_redis_int(redis, "LLEN", queue), 2);
    cr_expect_eq(harness_redis_int(redis, "HLEN", pending), 2);
    free(b);
}

Test(cluster, the_workers_move_acknowledgement_and_the_sweep_run_in_the_items_slot)
{
    harness_push_orders(redis, 1, 1, 30, ITEM, 1, 1767225600000LL);
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 10), 0);
    worker_source src;
    worker_source_init(&src, ITEM, "w1");
    worker_batch_from(&b, &src);
    cr_assert_eq(redis_nodes_is_cluster(nodes), 1);
    worker_queue q = {.rn = nodes,
                      .c = redis_nodes_for_key(nodes, src.queue),
                      .sc = &sc,
                      .block_arg = "0.1",
                      .b = &b};
    cr_assert_not_null(q.c);
    /* BLMOVE and lua/queue_move.lua, then the MULTI with the next move. */
    cr_assert_eq(worker_queue_fill(&q), 10);
    worker_batch_sort(&b);
    cr_assert_eq(worker_queue_ack(&q, 1), 10, "acknowledged, and the next batch moved");
    worker_batch_sort(&b);
    cr_assert_eq(worker_queue_ack(&q, 0), 0);
    cr_expect_eq(harness_redis_int(redis, "LLEN", src.queue), 10);
    cr_expect_eq(harness_redis_int(redis, "LLEN", src.processing), 0);

    /* A dead worker's list goes back through the claim check. */
    cr_assert_eq(sweep_claim(nodes, ITEM, "w2", "w2:1:x"), 0);
    worker_source_init(&src, ITEM, "w2");
    worker_batch_from(&b, &src);
    cr_assert_eq(worker_queue_move(&q), 10);
    cr_assert_eq(sweep_recover(nodes, &sc, ITEM, "w2"), 10);
    cr_expect_eq(harness_redis_int(redis, "LLEN", src.queue), 10);
    sweep_result res;
    cr_assert_eq(sweep_run(nodes, &sc, "w1", &res), 0, "the SCAN for the lists");
    worker_batch_close(&b);
}

Test(cluster, the_return_restock_heartbeat_and_lock_scripts_run)
{
    harness_item_reset(redis, &sc, ITEM, 10, 1);
    char keys[4][KEYS_MAX];
    keys_item_state(keys[0], KEYS_MAX, ITEM);
    keys_item_buyers(keys[1], KEYS_MAX, ITEM);
    keys_item_returned(keys[2], KEYS_MAX, ITEM);
    keys_item_given_back(keys[3], KEYS_MAX, ITEM);
    /* As order_return.c calls it: the item's four keys, five arguments an
     * order. */
    const char *ret[] = {keys[0], keys[1], keys[2], keys[3], "1001", "1", "7", "1", "all"};
    expect_ran("order_return", scripts_call(redis, &sc.s[SCRIPT_ORDER_RETURN], 4, 5, ret));
    const char *restock[] = {keys[0], "1", "1", "5", "5"};
    expect_ran("restock", scripts_call(redis, &sc.s[SCRIPT_RESTOCK], 1, 4, restock));
    char holder[SWEEP_TOKEN_MAX];
    int64_t pttl;
    cr_expect_eq(sweep_heartbeat(nodes, &sc, "w", "w:1:a", 5000, holder, sizeof(holder), &pttl), 1);
    cr_expect_eq(sweep_heartbeat_release(nodes, &sc, "w", "w:1:a"), 0);
}
