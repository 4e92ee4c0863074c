/* e2e_worker_crash.c: seckill-worker killed with SIGKILL while it holds a
 * batch, several times, then restarted with the same worker id: every order
 * that was queued reaches PostgreSQL exactly once, with one item or two
 * (each its own queue, drained one at a time). */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "keys.h"
#include "order.h"
#include "worker_items.h"

#define WORKER_ID "crash"
#define FIRST_ID 1000000LL
#define N 50000
#define KILLS 4
#define WAIT_MS 120000

/* The worker child of the running test, so that .fini stops it even when an
 * assertion ended the test early. */
static pid_t worker_pid;

static void stop_leftover_worker(void)
{
    if (worker_pid > 0)
        harness_stop(worker_pid, SIGKILL);
    worker_pid = 0;
}

static void start_worker(void)
{
    /* A short sweep period, hence heartbeat TTL (0.9 s): the restart waits
     * out the killed run's heartbeat before it takes the id. */
    char *argv[] = {"seckill-worker",    "--worker-id", WORKER_ID, "--worker-batch-size", "200",
                    "--worker-sweep-ms", "300",         NULL};
    worker_pid =
        harness_spawn(SECKILL_WORKER_BIN, argv, NULL, harness_path("e2e_worker_crash.log"));
}

Test(worker_crash, a_worker_killed_while_holding_a_batch_and_restarted_persists_every_order_once,
     .fini = stop_leftover_worker, .timeout = 300)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    char processing[KEYS_MAX];
    keys_processing(processing, sizeof(processing), 1, WORKER_ID);
    PGresult *res = PQexec(pg, "INSERT INTO items (id, name, initial_stock, round) "
                               "VALUES (1, 'crash', 50000, 1)");
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(res);
    /* Item 1, round 1, one buyer each. */
    harness_push_orders(c, FIRST_ID, 1, N, 1, 1, clock_wall_ms());

    int held = 0;
    for (int kill = 1; kill <= KILLS; kill++) {
        start_worker();
        /* Let it get past its recovery and into the stream... */
        int64_t deadline = clock_mono_ms() + WAIT_MS;
        while (harness_pg_int(pg, "SELECT count(*) FROM orders") <
               (int64_t)N * kill / (KILLS + 1)) {
            cr_assert(clock_mono_ms() < deadline, "the worker stalled");
            usleep(1000);
        }
        /* ...then kill it the moment it holds a batch. */
        while (harness_redis_int(c, "LLEN", processing) == 0)
            cr_assert(clock_mono_ms() < deadline, "the worker never held a batch");
        harness_stop(worker_pid, SIGKILL);
        worker_pid = 0;
        long long in_hand = harness_redis_int(c, "LLEN", processing);
        int64_t rows = harness_pg_int(pg, "SELECT count(*) FROM orders");
        cr_log_info("kill %d: %lld orders in the processing list, %lld rows", kill, in_hand,
                    (long long)rows);
        cr_assert_lt(rows, N, "the worker finished before it could be killed: raise N");
        held += in_hand > 0;
    }
    cr_assert_gt(held, 0, "no kill caught the worker holding a batch");

    start_worker();
    int64_t deadline = clock_mono_ms() + WAIT_MS;
    while (harness_redis_sum(c, "LLEN", keys_queue) > 0 ||
           harness_redis_int(c, "LLEN", processing) > 0) {
        cr_assert(clock_mono_ms() < deadline, "the restarted worker did not drain the queue");
        usleep(10 * 1000);
    }
    int status = harness_stop(worker_pid, SIGTERM);
    worker_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), N);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT id) FROM orders"), N);
    /* Same size and nothing pushed is missing: the same set of ids. */
    char missing[256];
    snprintf(missing, sizeof(missing),
             "SELECT count(*) FROM generate_series(%lld, %lld) g "
             "LEFT JOIN orders o ON o.id = g WHERE o.id IS NULL",
             FIRST_ID, FIRST_ID + N - 1);
    cr_assert_eq(harness_pg_int(pg, missing), 0);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0);
    PQfinish(pg);
    redisFree(c);
}

/* The orders in this worker's processing lists of items 1 and 2. */
static long long held_by_worker(redisContext *c, long long *per_item)
{
    long long total = 0;
    for (int64_t item = 1; item <= 2; item++) {
        char key[KEYS_MAX];
        keys_processing(key, sizeof(key), item, WORKER_ID);
        per_item[item - 1] = harness_redis_int(c, "LLEN", key);
        total += per_item[item - 1];
    }
    return total;
}

