/* e2e_rebuild.c: seckill-admin reconcile --rebuild on the largest item a
 * shop keeps: half a million buyers rebuilt in pieces under a client
 * timeout of 200 ms, a rebuild that a crash cut between pieces run again,
 * and returns owed by another Redis counted as owed, not as drift. The
 * items are made in PostgreSQL directly (one INSERT ... SELECT
 * generate_series), as a Redis that lost everything finds them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "keys.h"

static char out[1 << 16];

static void reset(void)
{
    harness_reset_backends();
}

TestSuite(rebuild, .init = reset, .timeout = 240);

/* Runs sql (no rows wanted); aborts the test on error. */
static void pg_run(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    ExecStatusType st = PQresultStatus(res);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQresultErrorMessage(res));
    PQclear(res);
}

/* An item of `stock` units with `buyers` orders of one unit each (buyers
 * 1..buyers, order ids from item * 10^7 + 1, first_unit 1), persisted, of
 * its round. Returns its id. */
static int64_t item_with_orders(PGconn *pg, int64_t stock, int64_t buyers)
{
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "INSERT INTO items (name, initial_stock, per_buyer_limit) "
             "VALUES ('rebuilt', %" PRId64 ", 1) RETURNING id",
             stock);
    int64_t item = harness_pg_int(pg, sql);
    snprintf(sql, sizeof(sql),
             "INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, first_unit) "
             "SELECT i.id * 10000000 + g, i.id, g, i.round, now(), 1, 1 FROM items i, "
             "generate_series(1, %" PRId64 ") g WHERE i.id = %" PRId64,
             buyers, item);
    pg_run(pg, sql);
    return item;
}

/* Marks orders from..to (by buyer) ended as `status`, their returns noted
 * made (noted) or still owed. */
static void end_orders(PGconn *pg, int64_t item, int64_t from, int64_t to, const char *status,
                       int noted)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "UPDATE orders SET status = '%s', ended_at = now(), returned_at = %s "
             "WHERE item_id = %" PRId64 " AND user_id BETWEEN %" PRId64 " AND %" PRId64,
             status, noted ? "now()" : "NULL", item, from, to);
    pg_run(pg, sql);
}

/* Runs seckill-admin reconcile with args after it (NULL-terminated, at
 * most 8) and the timeout the tests give Redis. Returns its exit code. */
static int admin(const char *a1, const char *a2)
{
    char *args[] = {"reconcile", "--redis-timeout-ms=200", (char *)a1, (char *)a2, NULL};
    return harness_admin(args, out, sizeof(out));
}

static long long hlen(redisContext *c, const char *(*name)(int64_t), int64_t item)
{
    return harness_redis_int(c, "HLEN", name(item));
}

static const char *buyers_key(int64_t item)
{
    static char k[KEYS_MAX];
    keys_item_buyers(k, sizeof(k), item);
    return k;
}

static const char *returned_key(int64_t item)
{
    static char k[KEYS_MAX];
    keys_item_returned(k, sizeof(k), item);
    return k;
}

static const char *given_back_key(int64_t item)
{
    static char k[KEYS_MAX];
    keys_item_given_back(k, sizeof(k), item);
    return k;
}

/* The item's keys as a rebuild leaves them, to compare two rebuilds: the
 * state's fields, the sizes of its hashes and a few buyers. */
static void snapshot(redisContext *c, int64_t item, char *buf, size_t cap)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisReply *r = redisCommand(c,
                                 "HMGET %s stock initial round restocks restocked returns "
                                 "returned starts ends limit segments",
                                 state);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "HMGET %s", state);
    size_t len = 0;
    for (size_t i = 0; i < r->elements; i++)
        len +=
            (size_t)snprintf(buf + len, cap - len, "%s ",
                             r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "-");
    freeReplyObject(r);
    r = redisCommand(c, "HMGET %s 1 4096 4097 250000 500000 500001", buyers_key(item));
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++)
        len +=
            (size_t)snprintf(buf + len, cap - len, "%s ",
                             r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "-");
    freeReplyObject(r);
    snprintf(buf + len, cap - len, "buyers %lld returned %lld given_back %lld",
             hlen(c, buyers_key, item), hlen(c, returned_key, item), hlen(c, given_back_key, item));
}

