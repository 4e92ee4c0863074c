/* e2e_redis_failover.c: a master of the Redis Cluster killed with -9 in the
 * middle of a sale, its replica taking over (issue 14, item 5). Redis
 * replicates asynchronously, so a master can die holding writes its replica
 * never saw; what seckill promises either way:
 *  - with reserve_wait_replicas = 1, every order answered 202 is persisted
 *    (a 202 waited for a replica to hold the reservation);
 *  - without it, an order answered 202 may be lost with the master, and the
 *    audit counts exactly which;
 *  - either way PostgreSQL never holds more units than the stock (the worker
 *    persists only orders a replica holds, so the new master cannot sell a
 *    persisted unit again), nor a buyer twice, and `seckill-admin
 *    reconcile` finds Redis and PostgreSQL in agreement afterwards.
 *
 * One cluster serves the suite; each test kills a master that has a
 * replica, and starts it again once its replica took over (it rejoins as
 * the new master's replica), so both run on it. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-failover-admin-token"

static harness_system sys;

HARNESS_CLUSTER_SUITE();

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

static void start_waiting(void)
{
    /* The default, auto: one replica, since every master here has one. */
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=failover",
                   "SECKILL_RESERVE_WAIT_TIMEOUT_MS=500", NULL};
    harness_cluster_system_start(&sys, env, "e2e-failover-wait");
}

static void start_not_waiting(void)
{
    /* The opt-out: by default (auto) a master with a replica is waited for. */
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=failover",
                   "SECKILL_RESERVE_WAIT_REPLICAS=0", NULL};
    harness_cluster_system_start(&sys, env, "e2e-failover-nowait");
}

TestSuite(redis_failover, .fini = kill_leftovers, .timeout = 240);

/* Whether master n has a replica online (INFO replication: CLUSTER SLOTS
 * may leave out a replica that has not replicated anything yet). */
static int has_replica(const redis_cluster_node *n)
{
    redisContext *c = harness_cluster_connect(n);
    redisReply *r = redisCommand(c, "INFO replication");
    int yes = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "state=online");
    freeReplyObject(r);
    redisFree(c);
    return yes;
}

/* A master of map with a replica to take over (waiting a few seconds for
 * one to come online). */
static size_t master_with_replica(const redis_cluster_map *map)
{
    int64_t deadline = clock_mono_ms() + 10000;
    for (;;) {
        for (size_t i = 0; i < redis_cluster_map_masters(map); i++)
            if (has_replica(redis_cluster_map_master_at(map, i)))
                return i;
        cr_assert(clock_mono_ms() < deadline, "no master has a replica online");
        harness_sleep_ms(100);
    }
}

/* Waits until the item's stock on its master is at most `left`. */
static void wait_stock_below(const redis_cluster_node *master, const char *state, long long left)
{
    redisContext *c = harness_cluster_connect(master);
    int64_t deadline = clock_mono_ms() + 30000;
    for (;;) {
        redisReply *r = redisCommand(c, "HGET %s stock", state);
        long long stock = r && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
        freeReplyObject(r);
        if (stock >= 0 && stock <= left)
            break;
        cr_assert(clock_mono_ms() < deadline, "the sale did not start: stock %lld", stock);
        harness_sleep_ms(5);
    }
    redisFree(c);
}

/* Waits until none of the item's orders waits for PostgreSQL (its pending
 * hash, on the new master, is empty). */
static void wait_drained(int64_t item)
{
    int64_t deadline = clock_mono_ms() + 60000;
    while (sale_item_number(sys.port, item, "queued") != 0) {
        cr_assert(clock_mono_ms() < deadline,
                  "item %" PRId64 " not drained in 60 s: queued %" PRId64, item,
                  sale_item_number(sys.port, item, "queued"));
        harness_sleep_ms(50);
    }
}

typedef struct failover_result {
    size_t accepted;   /* answered 202, before and after */
    size_t refused;    /* answered 503 (unconfirmed, or no master) while the slot had none */
    int64_t persisted; /* the item's orders in PostgreSQL */
    size_t lost;       /* answered 202, not in PostgreSQL */
} failover_result;

