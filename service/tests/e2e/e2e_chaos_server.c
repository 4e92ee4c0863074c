/* e2e_chaos_server.c: a server killed under load, and a server paused
 * (SIGSTOP) while a buyer's lock would expire. The books must balance after
 * each: no reservation without its order, no order without its
 * reservation, no buyer twice. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "sale.h"
#include "keys.h"

#define TOKEN "chaos-admin-token"

static harness_system sys;
static char resp[1 << 16];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=chaos", NULL};

static void start_system(void)
{
    harness_system_start(&sys, env, "chaos");
}

/* The end of every test: what still runs stops cleanly (the killed server
 * of the first test is gone already). */
static void stop_system(void)
{
    if (sys.server > 0)
        harness_stop_clean(&sys.server, "server");
    harness_stop_clean(&sys.worker, "worker");
}

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

TestSuite(chaos_server, .init = start_system, .fini = kill_leftovers, .timeout = 300);

static int64_t create_item(int srv_port, int64_t stock)
{
    return sale_create_item(srv_port, TOKEN, "chaos", stock);
}

static int buy(int srv_port, int64_t item, int64_t user)
{
    char path[96], body[48];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return harness_http(srv_port, "POST", path, NULL, body, resp, sizeof(resp));
}

Test(chaos_server, a_server_killed_under_load_leaves_no_reservation_without_its_order)
{
    enum { STOCK = 5000, BUYERS = 20000 };
    sale s;
    sale_init(&s, sys.port, create_item(sys.port, STOCK), BUYERS, 100, 1, BUYERS);
    s.spec.timeout_ms = 60000;
    sale_start(&s);
    sale_wait_sold(s.item, 1000, 30000);
    harness_stop(sys.server, SIGKILL);
    sys.server = 0;
    sale_join(&s);
    cr_log_info("accepted %zu before the kill; %zu answers lost with it", s.naccepted,
                s.result.lost);
    sale_wait_drained(60000);

    /* Every unit Redis counts as sold is an order in PostgreSQL, and every
     * 202 is among them. */
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "%s", resp);
    PGconn *pg = harness_pg();
    sale_assert_persisted(&s, pg);
    PQfinish(pg);
    sale_free(&s);
    stop_system();
}

Test(chaos_server, a_server_stopped_mid_request_and_resumed_does_not_sell_twice_to_one_buyer)
{
    int64_t item = create_item(sys.port, 10);
    int other_port;
    pid_t other = harness_start_server(&other_port, env, "chaos-server-b.log");
    /* Buyer 9 presses buy on server A, which is frozen (SIGSTOP) before it
     * reads the request; after a while the buyer tries server B. */
    kill(sys.server, SIGSTOP);
    pid_t child = fork();
    if (child == 0) {
        /* Refused: 409 limit_reached, or 429 in_progress while server B's
         * order is still on its way to PostgreSQL (its lock stands). */
        int status = buy(sys.port, item, 9);
        int refused = status == 409 || (status == 429 && strstr(resp, "\"in_progress\""));
        _exit(refused ? 0 : status == 202 ? 2 : 1);
    }
    usleep(300 * 1000);
    cr_expect_eq(buy(other_port, item, 9), 202, "server B: %s", resp);
    kill(sys.server, SIGCONT);
    int status;
    waitpid(child, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "server A, resumed, did not refuse (409 limit_reached or 429 in_progress; exit %d)",
              WEXITSTATUS(status));
    harness_stop_clean(&other, "server B");
    sale_wait_drained(60000);
    PGconn *pg = harness_pg();
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE item_id = %" PRId64 " AND user_id = 9", item);
    cr_expect_eq(harness_pg_int(pg, sql), 1);
    PQfinish(pg);
    stop_system();
}