Test(rebuild, an_item_of_500000_buyers_is_rebuilt_in_pieces_under_a_200_ms_timeout)
{
    enum { BUYERS = 500000, STOCK = 600000, EXPIRED = 1000 };
    PGconn *pg = harness_pg();
    int64_t item = item_with_orders(pg, STOCK, BUYERS);
    /* Some of them expired, their units back on sale in a Redis since lost. */
    end_orders(pg, item, BUYERS - EXPIRED + 1, BUYERS, "expired", 1);

    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    cr_assert(strstr(out, "missing in redis"), "a Redis that lost the item: %s", out);
    char progress[64];
    snprintf(progress, sizeof(progress), "item %" PRId64 ": %d/%d buyers", item, BUYERS, BUYERS);
    cr_expect(strstr(out, progress), "no progress said (%s):\n%s", progress, out);
    cr_assert(strstr(out, "rebuilt 1 item(s)"), "%s", out);

    cr_assert_eq(admin(NULL, NULL), 0, "the rebuild left drift:\n%s", out);
    redisContext *c = harness_redis();
    cr_expect_eq(harness_item_field(c, item, "stock"), STOCK - (BUYERS - EXPIRED));
    cr_expect_eq(harness_item_field(c, item, "returned"), EXPIRED);
    cr_expect_eq(hlen(c, buyers_key, item), BUYERS, "every buyer counted, held or not");
    cr_expect_eq(hlen(c, returned_key, item), EXPIRED, "every return marked");
    cr_expect_eq(hlen(c, given_back_key, item), EXPIRED);
    static char first[4096], again[4096];
    snapshot(c, item, first, sizeof(first));

    /* A crash between pieces: the item held off sale, staging keys half
     * written with figures no order supports. Run again, the rebuild starts
     * the item afresh and leaves exactly what the first one did. */
    char state[KEYS_MAX], staged[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    keys_staged(staged, sizeof(staged), buyers_key(item));
    freeReplyObject(redisCommand(c, "DEL %s", state));
    freeReplyObject(redisCommand(c, "HSET %s 999999999 7 1 5", staged));
    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    cr_assert(strstr(out, "missing in redis"), "a held item is missing: %s", out);
    snapshot(c, item, again, sizeof(again));
    cr_expect_str_eq(again, first, "a rebuild run again differs");
    cr_expect_eq(harness_redis_int(c, "EXISTS", staged), 0, "a staging key stayed");

    /* And safe to run twice over a sound item: nothing to do, nothing
     * changed. */
    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    snapshot(c, item, again, sizeof(again));
    cr_expect_str_eq(again, first);
    redisFree(c);
    PQfinish(pg);
}

Test(rebuild, returns_made_to_another_redis_are_owed_not_drift)
{
    PGconn *pg = harness_pg();
    int64_t item = item_with_orders(pg, 20, 10);
    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    redisContext *c = harness_redis();
    cr_assert_eq(harness_item_field(c, item, "stock"), 10);

    /* Expired with their returns still owed by PostgreSQL: the worker's
     * sweep finishes those, so the books balance meanwhile. */
    end_orders(pg, item, 1, 2, "expired", 0);
    cr_assert_eq(admin("--json", NULL), 0, "owed returns the sweep makes are no drift:\n%s", out);
    cr_expect(strstr(out, "\"owed\": 2"), "%s", out);
    cr_expect(strstr(out, "\"held\": 8"),
              "the persisted orders' units, as the item view counts: %s", out);
    cr_expect(strstr(out, "\"drift\": 0"), "%s", out);

    /* Expired and returned to another Redis (a run on a Redis Cluster):
     * PostgreSQL notes them made, this Redis never had them back. Owed, not
     * units sold without an order, and only a rebuild gives them back. */
    end_orders(pg, item, 3, 5, "cancelled", 1);
    cr_assert_eq(admin(NULL, NULL), 1, "%s", out);
    cr_expect_null(strstr(out, "units sold without an order"), "%s", out);
    cr_expect(strstr(out, "returns owed by another redis"), "%s", out);
    cr_expect(strstr(out, "0 item(s) drifting, 1 owed returns"), "%s", out);
    cr_assert_eq(admin("--json", NULL), 1, "%s", out);
    cr_expect(strstr(out, "\"owed\": 5"), "%s", out);
    cr_expect(strstr(out, "\"drift\": 0"), "%s", out);

    /* --hold leaves such an item on sale: it can sell no unit twice. */
    cr_assert_eq(admin("--hold", NULL), 1, "%s", out);
    cr_expect(strstr(out, "held 0 item(s)"), "%s", out);
    cr_expect_eq(harness_item_field(c, item, "stock"), 10);

    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    cr_expect_eq(harness_item_field(c, item, "stock"), 15, "the five units are back on sale");
    cr_assert_eq(admin("--json", NULL), 0, "%s", out);
    cr_expect(strstr(out, "\"owed\": 0"), "%s", out);
    redisFree(c);
    PQfinish(pg);
}

Test(rebuild, hold_takes_a_drifting_item_off_sale_until_the_rebuild)
{
    PGconn *pg = harness_pg();
    int64_t sound = item_with_orders(pg, 20, 3);
    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    int64_t lost = item_with_orders(pg, 20, 4);
    redisContext *c = harness_redis();
    /* What a Redis restarted from an old snapshot holds for it: the stock
     * of before the sale. It would sell four units twice. */
    char state[KEYS_MAX], sql[96];
    keys_item_state(state, sizeof(state), lost);
    snprintf(sql, sizeof(sql), "SELECT round FROM items WHERE id = %" PRId64, lost);
    freeReplyObject(redisCommand(c, "HSET %s stock 20 initial 20 round %lld returned 0", state,
                                 (long long)harness_pg_int(pg, sql)));
    cr_assert_eq(admin(NULL, NULL), 1, "%s", out);
    cr_assert_eq(admin("--hold", NULL), 1, "%s", out);
    cr_expect(strstr(out, "held 1 item(s) off sale"), "%s", out);
    cr_expect_eq(harness_redis_int(c, "EXISTS", state), 0, "the stale stock is gone");
    cr_expect_eq(harness_item_field(c, sound, "stock"), 17, "the sound item stays on sale");
    cr_assert_eq(admin("--rebuild", NULL), 0, "%s", out);
    cr_expect_eq(harness_item_field(c, lost, "stock"), 16);
    cr_assert_eq(admin(NULL, NULL), 0, "%s", out);
    redisFree(c);
    PQfinish(pg);
}