/* The orders answered 202 by s that PostgreSQL does not hold. */
static size_t lost_of(const sale *s, PGconn *pg)
{
    size_t lost = 0;
    char sql[128];
    for (size_t i = 0; i < s->naccepted; i++) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE id = %" PRId64,
                 s->accepted[i]);
        lost += harness_pg_int(pg, sql) == 0;
    }
    return lost;
}

/* A sale of STOCK units: once a quarter is sold, the item's master is
 * killed with -9, and the buyers of that moment hear 503 until its replica
 * takes over (cluster-node-timeout 2 s, then an election). Then a second
 * crowd buys what is left on the new master. Everything drains and is
 * audited: the item sells out, PostgreSQL holds exactly STOCK orders (units
 * a lost reservation held went back on sale with it), no buyer twice, and
 * Redis and PostgreSQL agree. */
static void sale_through_a_failover(failover_result *out)
{
    enum { STOCK = 2000, BUYERS = 6000, CONNECTIONS = 32, RESTOCK = 500 };
    redis_cluster_map *map = harness_cluster_map();
    size_t m = master_with_replica(map);
    int64_t item = harness_cluster_item_on_master(map, m, 5000);
    char state[KEYS_MAX], body[160], resp[1024];
    keys_item_state(state, sizeof(state), item);
    int slot = redis_cluster_slot(state, strlen(state));
    redis_cluster_node master = *redis_cluster_map_master_at(map, m);
    snprintf(body, sizeof(body),
             "{\"id\":%" PRId64 ",\"name\":\"failover\",\"stock\":%d,\"payment_timeout_s\":0}",
             item, STOCK);
    cr_assert_eq(harness_http(sys.port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)),
                 201, "%s", resp);

    sale during, after;
    sale_init(&during, sys.port, item, BUYERS, CONNECTIONS, 1, BUYERS);
    sale_start(&during);
    wait_stock_below(&master, state, STOCK - STOCK / 4);
    pid_t pid = harness_cluster_node_pid(&master);
    cr_assert_eq(kill(pid, SIGKILL), 0, "kill -9 the master %s:%d", master.host, master.port);
    sale_join(&during);
    harness_cluster_wait_new_master(slot, &master, 30000);
    /* The dead node comes back, as its replica: the new master has one
     * again to confirm reservations to (reserve_wait_replicas) and to hold
     * what the worker persists. */
    harness_cluster_node_restart(master.port);
    redis_cluster_map *now = harness_cluster_map();
    const redis_cluster_node *promoted = redis_cluster_map_master(now, slot);
    int64_t deadline = clock_mono_ms() + 20000;
    while (!has_replica(promoted)) {
        cr_assert(clock_mono_ms() < deadline, "the restarted node never became a replica");
        harness_sleep_ms(100);
    }
    redis_cluster_map_free(now);
    /* Ready: the server's purchase path knows the new master. */
    cr_assert_eq(harness_wait_http(sys.port, "/ready", 10000), 0, "the server never got ready");

    sale_init(&after, sys.port, item, BUYERS, CONNECTIONS, 1 + BUYERS, BUYERS);
    cr_assert_eq(sale_run(&after), 0, "load: %s", after.result.errstr);
    cr_expect_gt(after.naccepted, 0, "nothing sold on the new master");
    cr_expect_eq(after.unavailable + after.other, 0,
                 "on the new master: %zu answered 503, %zu other", after.unavailable, after.other);
    cr_expect_eq(sale_item_number(sys.port, item, "remaining"), 0, "not sold out");

    /* The old master takes its slots back (CLUSTER FAILOVER on it: a
     * failback). The server left it alone while it was a replica; now it
     * follows the MOVED there, and a restock sells on it, without a 503. */
    snprintf(body, sizeof(body), "{\"add\":%d}", RESTOCK);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    /* A pool thread's connection to the dead master, used within the last
     * second, fails its first command, answered 503 (nothing added): an
     * admin retries. One idle longer is remade before its command
     * (redis_nodes.h). */
    int st = 0;
    for (int tries = 0; tries < 5 && st != 200; tries++)
        st = harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(st, 200, "%s", resp);
    /* A manual failover needs the replica in sync, and gives up after 5 s
     * when it is not: asked again until it holds. */
    redisContext *old = harness_cluster_connect(&master);
    int64_t asked = 0;
    for (deadline = clock_mono_ms() + 30000;; harness_sleep_ms(50)) {
        redis_cluster_map *m2 = harness_cluster_map();
        int back = redis_cluster_node_equal(redis_cluster_map_master(m2, slot), &master);
        redis_cluster_map_free(m2);
        if (back)
            break;
        cr_assert(clock_mono_ms() < deadline, "the old master never took its slots back");
        redisReply *info = redisCommand(old, "INFO replication");
        int synced =
            info && info->type == REDIS_REPLY_STRING && strstr(info->str, "master_link_status:up");
        freeReplyObject(info);
        if (synced && clock_mono_ms() - asked > 6000) {
            redisReply *r = redisCommand(old, "CLUSTER FAILOVER");
            cr_assert(r && r->type == REDIS_REPLY_STATUS, "CLUSTER FAILOVER: %s",
                      r && r->str ? r->str : "no reply");
            freeReplyObject(r);
            asked = clock_mono_ms();
        }
    }
    redisFree(old);
    sale again;
    sale_init(&again, sys.port, item, 2 * RESTOCK, CONNECTIONS, 1 + 2 * BUYERS, 2 * RESTOCK);
    cr_assert_eq(sale_run(&again), 0, "load: %s", again.result.errstr);
    cr_expect_eq(again.naccepted, RESTOCK, "the restock sold on the old master");
    cr_expect_eq(again.unavailable + again.other, 0,
                 "after the failback: %zu answered 503, %zu other", again.unavailable, again.other);

    wait_drained(item);
    PGconn *pg = harness_pg();
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item);
    out->persisted = harness_pg_int(pg, sql);
    cr_expect_eq(out->persisted, STOCK + RESTOCK, "PostgreSQL holds %" PRId64 " orders of %d units",
                 out->persisted, STOCK + RESTOCK);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM (SELECT user_id FROM orders WHERE item_id = %" PRId64
             " GROUP BY user_id HAVING count(*) > 1) twice",
             item);
    cr_expect_eq(harness_pg_int(pg, sql), 0, "a buyer holds two orders");
    out->accepted = during.naccepted + after.naccepted + again.naccepted;
    out->refused = during.unavailable;
    out->lost = lost_of(&during, pg) + lost_of(&after, pg) + lost_of(&again, pg);
    PQfinish(pg);
    cr_log_info("failover: %zu answered 202 (%zu before and during it), %zu answered 503 during "
                "it, %" PRId64 " persisted, %zu answered 202 and lost",
                out->accepted, during.naccepted, out->refused, out->persisted, out->lost);

    char *check[] = {"reconcile", NULL};
    cr_expect_eq(harness_cluster_admin(check, resp, sizeof(resp)), 0, "reconcile:\n%s", resp);
    sale_free(&during);
    sale_free(&after);
    sale_free(&again);
    redis_cluster_map_free(map);
}

Test(redis_failover, with_reserve_wait_replicas_every_202_survives_a_master_killed_mid_sale,
     .init = start_waiting)
{
    failover_result r;
    sale_through_a_failover(&r);
    cr_expect_eq(r.lost, 0, "%zu orders answered 202 were lost with the master", r.lost);
    harness_system_stop(&sys);
}

Test(redis_failover, without_it_the_audit_counts_what_was_lost_and_nothing_is_oversold,
     .init = start_not_waiting)
{
    failover_result r;
    sale_through_a_failover(&r);
    /* What a master takes with it is what its replica had not copied: on
     * one machine that is rarely anything, so the count is reported, not
     * asserted; what is asserted is that the books still hold. */
    cr_expect_leq(r.lost, r.accepted);
    harness_system_stop(&sys);
}
