/* integration_waitlist.c: the units that come back to a drawn item go to its
 * waitlist, each once (issue 28), against the run's Redis and PostgreSQL: a
 * draw order returned before its grant gives nothing back and is never
 * granted afterwards; the worker's draw chore (waitlist.h) finishes the
 * grants owed before it counts the free units, serves the waitlist by the
 * draw's rule, and a crash between its commit and its grant is finished by
 * the next visit without a unit served twice. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "draw_grant.h"
#include "drawn.h"
#include "harness.h"
#include "keys.h"
#include "order_life.h"
#include "order_return.h"
#include "redis_nodes.h"
#include "waitlist.h"

#define ITEM 7
#define ROUND 3
#define LIMIT 3
#define TIMEOUT_S 600

static drawn_env env;

static void setup(void)
{
    drawn_env_open(&env);
}

static void teardown(void)
{
    drawn_env_close(&env);
}

TestSuite(waitlist, .init = setup, .fini = teardown, .timeout = 60);

/* The item with `units` units in Redis and PostgreSQL, drawn over n
 * entrants of quantities q (NULL: 1 each); returns the winners. */
static int drawn(long long units, int n, const int *q)
{
    drawn_sql(env.pg,
              "INSERT INTO items (id, name, initial_stock, round, per_buyer_limit,"
              " payment_timeout_s) VALUES (%d, 'drawn', %lld, %d, %d, %d)",
              ITEM, units, ROUND, LIMIT, TIMEOUT_S);
    harness_item_round(env.redis, &env.sc, ITEM, units, ROUND, 0, 0, LIMIT);
    return drawn_item_make(env.pg, ITEM, n, q, units);
}

static long long stock(void)
{
    return harness_item_field(env.redis, ITEM, "stock");
}

/* A field of one of the item's hashes (keyfn's), 0 when absent. */
static long long hash_field(int (*keyfn)(char *, size_t, int64_t), int64_t field)
{
    return drawn_hash_field(env.redis, keyfn, ITEM, field, 0);
}

/* The ref of winner p's order, as a cancellation reads it (orders.c): from
 * its row, the draw position with it. */
static order_ref ref_of(int p)
{
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "SELECT " ORDER_ROW_COLUMNS
             ", coalesce(draw_position, 0) FROM orders WHERE id = %" PRId64,
             drawn_order_id(ITEM, p));
    PGresult *res = PQexec(env.pg, sql);
    cr_assert(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1, "%s", sql);
    order_record r;
    cr_assert_eq(order_row_read(res, 0, &r, NULL, "test"), 0);
    order_ref o = order_ref_of(&r.o, strtoll(PQgetvalue(res, 0, ORDER_ROW_NCOLUMNS), NULL, 10));
    PQclear(res);
    cr_assert_eq(o.id, drawn_order_id(ITEM, p));
    cr_assert_eq(o.item_id, ITEM);
    cr_assert_eq(o.draw_position, p, "the ref carries the draw position");
    return o;
}

/* Cancels winner p's order in PostgreSQL and gives its units back, as a
 * cancellation does; asserts Redis confirmed it. */
static void cancel(int p)
{
    drawn_sql(env.pg,
              "UPDATE orders SET status = 'cancelled', ended_at = now() WHERE id = %" PRId64,
              drawn_order_id(ITEM, p));
    order_ref o = ref_of(p);
    unsigned char done = 0;
    cr_assert_eq(order_return_units(env.nodes, env.pg, &env.sc, &o, 1, &done, "test"), 0);
    cr_assert_eq(done, 1, "the return is confirmed");
}

/* One pass of the draw chore; its result. */
static waitlist_result chore(void)
{
    static waitlist wl;
    static int ready;
    if (!ready)
        waitlist_init(&wl);
    ready = 1;
    waitlist_result res;
    cr_assert_eq(waitlist_run(&wl, env.nodes, env.pg, &env.sc, &res), 0, "the chore's pass");
    return res;
}

