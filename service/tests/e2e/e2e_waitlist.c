/* e2e_waitlist.c: issue 28's waitlist on real servers, the workers separate
 * processes: a drawn item of 100 units whose 100 winners cancel or let their
 * orders expire while two workers run the draw chore, one of them killed -9
 * in the middle; then a restock. Exactly the next entrants in ticket order
 * get those units, once each; the books balance (remaining + units held ==
 * stock + restocked) and no entrant holds more than the limit. A winner's
 * order cancelled before its grant gives nothing back and is never granted.
 *
 * The item is drawn directly in PostgreSQL (drawn.h): the winners' orders
 * are committed with their grants owed, as a draw that crashed before its
 * grants leaves them, and the workers' chore finishes them. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "drawn.h"
#include "harness.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-waitlist-token"
#define UNITS 100
#define ENTRANTS 300
#define LIMIT 2
#define RESTOCK 5 /* the body below says it too */

enum { SHOP, W1, W2, W3, NPROCS };
static pid_t procs[NPROCS];

static void kill_leftovers(void)
{
    for (int i = 0; i < NPROCS; i++)
        harness_kill_leftover(&procs[i]);
}

TestSuite(waitlist, .init = harness_reset_backends, .fini = kill_leftovers, .timeout = 120);

static PGconn *pg;
static int64_t item;

/* Polls until the entrants served from the waitlist are at least want. */
static void wait_served(int64_t want, int timeout_ms)
{
    int64_t have = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        have = drawn_sql_int(pg,
                             "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64
                             " AND outcome = 'won_from_waitlist'",
                             item);
        if (have >= want)
            return;
        harness_sleep_ms(50);
    }
    cr_assert_fail("%" PRId64 " entrants served from the waitlist, expected %" PRId64, have, want);
}

static void cancel(int port, int p)
{
    char path[96], resp[2048];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", drawn_order_id(item, p));
    int status = harness_http(port, "POST", path, TOKEN, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "cancel of winner %d: %d %s", p, status, resp);
}

/* A field of one of the item's hashes (keyfn's); -1 when absent. */
static long long hash_field(redisContext *c, int (*keyfn)(char *, size_t, int64_t), int64_t f)
{
    return drawn_hash_field(c, keyfn, item, f, -1);
}

/* The highest units any buyer holds in Redis's count. */
static long long most_held(redisContext *c)
{
    char key[KEYS_MAX];
    keys_item_buyers(key, sizeof(key), item);
    redisReply *r = redisCommand(c, "HVALS %s", key);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    long long most = 0;
    for (size_t i = 0; i < r->elements; i++) {
        long long v = strtoll(r->element[i]->str, NULL, 10);
        most = v > most ? v : most;
    }
    freeReplyObject(r);
    return most;
}

/* The entrants after the winners up to position last served once each, in
 * ticket order, the rest still waiting; the books balance; nobody over the
 * limit. */
