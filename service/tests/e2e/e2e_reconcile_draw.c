/* e2e_reconcile_draw.c: seckill-admin reconcile and --rebuild on a drawn item
 * (issue 28). A draw order holds Redis units only once granted: a grant
 * still owed is reported apart, not as drift, and a winner's order cancelled
 * before its grant is owed nothing back. A rebuild after Redis lost
 * everything keeps the item a draw item (a purchase still 409 draw_item),
 * writes the granted marks back from PostgreSQL (an owed grant then takes
 * nothing again), the books balance, and a granted order returned later
 * gives its units back once. A new round clears the granted marks.
 *
 * The item is drawn directly in PostgreSQL (drawn.h); no worker runs: the
 * test finishes the grants itself (draw_grant_owed, the draw chore's step). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "draw_grant.h"
#include "drawn.h"
#include "harness.h"
#include "keys.h"
#include "sale.h"

#define TOKEN "e2e-reconcile-draw-token"
#define UNITS 4
#define ENTRANTS 6

static pid_t shop;

static void kill_leftovers(void)
{
    harness_kill_leftover(&shop);
}

TestSuite(reconcile_draw, .init = harness_reset_backends, .fini = kill_leftovers, .timeout = 60);

static char out[1 << 16];
static int port;
static int64_t item;

/* seckill-admin reconcile with a1 (may be NULL); its exit code. */
static int admin(const char *a1)
{
    char *args[] = {"reconcile", "--redis-timeout-ms=2000", (char *)a1, NULL};
    return harness_admin(args, out, sizeof(out));
}

static void cancel(int p)
{
    char path[96], resp[2048];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", drawn_order_id(item, p));
    int status = harness_http(port, "POST", path, TOKEN, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "cancel of winner %d: %d %s", p, status, resp);
}

static long long granted(redisContext *c, int p)
{
    return drawn_hash_field(c, keys_item_granted, item, drawn_order_id(item, p), -1);
}

/* remaining + units held == stock + restocked (none here): the stock less
 * what the persisted and paid orders hold is what Redis has left. */
static void assert_books(redisContext *c, PGconn *pg)
{
    int64_t left = drawn_sql_int(pg,
                                 "SELECT %d - coalesce(sum(quantity) FILTER (WHERE status IN "
                                 "('persisted', 'paid')), 0) FROM orders WHERE item_id = %" PRId64,
                                 UNITS, item);
    cr_assert_eq(harness_item_field(c, item, "stock"), left, "the books balance");
}

/* A draw item's new round: its stock and a new entries window. */
#define NEW_ROUND                                                                                  \
    "{\"stock\":3,\"admission\":\"draw\",\"entries_open_at\":\"2099-01-01T00:00:00Z\","            \
    "\"entries_close_at\":\"2099-01-02T00:00:00Z\"}"

