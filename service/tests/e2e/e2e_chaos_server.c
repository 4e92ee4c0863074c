/* e2e_chaos_server.c: a server killed under load, and a server paused
 * (SIGSTOP) with a buyer's request in its socket. The books must balance after
 * each: no reservation without its order, no order without its
 * reservation, no buyer twice. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Buyer user's purchase of item sent to the server on srv_port; its answer
 * is read later (harness_http_answer). The connection's fd, or -1. */
static int buy_send(int srv_port, int64_t item, int64_t user)
{
    char path[96], body[48];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return harness_http_send(srv_port, "POST", path, NULL, body);
}

static int buy(int srv_port, int64_t item, int64_t user)
{
    int fd = buy_send(srv_port, item, user);
    return fd < 0 ? -1 : harness_http_answer(fd, resp, sizeof(resp));
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
     * reads the request: the request waits in A's socket while the buyer
     * tries server B. A must have stopped before the request is sent: a
     * kill() alone returns while A's other threads still run, and on a
     * loaded machine A answered the request 202 first (B then said
     * in_progress), which is no failure of the product. */
    harness_freeze(sys.server);
    int waiting = buy_send(sys.port, item, 9);
    cr_assert_geq(waiting, 0, "server A, frozen, took no connection");
    cr_expect_eq(buy(other_port, item, 9), 202, "server B: %s", resp);
    kill(sys.server, SIGCONT);
    /* Refused: 409 limit_reached, or 429 in_progress while server B's
     * order is still on its way to PostgreSQL (its lock stands). */
    int status = harness_http_answer(waiting, resp, sizeof(resp));
    cr_expect((status == 409 && strstr(resp, "\"limit_reached\"")) ||
                  (status == 429 && strstr(resp, "\"in_progress\"")),
              "server A, resumed, did not refuse (409 limit_reached or 429 in_progress): %d %s",
              status, resp);
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