Test(waitlist, a_draw_order_returned_before_its_grant_gives_nothing_and_is_never_granted)
{
    cr_assert_eq(drawn(3, 5, NULL), 3);
    cancel(1);
    cr_assert_eq(stock(), 3, "its unit never left: nothing came back");
    cr_assert_eq(hash_field(keys_item_granted, drawn_order_id(ITEM, 1)), 0);
    cr_assert_eq(drawn_sql_int(env.pg,
                               "SELECT count(*) FROM orders WHERE id = %" PRId64
                               " AND returned_at IS NOT NULL",
                               drawn_order_id(ITEM, 1)),
                 1, "the return is noted: nothing is owed");
    order_ref o[3] = {ref_of(1), ref_of(2), ref_of(3)};
    unsigned char done[3];
    cr_assert_eq(draw_grant_units(env.nodes, env.pg, &env.sc, o, 3, done, "test"), 0);
    cr_assert_eq(stock(), 1, "the two others' grants took their units, the returned one none");
    cr_assert_eq(hash_field(keys_item_buyers, DRAWN_USER + 1), 0, "the returned one holds none");
    cr_assert_eq(hash_field(keys_item_buyers, DRAWN_USER + 2), 1);
    cancel(1); /* a retried return */
    cr_assert_eq(stock(), 1, "and gives nothing when retried");
    cr_assert_eq(harness_item_field(env.redis, ITEM, "returned"), 0);
}

Test(waitlist, a_granted_draw_order_gives_its_units_back_once)
{
    int q[] = {2, 1};
    cr_assert_eq(drawn(3, 2, q), 2);
    order_ref o[2] = {ref_of(1), ref_of(2)};
    unsigned char done[2];
    cr_assert_eq(draw_grant_units(env.nodes, env.pg, &env.sc, o, 2, done, "test"), 0);
    cr_assert_eq(stock(), 0);
    cancel(1);
    cr_assert_eq(stock(), 2, "its two units are back");
    cr_assert_eq(hash_field(keys_item_buyers, DRAWN_USER + 1), 0);
    cancel(1);
    cr_assert_eq(stock(), 2, "once");
    cr_assert_eq(harness_item_field(env.redis, ITEM, "returned"), 2);
}

Test(waitlist, the_chore_grants_what_is_owed_then_serves_the_waitlist_by_the_draws_rule)
{
    /* Over 4 units: 1 (2) wins, 2 (1) wins, 3 (3) is skipped, 4 (1) wins;
     * 5.. are waitlisted. */
    int q[] = {2, 1, 3, 1, 2, 1, 1, 3};
    cr_assert_eq(drawn(4, 8, q), 3);
    cr_assert_str_eq(drawn_outcome(env.pg, ITEM, 3, NULL), "skipped");
    waitlist_result res = chore();
    cr_assert_eq(res.granted, 3, "the draw's grants owed, finished first");
    cr_assert_eq(res.served, 0, "no unit is free");
    cr_assert_eq(stock(), 0);
    cr_assert_eq(drawn_sql_int(env.pg, "SELECT count(*) FROM orders WHERE granted_at IS NULL"), 0);

    cancel(1); /* 2 units back: 3 (3) does not fit, 5 (2) does */
    res = chore();
    cr_assert_eq(res.served, 1);
    cr_assert_eq(res.units, 2);
    int64_t order5 = 0;
    cr_assert_str_eq(drawn_outcome(env.pg, ITEM, 5, &order5), "won_from_waitlist");
    cr_assert_str_eq(drawn_outcome(env.pg, ITEM, 3, NULL), "skipped", "still on the waitlist");
    cr_assert_str_eq(drawn_outcome(env.pg, ITEM, 6, NULL), "waitlisted");
    cr_assert_eq(drawn_sql_int(env.pg,
                               "SELECT count(*) FROM orders WHERE id = %" PRId64 " AND user_id = %d"
                               " AND quantity = 2 AND draw_position = 5 AND status = 'persisted'"
                               " AND granted_at IS NOT NULL AND pay_by > now() + interval '590 s'",
                               order5, DRAWN_USER + 5),
                 1, "its order: granted, a fresh payment window");
    cr_assert_eq(hash_field(keys_item_granted, order5), 2);
    cr_assert_eq(hash_field(keys_item_buyers, DRAWN_USER + 5), 2);
    cr_assert_eq(stock(), 0);
    cr_assert_eq(drawn_sql_int(env.pg,
                               "SELECT count(*) FROM order_events WHERE type = 'order.won'"
                               " AND order_id = %" PRId64,
                               order5),
                 1, "announced as won");

    /* Three units more (as a restock adds them): 3 (3) comes first. */
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), ITEM);
    freeReplyObject(redisCommand(env.redis, "HINCRBY %s stock 3", state));
    res = chore();
    cr_assert_eq(res.served, 1);
    cr_assert_str_eq(drawn_outcome(env.pg, ITEM, 3, NULL), "won_from_waitlist");
    res = chore();
    cr_assert_eq(res.served + res.granted, 0, "served once: a pass again does nothing");
    cr_assert_eq(stock(), 0);
    cr_assert_eq(drawn_sql_int(env.pg, "SELECT count(*) FROM orders WHERE item_id = %d", ITEM), 5);
    cr_assert_eq(drawn_sql_int(env.pg,
                               "SELECT count(*) FROM draw_entries WHERE item_id = %d"
                               " AND outcome = 'won_from_waitlist' AND order_id IS NOT NULL",
                               ITEM),
                 2);
}

