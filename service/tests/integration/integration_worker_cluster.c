/* integration_worker_cluster.c: seckill-worker and seckill-admin on a real
 * Redis Cluster of 3 masters and 3 replicas (services.sh cluster-start),
 * given only its seeds: the worker drains the queues of items spread over
 * every master into PostgreSQL, each order once, its sweep finds a dead
 * worker's lists on every master, and reconcile reads every item's books on
 * its own node and finds them balanced. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "order.h"
#include "redis_cluster.h"
#include "redis_nodes.h"
#include "registry.h"
#include "scripts.h"

#define ITEMS 12
#define ORDERS 200 /* an item: more than a batch */
#define DEAD 30    /* an item: in the dead worker's processing list */
#define CREATED_MS 1767225600000LL
#define DRAIN_TIMEOUT_MS 30000

HARNESS_CLUSTER_SUITE();

static pid_t worker_pid;
static config cfg; /* the run's, with the cluster's seeds */
static redis_nodes *nodes;

static void setup(void)
{
    harness_cluster_config(&cfg);
    nodes = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(nodes);
}

static void teardown(void)
{
    harness_kill_leftover(&worker_pid);
    redis_nodes_free(nodes);
    nodes = NULL;
    config_free(&cfg);
}

TestSuite(worker_cluster, .init = setup, .fini = teardown, .timeout = 120);

/* The number of masters serving the queues of items 1..ITEMS. */
static size_t masters_of_the_items(void)
{
    redis_cluster_node seeds[8];
    char err[512];
    int n = redis_cluster_seeds_parse(cfg.redis_cluster, seeds, 8, err, sizeof(err));
    cr_assert(n > 0, "%s", err);
    redis_cluster_map *map =
        backend_redis_cluster_map(seeds, (size_t)n, 2000, NULL, err, sizeof(err));
    cr_assert_not_null(map, "%s", err);
    const redis_cluster_node *seen[ITEMS];
    size_t distinct = 0;
    for (int64_t item = 1; item <= ITEMS; item++) {
        char key[KEYS_MAX];
        keys_queue(key, sizeof(key), item);
        const redis_cluster_node *m = redis_cluster_map_master_of_key(map, key, strlen(key));
        cr_assert_not_null(m);
        size_t k = 0;
        while (k < distinct && !redis_cluster_node_equal(seen[k], m))
            k++;
        if (k == distinct)
            seen[distinct++] = m;
    }
    redis_cluster_map_free(map);
    return distinct;
}

/* LPUSHes n orders of item (ids from first_id, one unit each) onto list
 * key through nodes, registering the item as its creation would. */
static void push_orders(const char *key, int64_t item, int64_t first_id, int n)
{
    cr_assert_eq(registry_add(nodes, item), 0);
    for (int i = 0; i < n; i++) {
        order o = {first_id + i, item, first_id + i, 1, CREATED_MS + i, 1, 1, 0, 0};
        char buf[256];
        cr_assert(order_encode(&o, buf, sizeof(buf)) > 0);
        const char *argv[] = {"LPUSH", key, buf};
        redisReply *r = redis_nodes_command(nodes, key, 3, argv, NULL);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "LPUSH %s", key);
        freeReplyObject(r);
    }
}

/* "<cmd> <key>" through nodes, an integer. */
static long long nodes_int(const char *cmd, const char *key)
{
    const char *argv[] = {cmd, key};
    redisReply *r = redis_nodes_command(nodes, key, 2, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s %s", cmd, key);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Item's state in Redis as a sold-out round 1 of its stock (lua/item_reset.lua on
 * its node), and its row in PostgreSQL. */
static void create_item(PGconn *pg, scripts *sc, int64_t item, int stock)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    keys_item_buyers(buyers, sizeof(buyers), item);
    keys_item_returned(returned, sizeof(returned), item);
    keys_item_given_back(given_back, sizeof(given_back), item);
    const char *ka[] = {state, buyers, returned, given_back, "0", "1", "0", "0", "1000"};
    redisReply *r = redis_nodes_script(nodes, &sc->s[SCRIPT_ITEM_RESET], 4, 5, ka);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "item_reset of %" PRId64,
              item);
    freeReplyObject(r);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO items (id, name, initial_stock, round) VALUES (%" PRId64
             ", 'item', %d, 1)",
             item, stock);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(res);
}

Test(worker_cluster,
     drains_every_masters_queues_and_sweeps_every_masters_lists_then_the_books_balance)
{
    cr_assert_eq(masters_of_the_items(), 3, "the items' queues are on every master");
    harness_reset_backends();
    PGconn *pg = harness_pg();
    scripts sc;
    cr_assert_eq(scripts_init(&sc), 0);
    /* Every item sold out: ORDERS queued, DEAD in the list of a worker that
     * died without a heartbeat. */
    for (int64_t item = 1; item <= ITEMS; item++) {
        char queue[KEYS_MAX], list[KEYS_MAX];
        keys_queue(queue, sizeof(queue), item);
        keys_processing(list, sizeof(list), item, "gone");
        create_item(pg, &sc, item, ORDERS + DEAD);
        push_orders(queue, item, item * 100000, ORDERS);
        push_orders(list, item, item * 100000 + ORDERS, DEAD);
    }

    char *argv[] = {"seckill-worker",
                    "--worker-id",
                    "wc",
                    "--redis-cluster",
                    cfg.redis_cluster,
                    "--worker-sweep-ms",
                    "300",
                    "--worker-batch-size",
                    "50",
                    "--log-level",
                    "debug",
                    NULL};
    worker_pid = harness_spawn(SECKILL_WORKER_BIN, argv, NULL,
                               harness_path("integration_worker_cluster.log"));
    const int64_t all = (int64_t)ITEMS * (ORDERS + DEAD);
    int64_t deadline = clock_mono_ms() + DRAIN_TIMEOUT_MS;
    while (harness_pg_int(pg, "SELECT count(*) FROM orders") < all) {
        cr_assert(clock_mono_ms() < deadline, "the worker did not persist every order: see %s",
                  harness_path("integration_worker_cluster.log"));
        harness_sleep_ms(50);
    }
    /* Acknowledged too: nothing left in any list. */
    for (int64_t item = 1; item <= ITEMS; item++) {
        char key[KEYS_MAX];
        keys_queue(key, sizeof(key), item);
        while (nodes_int("LLEN", key) > 0) {
            cr_assert(clock_mono_ms() < deadline, "item %" PRId64 "'s queue", item);
            harness_sleep_ms(50);
        }
        keys_processing(key, sizeof(key), item, "gone");
        cr_assert_eq(nodes_int("EXISTS", key), 0, "the dead worker's list was swept");
        keys_processing(key, sizeof(key), item, "wc");
        while (nodes_int("LLEN", key) > 0) {
            cr_assert(clock_mono_ms() < deadline, "item %" PRId64 "'s processing list", item);
            harness_sleep_ms(50);
        }
    }
    int status = harness_stop(worker_pid, SIGTERM);
    worker_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "worker status %d", status);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT id) FROM orders"), all, "each once");

    char out[16384];
    char *args[] = {"reconcile", "--redis-cluster", cfg.redis_cluster, NULL};
    cr_assert_eq(harness_admin(args, out, sizeof(out)), 0, "the books on the cluster:\n%s", out);
    cr_expect(strstr(out, "0 item(s) drifting"), "%s", out);
    PQfinish(pg);
}