static void assert_books(redisContext *c, int last, int64_t restocked)
{
    cr_assert_eq(drawn_sql_int(pg,
                               "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64
                               " AND outcome = 'won_from_waitlist'"
                               " AND position BETWEEN %d AND %d",
                               item, UNITS + 1, last),
                 last - UNITS, "the next entrants in ticket order");
    cr_assert_eq(drawn_sql_int(pg,
                               "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64
                               " AND outcome = 'waitlisted' AND position > %d",
                               item, last),
                 ENTRANTS - last, "the rest still wait");
    cr_assert_eq(
        drawn_sql_int(pg,
                      "SELECT count(*) FROM draw_entries e JOIN orders o ON o.id = e.order_id"
                      " AND o.user_id = e.user_id AND o.draw_position = e.position"
                      " WHERE e.item_id = %" PRId64 " AND e.outcome = 'won_from_waitlist'"
                      " AND o.granted_at IS NOT NULL",
                      item),
        last - UNITS, "each with its order, granted");
    cr_assert_eq(drawn_sql_int(pg, "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item),
                 last, "one order per winner and per served entrant, none twice");
    int64_t held =
        drawn_sql_int(pg,
                      "SELECT coalesce(sum(quantity), 0) FROM orders WHERE item_id = %" PRId64
                      " AND status IN ('persisted', 'paid')",
                      item);
    long long remaining = harness_item_field(c, item, "stock");
    cr_assert_eq(remaining + held, UNITS + restocked,
                 "remaining %lld + held %" PRId64 " != stock %d + restocked %" PRId64, remaining,
                 held, UNITS, restocked);
    cr_assert_eq(remaining, 0, "every unit that came back went to the waitlist");
    cr_assert_eq(
        drawn_sql_int(pg,
                      "SELECT coalesce(max(h), 0) FROM (SELECT sum(quantity) AS h FROM orders"
                      " WHERE item_id = %" PRId64 " AND status IN ('persisted', 'paid')"
                      " GROUP BY user_id) x",
                      item),
        1);
    cr_assert_leq(most_held(c), LIMIT);
}

Test(waitlist, returned_units_go_to_the_next_entrants_once_with_a_worker_killed_and_a_restock)
{
    char *shop_env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, NULL};
    int port;
    procs[SHOP] = harness_start_server(&port, shop_env, "e2e-waitlist-server.log");
    pg = harness_pg();
    redisContext *c = harness_redis();
    item = sale_create_item_with(port, TOKEN, "waitlist", UNITS,
                                 "\"per_buyer_limit\":%d,\"payment_timeout_s\":600", LIMIT);
    cr_assert_eq(drawn_item_make(pg, item, ENTRANTS, NULL, UNITS), UNITS);

    /* Winner 1 cancels before any grant: its unit never left. */
    cancel(port, 1);
    cr_assert_eq(harness_item_field(c, item, "stock"), UNITS, "nothing came back");
    cr_assert_eq(hash_field(c, keys_item_granted, drawn_order_id(item, 1)), 0);

    char *w1_env[] = {"SECKILL_WORKER_ID=e2e-waitlist-1", "SECKILL_WORKER_EXPIRY_MS=300", NULL};
    char *w2_env[] = {"SECKILL_WORKER_ID=e2e-waitlist-2", "SECKILL_WORKER_EXPIRY_MS=300", NULL};
    char *w3_env[] = {"SECKILL_WORKER_ID=e2e-waitlist-3", "SECKILL_WORKER_EXPIRY_MS=300", NULL};
    procs[W1] = harness_start_worker(w1_env, "e2e-waitlist-worker-1.log");
    procs[W2] = harness_start_worker(w2_env, "e2e-waitlist-worker-2.log");
    /* The grants owed, then winner 1's unit to position 101. */
    wait_served(1, 10000);
    cr_assert_eq(hash_field(c, keys_item_granted, drawn_order_id(item, 1)), 0,
                 "the order cancelled before its grant is never granted");
    cr_assert_eq(hash_field(c, keys_item_buyers, DRAWN_USER + 1), -1, "its buyer holds nothing");

    /* Half the winners cancel; the other half let their orders expire, a
     * worker killed -9 while the expiry and the waitlist are at work. */
    for (int p = 2; p <= UNITS / 2; p++)
        cancel(port, p);
    wait_served(UNITS / 2, 10000);
    PQclear(PQexec(pg, "UPDATE orders SET pay_by = now() WHERE draw_position BETWEEN 51 AND 100"));
    wait_served(UNITS / 2 + 5, 10000);
    harness_stop(procs[W1], SIGKILL);
    procs[W1] = 0;
    procs[W3] = harness_start_worker(w3_env, "e2e-waitlist-worker-3.log");
    wait_served(UNITS, 15000);
    harness_sleep_ms(1200); /* further passes, should one serve anything twice */
    cr_assert_eq(drawn_sql_int(pg,
                               "SELECT count(*) FROM orders WHERE item_id = %" PRId64
                               " AND draw_position <= %d AND status IN ('cancelled', 'expired')"
                               " AND returned_at IS NOT NULL",
                               item, UNITS),
                 UNITS, "every winner's order ended and its return settled");
    assert_books(c, 2 * UNITS, 0);
    cr_assert_eq(hash_field(c, keys_item_granted, drawn_order_id(item, 1)), 0);

    /* A restock of the drawn item serves the waitlist too. */
    char path[96], resp[4096];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    cr_assert_eq(harness_http(port, "POST", path, TOKEN, "{\"add\":5}", resp, sizeof(resp)), 200,
                 "%s", resp);
    wait_served(UNITS + RESTOCK, 10000);
    harness_sleep_ms(1200);
    assert_books(c, 2 * UNITS + RESTOCK, RESTOCK);

    redisFree(c);
    PQfinish(pg);
    harness_stop_clean(&procs[W2], "worker 2");
    harness_stop_clean(&procs[W3], "worker 3");
    harness_stop_clean(&procs[SHOP], "server");
}
