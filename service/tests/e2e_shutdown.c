/* e2e_shutdown.c: SIGTERM under load. The server stops accepting, answers
 * what is in flight and exits 0; the worker commits or keeps its batch and
 * exits 0; afterwards the books balance and every 202 is persisted once. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "sale.h"
#include "keys.h"

#define TOKEN "shutdown-admin-token"

static int port;
static pid_t server_pid, worker_pid;
static char resp[1 << 16];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=shutdown", NULL};

static void start_system(void)
{
    harness_reset_backends();
    server_pid = harness_start_server(&port, env, "shutdown-server.log");
    worker_pid = harness_start_worker(env, "shutdown-worker.log");
}

static void kill_leftovers(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
}

TestSuite(shutdown, .init = start_system, .fini = kill_leftovers, .timeout = 300);

Test(shutdown, sigterm_under_load_stops_both_cleanly_and_loses_nothing)
{
    enum { STOCK = 20000, BUYERS = 30000 };
    sale s;
    sale_init(&s, port, sale_create_item(port, TOKEN, "stop", STOCK), BUYERS, 100, 1, BUYERS);
    s.spec.timeout_ms = 60000;
    sale_start(&s);
    sale_wait_sold(s.item, 2000, 30000);
    /* Both stop in the middle of the sale: the worker holds a batch, the
     * server has requests in flight. */
    harness_stop_clean(&worker_pid, "worker");
    harness_stop_clean(&server_pid, "server");
    sale_join(&s);
    cr_log_info("accepted %zu; %zu requests got no answer", s.naccepted, s.result.lost);

    /* A new worker finishes what the old one kept. */
    worker_pid = harness_start_worker(env, "shutdown-worker.log");
    sale_wait_drained(60000);
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "%s", resp);
    PGconn *pg = harness_pg();
    sale_assert_persisted(&s, pg);
    PQfinish(pg);
    /* What was in flight got its answer: no request was cut without one. */
    cr_expect_eq(s.result.lost, 0, "%zu requests in flight at the stop got no answer",
                 s.result.lost);
    sale_free(&s);
    harness_stop_clean(&worker_pid, "worker");
}