Test(waitlist, a_crash_between_the_commit_and_the_grant_is_finished_by_the_next_visit)
{
    cr_assert_eq(drawn(2, 6, NULL), 2);
    chore();
    cancel(1);
    cancel(2);
    cr_assert_eq(chore().served, 2, "3 and 4 served");
    int64_t order3 = 0, order4 = 0;
    drawn_outcome(env.pg, ITEM, 3, &order3);
    drawn_outcome(env.pg, ITEM, 4, &order4);
    /* Undo 4's grant: the state a worker killed after its commit leaves
     * (the order committed, its units still in the stock). */
    char state[KEYS_MAX], granted[KEYS_MAX], buyers[KEYS_MAX];
    keys_item_state(state, sizeof(state), ITEM);
    keys_item_granted(granted, sizeof(granted), ITEM);
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    freeReplyObject(redisCommand(env.redis, "HDEL %s %lld", granted, (long long)order4));
    freeReplyObject(redisCommand(env.redis, "HINCRBY %s stock 1", state));
    freeReplyObject(redisCommand(env.redis, "HINCRBY %s %d -1", buyers, DRAWN_USER + 4));
    drawn_sql(env.pg, "UPDATE orders SET granted_at = NULL WHERE id IN (%" PRId64 ", %" PRId64 ")",
              order3, order4);
    cr_assert_eq(stock(), 1, "a unit looks free");

    waitlist_result res = chore();
    cr_assert_eq(res.granted, 2, "the next visit grants both first");
    cr_assert_eq(res.served, 0, "and finds no unit free: 5 is not served with 4's unit");
    cr_assert_eq(stock(), 0);
    cr_assert_str_eq(drawn_outcome(env.pg, ITEM, 5, NULL), "waitlisted");
    cr_assert_eq(hash_field(keys_item_buyers, DRAWN_USER + 4), 1);
    cr_assert_eq(drawn_sql_int(env.pg, "SELECT count(*) FROM orders WHERE granted_at IS NULL"), 0);
}

Test(waitlist, a_waitlist_of_another_round_or_an_archived_item_is_not_served)
{
    cr_assert_eq(drawn(1, 3, NULL), 1);
    chore();
    cancel(1);
    drawn_sql(env.pg, "UPDATE items SET archived_at = now() WHERE id = %d", ITEM);
    cr_assert_eq(chore().served, 0);
    drawn_sql(env.pg, "UPDATE items SET archived_at = NULL, round = round + 1 WHERE id = %d", ITEM);
    cr_assert_eq(chore().served, 0, "the waitlist serves only its round");
    cr_assert_eq(stock(), 1, "the unit stays with the item");
}
