/* e2e_worker_sweep.c: three workers share the queue; one is killed with
 * SIGKILL while it holds a batch and never comes back. The sweep, run by
 * one worker per period (elected with the Redis lock), puts its processing
 * list back onto the queue, and every order reaches PostgreSQL once. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "keys.h"
#include "order.h"

#define WORKERS 3
#define VICTIM 1
#define FIRST_ID 3000000LL
#define N 30000
#define PERIOD_MS 300
#define WAIT_MS 120000
#define MAX_ELECTIONS 4096

static const char *const ids[WORKERS] = {"sweep-a", "sweep-b", "sweep-c"};
static pid_t pids[WORKERS];

static void stop_leftover_workers(void)
{
    for (int i = 0; i < WORKERS; i++)
        harness_kill_leftover(&pids[i]);
}

static const char *log_path(int i)
{
    char name[64];
    snprintf(name, sizeof(name), "e2e_worker_sweep-%s.log", ids[i]);
    return harness_path(name);
}

static void start_worker(int i)
{
    char *argv[] = {"seckill-worker",
                    "--worker-id",
                    (char *)ids[i],
                    "--worker-batch-size",
                    "200",
                    "--worker-sweep-ms",
                    "300",
                    "--log-level",
                    "debug",
                    NULL};
    pids[i] = harness_spawn(SECKILL_WORKER_BIN, argv, NULL, log_path(i));
}

/* The accepted orders' entries in item 1's pending hash, as the reserve script
 * writes them: the worker that persists an order removes its entry. */
static void push_pending(redisContext *c)
{
    char id[24], payload[256];
    for (int i = 0; i < N; i++) {
        order o = {FIRST_ID + i, 1, 1 + i, 1, clock_wall_ms(), 1, 1, 0, 0};
        cr_assert(order_encode(&o, payload, sizeof(payload)) > 0);
        snprintf(id, sizeof(id), "%lld", (long long)o.id);
        redisAppendCommand(c, "HSET %s %s %s", harness_pending_key(1), id, payload);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK, "HSET failed");
        freeReplyObject(r);
    }
}

/* One sweep election as the winner logged it. */
typedef struct election {
    long long asked, answered;
} election;

/* Reads the workers' logs: the elections into e (returns how many), and
 * into *recovered the orders of the victim's list the sweeps moved. */
static int read_logs(election *e, long long *recovered)
{
    char line[1024], victim[128];
    int n = 0;
    snprintf(victim, sizeof(victim), "worker %s has no heartbeat: ", ids[VICTIM]);
    *recovered = 0;
    for (int i = 0; i < WORKERS; i++) {
        FILE *f = fopen(log_path(i), "r");
        cr_assert(f, "no log %s", log_path(i));
        while (fgets(line, sizeof(line), f)) {
            const char *p = strstr(line, "sweep: elected for ");
            int period;
            if (p && n < MAX_ELECTIONS &&
                sscanf(p, "sweep: elected for %d ms (asked at %lld, answered at %lld)", &period,
                       &e[n].asked, &e[n].answered) == 3)
                n++;
            if ((p = strstr(line, victim)) != NULL)
                *recovered += strtoll(p + strlen(victim), NULL, 10);
            else if (strstr(line, "has no heartbeat"))
                cr_log_info("a live worker was taken for dead (a repeat, not a loss): %s", line);
        }
        fclose(f);
    }
    return n;
}