Test(reconcile_draw, grants_owed_are_not_drift_and_a_rebuild_keeps_the_draw_and_its_grants)
{
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, NULL};
    shop = harness_start_server(&port, env, "e2e-reconcile-draw-server.log");
    PGconn *pg = harness_pg();
    scripts sc;
    redisContext *c = harness_redis_with_scripts(&sc);
    config cfg;
    harness_config(&cfg);
    redis_nodes *nodes = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(nodes);
    item = sale_create_item_with(port, TOKEN, "reconciled draw", UNITS,
                                 "\"per_buyer_limit\":1,\"payment_timeout_s\":600");
    cr_assert_eq(drawn_item_make(pg, item, ENTRANTS, NULL, UNITS), UNITS);

    /* Winner 1 cancels before its grant (its unit never left); winners 2
     * and 3 are granted; winner 4's grant stays owed. */
    cancel(1);
    cr_assert_eq(granted(c, 1), 0);
    int64_t w4 = drawn_order_id(item, 4);
    drawn_sql(pg, "UPDATE orders SET granted_at = now() WHERE id = %" PRId64, w4);
    cr_assert_eq(draw_grant_owed(nodes, pg, &sc, item, "test"), 3, "winners 1 to 3");
    drawn_sql(pg, "UPDATE orders SET granted_at = NULL WHERE id = %" PRId64, w4);
    cr_assert_eq(harness_item_field(c, item, "stock"), UNITS - 2);
    cr_assert_eq(granted(c, 4), -1, "winner 4's grant is owed");

    cr_assert_eq(admin("--json"), 0, "an owed grant and a pre-grant cancel are no drift:\n%s", out);
    cr_expect(strstr(out, "\"drift\": 0"), "%s", out);
    cr_expect(strstr(out, "\"owed\": 0"), "winner 1 is owed nothing back: %s", out);
    cr_expect(strstr(out, "\"held\": 2"), "winners 2 and 3, granted: %s", out);
    cr_expect(strstr(out, "\"grants_owed\": 1"), "winner 4: %s", out);

    /* Redis loses everything; the rebuild sets it back from the books. */
    redisReply *r = redisCommand(c, "FLUSHALL");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(admin("--rebuild"), 0, "%s", out);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    r = redisCommand(c, "HGET %s admission", state);
    cr_assert(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "draw") == 0,
              "the rebuilt item is still a draw item");
    freeReplyObject(r);
    char path[96], resp[2048];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    cr_assert_eq(harness_http(port, "POST", path, NULL, "{\"user_id\":7}", resp, sizeof(resp)), 409,
                 "%s", resp);
    cr_assert(strstr(resp, "draw_item"), "%s", resp);
    cr_assert_eq(granted(c, 1), 0, "cancelled before its grant");
    for (int p = 2; p <= 4; p++)
        cr_assert_eq(granted(c, p), 1, "winner %d's grant, the owed one finished", p);
    cr_assert_eq(harness_item_field(c, item, "stock"), UNITS - 3);
    assert_books(c, pg);
    cr_assert_eq(admin("--json"), 0, "%s", out);
    cr_expect(strstr(out, "\"drift\": 0"), "%s", out);
    cr_expect(strstr(out, "\"grants_owed\": 0"), "%s", out);

    /* The owed grant finished by the chore's step takes nothing again. */
    cr_assert_eq(draw_grant_owed(nodes, pg, &sc, item, "test"), 1);
    cr_assert_eq(harness_item_field(c, item, "stock"), UNITS - 3);
    assert_books(c, pg);

    /* A granted order returned after the rebuild gives its unit back once. */
    cancel(2);
    cr_assert_eq(harness_item_field(c, item, "stock"), UNITS - 2);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", drawn_order_id(item, 2));
    harness_http(port, "POST", path, TOKEN, NULL, resp, sizeof(resp));
    cr_assert_eq(harness_item_field(c, item, "stock"), UNITS - 2, "once");
    assert_books(c, pg);
    cr_assert_eq(admin("--json"), 0, "%s", out);
    cr_expect(strstr(out, "\"drift\": 0"), "%s", out);
    cr_expect(strstr(out, "\"owed\": 0"), "%s", out);

    /* A new round (a draw's names its entries window) clears the granted hash; an order of the old
     * round, returned then, gives nothing (its round is over). */
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    cr_assert_eq(harness_http(port, "POST", path, TOKEN, NEW_ROUND, resp, sizeof(resp)), 200, "%s",
                 resp);
    char granted_key[KEYS_MAX];
    keys_item_granted(granted_key, sizeof(granted_key), item);
    cr_assert_eq(harness_redis_int(c, "EXISTS", granted_key), 0, "the old round's marks are gone");
    cancel(3);
    cr_assert_eq(harness_item_field(c, item, "stock"), 3, "an old round's order gives nothing");

    redis_nodes_free(nodes);
    config_free(&cfg);
    redisFree(c);
    PQfinish(pg);
    harness_stop_clean(&shop, "server");
}
