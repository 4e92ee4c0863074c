/* integration_lab_cluster.c: the laboratory's scripts on a one-node Redis
 * Cluster that owns every slot (and refuses, as any cluster does, a call
 * whose keys hash to different slots): each strategy's keys share its
 * item's slot. The product's scripts: integration_cluster. */

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "lab_keys.h"
#include "scripts.h"

#define ITEM 42

static redisContext *redis;
static scripts sc;

/* One node for the whole suite; each test finds it emptied, with the
 * scripts loaded. */
HARNESS_CLUSTER_NODE_SUITE();

static void open_node(void)
{
    redis = harness_cluster_node_open(&sc);
}

static void close_node(void)
{
    redisFree(redis);
    redis = NULL;
}

TestSuite(lab_cluster, .init = open_node, .fini = close_node, .timeout = 60);

/* A script call's reply: anything but an error. Frees it. */
static void expect_ran(const char *what, redisReply *r)
{
    harness_expect_ran(redis, what, r);
}

Test(lab_cluster, the_laboratorys_scripts_run_in_one_slot)
{
    char stock[KEYS_MAX], seen[KEYS_MAX], lock[KEYS_MAX], channel[KEYS_MAX];
    lab_keys_stock(stock, sizeof(stock), ITEM, "fenced");
    lab_keys_fence_seen(seen, sizeof(seen), ITEM, "fenced");
    lab_keys_lock(lock, sizeof(lock), ITEM, "reentrant");
    lab_keys_lock_channel(channel, sizeof(channel), ITEM, "reentrant");
    const char *take[] = {stock, seen, "1", "9"};
    expect_ran("fence_take", scripts_call(redis, &sc.s[SCRIPT_LAB_FENCE_TAKE], 2, 2, take));
    const char *read[] = {stock, seen, "2", "10"};
    expect_ran("fence_read", scripts_call(redis, &sc.s[SCRIPT_LAB_FENCE_READ], 2, 2, read));
    const char *lk[] = {lock, "owner", "1000"};
    expect_ran("reentrant_lock", scripts_call(redis, &sc.s[SCRIPT_LAB_REENTRANT_LOCK], 1, 2, lk));
    expect_ran("reentrant_renew", scripts_call(redis, &sc.s[SCRIPT_LAB_REENTRANT_RENEW], 1, 2, lk));
    const char *unlock[] = {lock, "owner", "1000", channel};
    expect_ran("reentrant_unlock",
               scripts_call(redis, &sc.s[SCRIPT_LAB_REENTRANT_UNLOCK], 1, 3, unlock));
}