Test(worker_sweep, a_worker_killed_for_good_has_its_orders_recovered_by_the_elected_sweep,
     .fini = stop_leftover_workers, .timeout = 300)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    PGconn *pg = harness_pg();
    char processing[WORKERS][KEYS_MAX];
    for (int i = 0; i < WORKERS; i++)
        keys_processing(processing[i], sizeof(processing[i]), 1, ids[i]);
    PGresult *res = PQexec(pg, "INSERT INTO items (id, name, initial_stock, round) "
                               "VALUES (1, 'sweep', 30000, 1)");
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(res);
    harness_push_orders(c, FIRST_ID, 1, N, 1, 1, clock_wall_ms());
    push_pending(c);

    for (int i = 0; i < WORKERS; i++)
        start_worker(i);
    int64_t deadline = clock_mono_ms() + WAIT_MS;
    while (harness_pg_int(pg, "SELECT count(*) FROM orders") < N / 5) {
        cr_assert(clock_mono_ms() < deadline, "the workers stalled");
        usleep(1000);
    }

    /* Kill the victim the moment it holds a batch: frozen first, so that it
     * cannot acknowledge the batch between the look and the kill. */
    long long in_hand = 0;
    while (in_hand == 0) {
        cr_assert(clock_mono_ms() < deadline, "the victim never held a batch");
        if (harness_redis_int(c, "LLEN", processing[VICTIM]) == 0)
            continue;
        harness_freeze(pids[VICTIM]);
        in_hand = harness_redis_int(c, "LLEN", processing[VICTIM]);
        if (in_hand == 0)
            kill(pids[VICTIM], SIGCONT);
    }
    harness_stop(pids[VICTIM], SIGKILL);
    pids[VICTIM] = 0;
    int64_t rows = harness_pg_int(pg, "SELECT count(*) FROM orders");
    cr_log_info("killed %s holding %lld orders, %lld rows", ids[VICTIM], in_hand, (long long)rows);
    cr_assert_lt(rows, N, "the workers finished before the kill: raise N");

    /* The survivors drain the queue; the sweep hands them the dead list. */
    while (harness_redis_sum(c, "LLEN", keys_queue) > 0 ||
           harness_redis_sum(c, "HLEN", keys_pending) > 0 ||
           harness_redis_int(c, "EXISTS", processing[VICTIM]) > 0) {
        cr_assert(clock_mono_ms() < deadline,
                  "not drained: queue %lld, pending %lld, dead worker's list %lld",
                  harness_redis_sum(c, "LLEN", keys_queue),
                  harness_redis_sum(c, "HLEN", keys_pending),
                  harness_redis_int(c, "LLEN", processing[VICTIM]));
        usleep(20 * 1000);
    }
    for (int i = 0; i < WORKERS; i++)
        if (i != VICTIM)
            harness_stop_clean(&pids[i], ids[i]);

    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders"), N);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(DISTINCT id) FROM orders"), N);
    char missing[256];
    snprintf(missing, sizeof(missing),
             "SELECT count(*) FROM generate_series(%lld, %lld) g "
             "LEFT JOIN orders o ON o.id = g WHERE o.id IS NULL",
             FIRST_ID, FIRST_ID + N - 1);
    cr_assert_eq(harness_pg_int(pg, missing), 0);
    for (int i = 0; i < WORKERS; i++)
        cr_assert_eq(harness_redis_int(c, "LLEN", processing[i]), 0, "%s", processing[i]);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_queue), 0);
    cr_assert_eq(harness_redis_sum(c, "HLEN", keys_pending), 0);
    cr_assert_eq(harness_redis_sum(c, "LLEN", keys_dead), 0);

    /* What the logs say: the victim's whole list came back through the
     * sweep, and no two sweeps were elected within one period. A win is
     * somewhere between its asking and its answer, and the lock (NX PX
     * PERIOD_MS) lets the next win come PERIOD_MS after the last at the
     * earliest: so of any two, the later answer is at least PERIOD_MS after
     * the earlier asking. */
    static election e[MAX_ELECTIONS];
    long long recovered = 0;
    int n = read_logs(e, &recovered);
    cr_log_info("%d sweeps elected; %lld orders recovered", n, recovered);
    cr_assert_eq(recovered, in_hand, "the sweep moved the victim's list back whole");
    cr_assert_geq(n, 2);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            long long gap_ij = e[j].answered - e[i].asked;
            long long gap_ji = e[i].answered - e[j].asked;
            long long gap = gap_ij > gap_ji ? gap_ij : gap_ji;
            cr_assert_geq(gap, PERIOD_MS, "two sweeps in one period: %lld-%lld and %lld-%lld",
                          e[i].asked, e[i].answered, e[j].asked, e[j].answered);
        }
    PQfinish(pg);
    redisFree(c);
}
