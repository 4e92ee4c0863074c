/* e2e_lab_cluster.c: the oversell laboratory on a real Redis Cluster of 3
 * masters and 3 replicas (issue 14), the server pointed at it by
 * redis_cluster. Each strategy that keeps its stock, its lock or its count
 * in Redis runs e2e_lab's storm (50 buyers at once on 5 units, 100 ms of
 * work in the critical section) on an item of its own, the items spread
 * over the three masters: the unsafe one still oversells, every safe one
 * sells exactly the stock and leaves no lock, and the lab's keys are on
 * the master of the item's slot, none on the run's single Redis. (Redlock
 * talks to servers of its own, ZooKeeper is not Redis: e2e_lab and
 * e2e_lab_zookeeper run those.) */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "blast.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "lab_keys.h"
#include "sale.h"

#define TOKEN "e2e-lab-cluster-token"

enum { STOCK = 5, BUYERS = 50, DELAY_MS = 100, MASTERS = 3 };

static harness_system sys;

static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, NULL};
HARNESS_CLUSTER_SYSTEM_SUITE(lab_cluster, sys, env, "e2e-lab-cluster", .timeout = 180);

/* A lab item of STOCK units whose keys the master_index-th master serves. */
static int64_t create_item_on(const redis_cluster_map *map, size_t master_index, int64_t after)
{
    int64_t id = harness_cluster_item_on_master(map, master_index, after);
    sale_create_item_with(sys.port, TOKEN, "lab", STOCK, "\"id\":%" PRId64 ",\"lab\":true", id);
    return id;
}

/* The storm on item, then where its keys went: the sold hash is on the
 * item's master, and not on the run's single Redis. */
static blast_result run_storm(const redis_cluster_map *map, const char *strategy, int64_t item)
{
    blast_result res = harness_lab_storm(sys.port, strategy, item, BUYERS, DELAY_MS);
    char sold[KEYS_MAX];
    lab_keys_sold(sold, sizeof(sold), item);
    cr_expect_eq(harness_cluster_int(map, "EXISTS", sold), 1,
                 "%s: %s is not on the master of its slot", strategy, sold);
    redisContext *single = harness_redis();
    cr_expect_eq(harness_redis_int(single, "EXISTS", sold), 0,
                 "%s: %s is on the run's single Redis, not on the cluster", strategy, sold);
    redisFree(single);
    return res;
}

Test(lab_cluster, every_redis_strategy_runs_on_the_master_of_its_item_with_its_verdict)
{
    static const struct {
        const char *name;
        int safe;
    } strategies[] = {
        {"redis_read_check_decr", 0}, {"redis_watch", 1}, {"redis_lock_setnx_expire", 1},
        {"redis_lock_getset", 1},     {"redis_lock", 1},  {"redis_lock_fenced", 1},
        {"redis_lock_reentrant", 1},  {"segmented", 1},   {"lua_reserve", 1},
        {"db_for_update", 1},
    };
    redis_cluster_map *map = harness_cluster_map();
    cr_assert_eq(redis_cluster_map_masters(map), MASTERS);
    int64_t item = 0;
    for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++) {
        const char *name = strategies[i].name;
        item = create_item_on(map, i % MASTERS, item);
        blast_result res = run_storm(map, name, item);
        size_t sold = blast_count(&res, 200), refused = blast_count(&res, 409);
        int64_t oversold = harness_lab_audit(sys.port, name, item, "oversold");
        if (strategies[i].safe) {
            cr_expect_eq(sold, STOCK, "%s sold %zu of %d units on master %zu", name, sold, STOCK,
                         i % MASTERS);
            cr_expect_eq(refused, BUYERS - STOCK, "%s: 200: %zu, 409: %zu, 429: %zu", name, sold,
                         refused, blast_count(&res, 429));
            cr_expect_eq(oversold, 0, "%s", name);
            cr_expect_eq(harness_lab_audit(sys.port, name, item, "remaining"), 0, "%s", name);
            cr_expect_eq(harness_lab_audit(sys.port, name, item, "lock_keys"), 0,
                         "%s left a lock behind", name);
        } else {
            cr_expect_gt(sold, STOCK, "%s sold %zu of %d units: the race did not show", name, sold,
                         STOCK);
            cr_expect_eq(oversold, (int64_t)sold - STOCK, "%s", name);
        }
        cr_expect_eq(harness_lab_audit(sys.port, name, item, "sold"), (int64_t)sold,
                     "%s: %zu answers 200", name, sold);
    }
    redis_cluster_map_free(map);
    harness_system_stop(&sys);
}
