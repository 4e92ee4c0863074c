/* e2e_limits.c: a flooding buyer is slowed down with 429 and Retry-After
 * while everybody else buys; 10,000 buyers on 10,000 connections at once are
 * all answered and the stock is sold exactly. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "sale.h"

#define TOKEN "limits-admin-token"

static harness_system sys;
static char resp[1 << 16];

static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=limits",
                      "SECKILL_RATE_LIMIT_PER_S=1", "SECKILL_RATE_LIMIT_BURST=3", NULL};
HARNESS_SYSTEM_SUITE(limits, harness_system_start, sys, env, "limits", .timeout = 180);

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

/* A purchase that may be refused for the rate: a token all the same when it
 * was not (limit_reached: the buyer has their unit; in_progress: the order
 * is still being created). Returns its Retry-After when it was (at least 1),
 * else 0. */
static int press(int64_t item, int64_t user)
{
    int status = buy(item, user);
    if (status == 429 && strstr(resp, "\"rate_limited\"")) {
        const char *h = strstr(resp, "Retry-After: ");
        int seconds = 0;
        cr_assert(h && sscanf(h, "Retry-After: %d\r\n", &seconds) == 1, "%s", resp);
        /* At 1 a second the next token is at most a second away. */
        cr_assert(seconds >= 1 && seconds <= 2, "Retry-After: %d", seconds);
        return seconds;
    }
    cr_assert((status == 409 && strstr(resp, "\"limit_reached\"")) ||
                  (status == 429 && strstr(resp, "\"in_progress\"")),
              "%d %s", status, resp);
    return 0;
}

/* 1 purchase a second after a burst of 3. What it promises, whatever the
 * machine's speed: a flood gets through at most one request a second after
 * the burst, the rest answered 429 with a Retry-After of at least a second,
 * after which the buyer is let in again; another buyer is not slowed down. */
Test(limits, a_flooding_buyer_gets_429_with_retry_after_while_others_buy)
{
    enum { BURST = 3, FLOOD = 10 };
    int64_t item = sale_create_item(sys.port, TOKEN, "limited", 100);
    int64_t began = clock_mono_ms();
    cr_assert_eq(buy(item, 5), 202, "%s", resp);
    for (int i = 1; i < BURST; i++)
        cr_assert_eq(press(item, 5), 0, "press %d of the burst was refused for the rate", i);
    int limited = 0, retry_after = 0;
    for (int i = 0; i < FLOOD; i++) {
        retry_after = press(item, 5);
        limited += retry_after > 0;
    }
    int64_t through_at_most = 1 + (clock_mono_ms() - began) / 1000;
    cr_expect_geq(limited, FLOOD - through_at_most, "%d of %d presses were refused", limited,
                  FLOOD);
    /* The last refused press's Retry-After counts: no token was taken after it. */
    for (int i = 0; !retry_after; i++) {
        cr_assert_lt(i, FLOOD, "a flood of %d more presses was never refused", FLOOD);
        retry_after = press(item, 5);
    }
    cr_expect_eq(buy(item, 6), 202, "another buyer is not slowed down: %s", resp);
    harness_sleep_ms(retry_after * 1000);
    cr_expect_eq(press(item, 5), 0, "refused again after its Retry-After of %d s", retry_after);
    harness_system_stop(&sys);
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
    harness_system_stop(&sys);
}