Test(worker_crash,
     two_items_queues_are_drained_once_each_through_kills_mid_drain_and_a_trickle_is_quick,
     .fini = stop_leftover_worker, .timeout = 300)
{
    enum { PER_ITEM = 20000 };
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    PGresult *res = PQexec(pg, "INSERT INTO items (id, name, initial_stock, round) "
                               "VALUES (1, 'one', 50000, 1), (2, 'two', 50000, 1)");
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(res);
    /* Each item its queue, in its own slot; ids FIRST_ID.. for item 1 and
     * FIRST_ID + PER_ITEM.. for item 2. */
    harness_push_orders(c, FIRST_ID, 1, PER_ITEM, 1, 1, clock_wall_ms());
    harness_push_orders(c, FIRST_ID + PER_ITEM, 1, PER_ITEM, 2, 1, clock_wall_ms());

    int caught[2] = {0, 0};
    for (int kill = 1; kill <= KILLS; kill++) {
        start_worker();
        int64_t deadline = clock_mono_ms() + WAIT_MS;
        while (harness_pg_int(pg, "SELECT count(*) FROM orders") <
               (int64_t)2 * PER_ITEM * kill / (KILLS + 1)) {
            cr_assert(clock_mono_ms() < deadline, "the worker stalled");
            usleep(1000);
        }
        long long per_item[2];
        while (held_by_worker(c, per_item) == 0)
            cr_assert(clock_mono_ms() < deadline, "the worker never held a batch");
        harness_stop(worker_pid, SIGKILL);
        worker_pid = 0;
        held_by_worker(c, per_item);
        cr_log_info("kill %d: item 1's list %lld, item 2's %lld", kill, per_item[0], per_item[1]);
        for (int i = 0; i < 2; i++)
            caught[i] += per_item[i] > 0;
        cr_assert(per_item[0] == 0 || per_item[1] == 0, "one item's queue at a time");
    }
    cr_assert_gt(caught[0] + caught[1], 0, "no kill caught the worker holding a batch");

    start_worker();
    int64_t deadline = clock_mono_ms() + WAIT_MS;
    long long per_item[2];
    while (harness_redis_sum(c, "LLEN", keys_queue) > 0 || held_by_worker(c, per_item) > 0) {
        cr_assert(clock_mono_ms() < deadline, "the restarted worker did not drain the queues");
        usleep(10 * 1000);
    }
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), 2 * PER_ITEM);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT id) FROM orders"), 2 * PER_ITEM);
    cr_assert_eq(
        harness_pg_int(pg, "SELECT count(*) FROM orders WHERE item_id = 2 AND id >= 1020000"),
        PER_ITEM, "item 2's orders are item 2's");
    char missing[256];
    snprintf(missing, sizeof(missing),
             "SELECT count(*) FROM generate_series(%lld, %lld) g "
             "LEFT JOIN orders o ON o.id = g WHERE o.id IS NULL",
             FIRST_ID, FIRST_ID + 2 * PER_ITEM - 1);
    cr_assert_eq(harness_pg_int(pg, missing), 0);

    /* A trickle on both items while the worker idles: each order is in
     * PostgreSQL within the batch time and a poll, not a registry refresh. */
    int64_t t0 = clock_mono_ms();
    harness_push_orders(c, FIRST_ID + 2 * PER_ITEM, 1000000, 1, 1, 1, clock_wall_ms());
    harness_push_orders(c, FIRST_ID + 2 * PER_ITEM + 1, 1000001, 1, 2, 1, clock_wall_ms());
    while (harness_pg_int(pg, "SELECT count(*) FROM orders") < 2 * PER_ITEM + 2) {
        cr_assert(clock_mono_ms() - t0 < 2000, "a trickle waited more than 2 s");
        usleep(2000);
    }
    cr_log_info("two trickled orders persisted in %lld ms", (long long)(clock_mono_ms() - t0));
    cr_expect_lt(clock_mono_ms() - t0, WORKER_ITEMS_REFRESH_MS,
                 "a trickle waited for a registry refresh");

    int status = harness_stop(worker_pid, SIGTERM);
    worker_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0);
    PQfinish(pg);
    redisFree(c);
}
