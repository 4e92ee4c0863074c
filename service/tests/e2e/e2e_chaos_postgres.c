/* e2e_chaos_postgres.c: PostgreSQL crashes (immediate stop) in the middle of a
 * sale and stays down for a while. The sale goes on into Redis up to
 * max_pending_orders, then buyers get 503 queue_full; once PostgreSQL is back
 * the worker drains everything, and the books are audited: the set of order
 * ids answered 202 is the set in PostgreSQL, no item over its stock, no buyer
 * twice, and seckill-admin reconcile balances. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "blast.h"
#include "harness.h"
#include "sale.h"
#include "keys.h"

#define TOKEN "chaos-admin-token"
#define BOUND 300
/* The outage, scaled to the worker's periods rather than to the clock: with
 * a sweep (and heartbeat) every 500 ms, the heartbeat's TTL is 1.5 s, so 4 s
 * down outlasts it more than twice and holds eight sweeps, as 30 s would with
 * the default period of 5 s, and the retries reach their 500 ms ceiling. */
#define SWEEP_MS "500"
#define DOWN_MS 4000

static int port;
static pid_t server_pid, worker_pid;
static char resp[1 << 16];

static void start_system(void)
{
    harness_reset_backends();
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN,        "SECKILL_WORKER_ID=chaos-pg",
                   "SECKILL_MAX_PENDING_ORDERS=300",    "SECKILL_WORKER_RETRY_MAX_MS=500",
                   "SECKILL_WORKER_SWEEP_MS=" SWEEP_MS, NULL};
    server_pid = harness_start_server(&port, env, "chaos-pg-server.log");
    worker_pid = harness_start_worker(env, "chaos-pg-worker.log");
}

/* A test that failed while PostgreSQL was down must not leave it down for
 * the tests that follow. */
static void restore(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
    PGconn *pg = PQconnectdb(getenv("SECKILL_PG_CONNINFO"));
    int down = PQstatus(pg) != CONNECTION_OK;
    PQfinish(pg);
    if (down)
        harness_pg_restart();
}

TestSuite(chaos_postgres, .init = start_system, .fini = restore, .timeout = 180);

/* buyers new buyers, numbered on from the last run's. */
static void run_buyers(sale *s, size_t buyers)
{
    s->spec.requests = buyers;
    cr_assert_eq(sale_run(s), 0, "%s", s->result.errstr);
    s->first_user += buyers;
}

Test(chaos_postgres, postgres_down_mid_sale_fills_the_queue_to_its_bound_then_drains_every_order)
{
    enum { STOCK = 2000 };
    sale s;
    sale_init(&s, port, sale_create_item(port, TOKEN, "chaos-pg", STOCK), 0, 32, 1, STOCK);
    s.spec.timeout_ms = 30000;

    /* The sale is under way and keeping up. */
    run_buyers(&s, 200);
    cr_assert_eq(s.naccepted, 200);
    sale_wait_drained(10000);

    harness_pg_crash();
    int64_t up_at = clock_mono_ms() + DOWN_MS;

    /* Redis goes on selling while the orders pile up, up to the bound. */
    run_buyers(&s, 1000);
    cr_log_info("PostgreSQL down: accepted %zu, queue_full %zu, other %zu", s.naccepted - 200,
                s.queue_full, s.other);
    cr_assert_eq(s.naccepted, 200 + BOUND, "accepted up to the bound, not beyond");
    cr_assert_eq(s.queue_full, 1000 - BOUND);
    cr_assert_eq(s.other, 0);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), s.item);
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "HGET %s stock", state);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_eq(atoll(r->str), STOCK - 200 - BOUND, "a refused buyer took no unit");
    freeReplyObject(r);
    cr_assert_eq(harness_redis_sum(c, "HLEN", keys_pending), BOUND);
    redisFree(c);

    int64_t now = clock_mono_ms();
    if (now < up_at)
        harness_sleep_ms((int)(up_at - now));
    harness_pg_restart();
    sale_wait_drained(20000);

    /* Room again: the sale goes on (fewer buyers than the bound, so that
     * none of them depends on how fast the worker keeps up). */
    size_t more = BOUND - 50;
    run_buyers(&s, more);
    cr_assert_eq(s.naccepted, 200 + BOUND + more,
                 "the sale did not go on after the drain: %zu accepted, %zu queue_full, %zu other",
                 s.naccepted, s.queue_full, s.other);
    sale_wait_drained(20000);

    /* The audit. */
    cr_assert_leq(s.naccepted, STOCK, "%zu accepted for %d units", s.naccepted, STOCK);
    PGconn *pg = harness_pg();
    sale_assert_exactly_persisted(&s, pg);
    PQfinish(pg);
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "the books do not balance:\n%s", resp);
    sale_free(&s);
    harness_stop_clean(&server_pid, "server");
    harness_stop_clean(&worker_pid, "worker");
}
