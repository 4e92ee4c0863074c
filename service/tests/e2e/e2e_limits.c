/* e2e_limits.c: a flooding buyer is slowed down with 429 and Retry-After
 * while everybody else buys; 10,000 buyers on 10,000 connections at once are
 * all answered and the stock is sold exactly. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "sale.h"

#define TOKEN "limits-admin-token"

static harness_system sys;
static char resp[1 << 16];

static void start_system(void)
{
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=limits",
                   "SECKILL_RATE_LIMIT_PER_S=1", "SECKILL_RATE_LIMIT_BURST=3", NULL};
    harness_system_start(&sys, env, "limits");
}

static void stop_system(void)
{
    harness_system_stop(&sys);
}

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

TestSuite(limits, .init = start_system, .fini = kill_leftovers, .timeout = 180);

/* One purchase, raw, so that the headers can be read. */
static int buy(int64_t item, int64_t user)
{
    char req[256];
    int n = snprintf(req, sizeof(req),
                     "POST /api/v1/items/%" PRId64 "/purchase?user_id=%" PRId64 " HTTP/1.1\r\n"
                     "Host: t\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                     item, user);
    return harness_raw(sys.port, req, (size_t)n, 5000, resp, sizeof(resp));
}

Test(limits, a_flooding_buyer_gets_429_with_retry_after_while_others_buy)
{
    int64_t item = sale_create_item(sys.port, TOKEN, "limited", 100);
    cr_assert_eq(buy(item, 5), 202, "%s", resp);
    /* Already purchased (409 limit_reached), or the order still being
     * created (429 in_progress, its lock): a token all the same. */
    for (int i = 0; i < 2; i++) {
        int status = buy(item, 5);
        cr_assert((status == 409 && strstr(resp, "\"limit_reached\"")) ||
                      (status == 429 && strstr(resp, "\"in_progress\"")),
                  "press %d: %s", i, resp);
    }
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(buy(item, 5), 429, "press %d: %s", i, resp);
        cr_expect(strstr(resp, "\"rate_limited\""), "%s", resp);
        cr_expect(strstr(resp, "Retry-After: 1\r\n"), "%s", resp);
    }
    cr_expect_eq(buy(item, 6), 202, "another buyer is not slowed down: %s", resp);
    usleep(1100 * 1000); /* one token back (1 a second) */
    cr_expect_eq(buy(item, 5), 409, "after Retry-After: %s", resp);
    cr_expect(strstr(resp, "limit_reached"), "%s", resp);
    stop_system();
}

Test(limits, ten_thousand_buyers_on_ten_thousand_connections_are_all_answered)
{
    enum { BUYERS = 10000, STOCK = 5000 };
    sale s;
    sale_init(&s, sys.port, sale_create_item(sys.port, TOKEN, "crowd", STOCK), BUYERS, BUYERS, 1,
              BUYERS);
    cr_assert_eq(sale_run(&s), 0, "%s", s.result.errstr);
    cr_log_info("10,000 connections: %zu connects, %" PRId64 " ms", s.result.connects,
                s.result.elapsed_ms);
    cr_expect_eq(s.naccepted, STOCK);
    cr_expect_eq(s.sold_out, BUYERS - STOCK);
    cr_expect_eq(s.other + s.unavailable, 0);
    sale_wait_drained(60000);
    PGconn *pg = harness_pg();
    sale_assert_exactly_persisted(&s, pg);
    PQfinish(pg);
    sale_free(&s);
    cr_expect_eq(harness_http(sys.port, "GET", "/health", NULL, NULL, resp, sizeof(resp)), 200);
    stop_system();
}
