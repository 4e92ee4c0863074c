/* e2e_orders.c: orders that live, end to end on real servers: a sale whose
 * orders are a third paid, a third cancelled and a third left to expire,
 * then a second storm that sells exactly the units that came back; payment
 * and cancellation fired together at each order; a worker killed between
 * the expiry and the return; and buyers who prove who they are with tokens.
 * Every test audits the books in PostgreSQL and Redis:
 *   remaining + units(queued, persisted, paid) == initial_stock + restocked. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "buyer_token.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "order_return.h"
#include "redis_nodes.h"
#include "sale.h"

#define TOKEN "e2e-orders-admin-token"
#define SECRET "e2e-orders-buyer-token-secret-of-at-least-32-bytes"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-orders", NULL};
static char *token_env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-orders-t",
                            "SECKILL_BUYER_AUTH=token", "SECKILL_BUYER_TOKEN_SECRET=" SECRET, NULL};

HARNESS_SYSTEM_SUITE(orders, harness_system_start, sys, env, "e2e-orders", .timeout = 240);
HARNESS_SYSTEM_SUITE(buyer_tokens, harness_system_start, sys, token_env, "e2e-orders-tokens",
                     .timeout = 120);

/* One HTTP call; its body into resp (cap bytes). */
static int call(const char *method, const char *path, const char *auth, const char *body,
                char *resp, size_t cap)
{
    return harness_http(sys.port, method, path, auth, body, resp, cap);
}

/* Buys `quantity` units of item as user; the HTTP status, the body in resp. */
static int buy_units(int64_t item, int64_t user, int quantity, char *resp, size_t cap)
{
    char path[96], body[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\",\"quantity\":%d}", user, quantity);
    return call("POST", path, NULL, body, resp, cap);
}

static int64_t create_item(int64_t stock, int payment_timeout_s)
{
    return sale_create_item_with(sys.port, TOKEN, "orders", stock, "\"payment_timeout_s\":%d",
                                 payment_timeout_s);
}

/* The integer member `"name":N` of text; aborts when absent. */
static int64_t member(const char *text, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *at = strstr(text, key);
    cr_assert_not_null(at, "no %s in %s", name, text);
    return strtoll(at + strlen(key), NULL, 10);
}

/* The item's detail. */
typedef struct detail {
    int64_t remaining, queued, persisted, paid, cancelled, expired, returned, initial, restocked;
} detail;

static detail item_detail(int64_t item)
{
    char path[64], resp[4096];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(call("GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s", resp);
    return (detail){
        member(resp, "remaining"), member(resp, "queued"),        member(resp, "persisted"),
        member(resp, "paid"),      member(resp, "cancelled"),     member(resp, "expired"),
        member(resp, "returned"),  member(resp, "initial_stock"), member(resp, "restocked")};
}

/* The books at a quiet moment: nothing queued (the view derives queued from
 * the rest, so the identity alone could hide units never given back). */
static void assert_books(const detail *d)
{
    cr_assert_eq(d->queued, 0, "a quiet moment: nothing between Redis and PostgreSQL");
    cr_assert_eq(d->remaining + d->queued + d->persisted + d->paid, d->initial + d->restocked,
                 "remaining %" PRId64 " + queued %" PRId64 " + persisted %" PRId64
                 " + paid %" PRId64 " != initial %" PRId64 " + restocked %" PRId64,
                 d->remaining, d->queued, d->persisted, d->paid, d->initial, d->restocked);
    cr_assert_eq(d->cancelled + d->expired, d->returned, "every unit of a settled order came back");
}

/* Pays (admin) or cancels (as its buyer when user > 0, else admin) an
 * order; the answer's body into resp. Returns the HTTP status. */
static int settle(const char *what, int64_t order_id, int64_t user, char *resp, size_t cap)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/%s", order_id, what);
    snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\"}", user);
    return harness_http(sys.port, "POST", path, user > 0 ? NULL : TOKEN, user > 0 ? body : NULL,
                        resp, cap);
}

static int has(const char *text, const char *needle)
{
    return strstr(text, needle) != NULL;
}

/* The item's orders in PostgreSQL (id, buyer), oldest first; *n of them. */
static int64_t (*orders_of(PGconn *pg, int64_t item, size_t *n))[2]
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id FROM orders WHERE item_id = %" PRId64 " ORDER BY id", item);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    *n = (size_t)PQntuples(res);
    int64_t(*o)[2] = calloc(*n ? *n : 1, sizeof(*o));
    for (size_t i = 0; i < *n; i++) {
        o[i][0] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
        o[i][1] = strtoll(PQgetvalue(res, (int)i, 1), NULL, 10);
    }
    PQclear(res);
    return o;
}

static int64_t sql_int(PGconn *pg, const char *fmt, int64_t item)
{
    char sql[512];
    snprintf(sql, sizeof(sql), fmt, item);
    return harness_pg_int(pg, sql);
}

/* Polls until the item's orders in state `status` are `want`. */
static void wait_orders(PGconn *pg, int64_t item, const char *where, int64_t want, int timeout_ms)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE item_id = %" PRId64 " AND %s",
             item, where);
    int64_t have = -1;
    for (int waited = 0; waited < timeout_ms; waited += 100) {
        have = harness_pg_int(pg, sql);
        if (have == want)
            return;
        harness_sleep_ms(100);
    }
    cr_assert_fail("%s: %" PRId64 " orders, expected %" PRId64, where, have, want);
}

/* Sells item to `buyers` new buyers (users 1..buyers) over `connections`,
 * every one accepted, and waits until their orders are in PostgreSQL. */
static void sell_all(sale *s, int64_t item, size_t buyers, size_t connections)
{
    sale_init(s, sys.port, item, buyers, connections, 1, buyers);
    cr_assert_eq(sale_run(s), 0);
    cr_assert_eq(s->naccepted, buyers, "every buyer got a unit");
    sale_wait_drained(20000);
}

Test(orders, thirds_paid_cancelled_and_expired_then_a_second_storm_sells_what_came_back)
{
    /* A window far longer than the payments and cancellations below take,
     * even under the sanitizers on a loaded machine; the rest are then made
     * overdue by moving their deadline (a race against a short window made
     * this test fail in CI). */
    enum { STOCK = 1000, WINDOW_S = 120, CONNECTIONS = 100 };
    int64_t item = create_item(STOCK, WINDOW_S);
    sale first;
    sell_all(&first, item, STOCK, CONNECTIONS);
    PGconn *pg = harness_pg();
    size_t n;
    int64_t(*o)[2] = orders_of(pg, item, &n);
    cr_assert_eq(n, STOCK);

    char resp[4096];
    int64_t paid_id = 0, cancelled_id = 0, cancelled_user = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0) {
            cr_assert_eq(settle("pay", o[i][0], 0, resp, sizeof(resp)), 200, "%s", resp);
            cr_assert(has(resp, "\"status\":\"paid\""), "%s", resp);
            paid_id = o[i][0];
        } else if (i % 3 == 1) {
            cr_assert_eq(settle("cancel", o[i][0], o[i][1], resp, sizeof(resp)), 200, "%s", resp);
            cr_assert(has(resp, "\"status\":\"cancelled\"") && has(resp, "\"returned\":true"), "%s",
                      resp);
            cancelled_id = o[i][0];
            cancelled_user = o[i][1];
        }
    }
    /* Repeats answer the same and change nothing; the other action is refused. */
    cr_assert_eq(settle("pay", paid_id, 0, resp, sizeof(resp)), 200, "paying twice: %s", resp);
    cr_assert_eq(settle("cancel", cancelled_id, cancelled_user, resp, sizeof(resp)), 200,
                 "cancelling twice: %s", resp);
    cr_assert_eq(settle("cancel", paid_id, 0, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "\"error\":\"paid\""), "%s", resp);
    cr_assert_eq(settle("pay", cancelled_id, 0, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "\"error\":\"cancelled\""), "%s", resp);
    cr_assert_eq(settle("cancel", o[1][0], o[0][1], resp, sizeof(resp)), 404,
                 "another buyer's order is not revealed: %s", resp);

    /* The unpaid third's deadline passes (the clock moved on), and the
     * worker's expiry pass ends them within a period or two. */
    cr_assert_eq(sql_int(pg,
                         "WITH due AS (UPDATE orders SET pay_by = now() WHERE item_id = %" PRId64
                         " AND status = 'persisted' RETURNING 1) SELECT count(*) FROM due",
                         item),
                 STOCK / 3);
    wait_orders(pg, item, "status = 'expired' AND returned_at IS NOT NULL", STOCK / 3, 15000);
    cr_assert_eq(settle("pay", o[2][0], 0, resp, sizeof(resp)), 409, "paying too late: %s", resp);
    cr_assert(has(resp, "\"error\":\"expired\""), "%s", resp);
    detail d = item_detail(item);
    cr_assert_eq(d.paid, STOCK - 2 * (STOCK / 3));
    cr_assert_eq(d.cancelled, STOCK / 3);
    cr_assert_eq(d.expired, STOCK / 3);
    cr_assert_eq(d.returned, 2 * (STOCK / 3));
    cr_assert_eq(d.remaining, 2 * (STOCK / 3), "the cancelled and expired units are on sale again");
    cr_assert_eq(d.persisted + d.queued, 0);
    assert_books(&d);

    /* The second storm: the first storm's buyers again and as many new
     * ones. Those who paid are at their limit; the others compete for what
     * came back, and exactly that sells. */
    sale second;
    sale_init(&second, sys.port, item, 2 * STOCK, CONNECTIONS, 1, 2 * STOCK);
    cr_assert_eq(sale_run(&second), 0);
    cr_assert_eq((int64_t)second.naccepted, 2 * (STOCK / 3), "exactly the returned units sold");
    sale_wait_drained(20000);
    d = item_detail(item);
    cr_assert_eq(d.remaining, 0);
    assert_books(&d);
    cr_assert_eq(sql_int(pg,
                         "SELECT coalesce(sum(quantity), 0) FROM orders WHERE item_id = %" PRId64
                         " AND status IN ('persisted', 'paid')",
                         item),
                 STOCK, "the units held are the units that exist");
    cr_assert_eq(sql_int(pg,
                         "SELECT count(*) FROM (SELECT user_id FROM orders WHERE item_id = %" PRId64
                         " AND status IN ('persisted', 'paid') GROUP BY user_id"
                         " HAVING sum(quantity) > 1) over_limit",
                         item),
                 0, "no buyer holds more than the limit across both storms");
    free(o);
    PQfinish(pg);
    sale_free(&first);
    sale_free(&second);
    harness_system_stop(&sys);
}

Test(orders, a_cancel_before_the_worker_persists_answers_200_and_returns_the_units_once)
{
    enum { STOCK = 5 };
    int64_t item = create_item(STOCK, 120);
    /* The worker frozen: the order stays on the queue, accepted and not
     * yet in PostgreSQL, while its buyer cancels it. */
    harness_freeze(sys.worker);
    char resp[4096];
    cr_assert_eq(buy_units(item, 11, 1, resp, sizeof(resp)), 202, "%s", resp);
    int64_t order = sale_order_id(resp);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order);
    cr_assert_eq(call("GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"status\":\"queued\""), "still on the queue: %s", resp);

    cr_assert_eq(settle("cancel", order, 11, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"status\":\"cancelled\"") && has(resp, "\"returned\":true"), "%s", resp);
    cr_assert_eq(settle("cancel", order, 11, resp, sizeof(resp)), 200, "cancelling twice: %s",
                 resp);
    cr_assert_eq(item_detail(item).remaining, STOCK, "the unit is on sale again");

    /* The worker wakes and meets the order it was going to insert: the
     * row the server wrote stays, cancelled, and the unit came back once. */
    cr_assert_eq(kill(sys.worker, SIGCONT), 0);
    sale_wait_drained(20000);
    PGconn *pg = harness_pg();
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE id = %" PRId64
             " AND status = 'cancelled' AND returned_at IS NOT NULL",
             order);
    cr_assert_eq(harness_pg_int(pg, sql), 1);
    cr_assert_eq(sql_int(pg, "SELECT count(*) FROM orders WHERE item_id = %" PRId64, item), 1);
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, STOCK);
    cr_assert_eq(d.cancelled, 1);
    assert_books(&d);
    /* The buyer may buy again: the cancelled unit no longer counts. */
    cr_assert_eq(buy_units(item, 11, 1, resp, sizeof(resp)), 202, "%s", resp);
    PQfinish(pg);
    harness_system_stop(&sys);
}

Test(orders, rounds_count_per_item_and_a_cancel_after_a_reset_says_no_unit_came_back)
{
    int64_t item = create_item(3, 120);
    char resp[4096], path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(call("GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(member(resp, "round"), 1, "a new item starts at round 1: %s", resp);
    cr_assert_eq(buy_units(item, 21, 1, resp, sizeof(resp)), 202, "%s", resp);
    int64_t order = sale_order_id(resp);
    sale_wait_drained(20000);

    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    cr_assert_eq(call("POST", path, TOKEN, "{\"stock\":3}", resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(member(resp, "round"), 2, "its first reset starts round 2: %s", resp);

    /* The order of round 1 is cancelled in round 2: its unit went with its
     * round, and the answer says so. */
    cr_assert_eq(settle("cancel", order, 21, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"status\":\"cancelled\""), "%s", resp);
    cr_assert(has(resp, "\"returned\":false") && has(resp, "\"return\":\"round_over\""), "%s",
              resp);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order);
    cr_assert_eq(call("GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"returned\":false") && has(resp, "\"return\":\"round_over\""), "%s",
              resp);
    cr_assert_eq(item_detail(item).remaining, 3, "nothing was added to round 2");
    harness_system_stop(&sys);
}

/* Pay and cancel of one order, fired together. */
typedef struct race {
    pthread_barrier_t *go;
    const char *what;
    int64_t order_id, user;
    int status;
    char resp[1024];
} race;

/* The stock of a segment's keys in Redis. */
static int64_t segment_stock(int64_t key)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), key);
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "HGET %s stock", state);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no stock in %s", state);
    int64_t n = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    redisFree(c);
    return n;
}

Test(orders, a_segmented_item_sells_exactly_its_stock_to_each_buyer_once_and_takes_returns_back)
{
    /* 400 units over 4 segments of 100; 400 buyers, each twice at once:
     * homes are uneven (more than 100 buyers call some segment home), so
     * buyers are held at an empty home and served by another segment. */
    enum { STOCK = 400, SEGMENTS = 4, CONNECTIONS = 50 };
    int homes[SEGMENTS] = {0};
    for (int64_t user = 1; user <= STOCK; user++)
        homes[keys_segment_home(user, SEGMENTS)]++;
    int uneven = 0;
    for (int j = 0; j < SEGMENTS; j++)
        uneven |= homes[j] > STOCK / SEGMENTS;
    cr_assert(uneven, "the test needs a home with more buyers than units");

    char body[160], resp[4096];
    snprintf(body, sizeof(body),
             "{\"name\":\"segmented\",\"stock\":%d,\"segments\":%d,\"payment_timeout_s\":120}",
             STOCK, SEGMENTS);
    cr_assert_eq(call("POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201, "%s", resp);
    int64_t item = member(resp, "id");
    cr_assert_eq(member(resp, "segments"), SEGMENTS, "%s", resp);

    sale a, b;
    sale_init(&a, sys.port, item, STOCK, CONNECTIONS, 1, STOCK);
    sale_init(&b, sys.port, item, STOCK, CONNECTIONS, 1, STOCK);
    sale_start(&a);
    sale_start(&b);
    sale_join(&a);
    sale_join(&b);
    cr_assert_eq(a.unavailable + b.unavailable, 0, "no 503");
    /* Each buyer's second try is refused: limit_reached, or sold_out when
     * it comes after the last unit went (the item is then answered sold out
     * from memory, before the buyer is looked at). */
    cr_assert_eq(a.other + b.other + a.sold_out + b.sold_out, STOCK,
                 "each buyer's second try is refused: %zu + %zu other, %zu + %zu accepted, "
                 "%zu + %zu sold out",
                 a.other, b.other, a.naccepted, b.naccepted, a.sold_out, b.sold_out);
    cr_assert_eq(a.naccepted + b.naccepted, STOCK,
                 "stock == buyers: everyone is served, none twice (%zu + %zu accepted)",
                 a.naccepted, b.naccepted);
    sale_wait_drained(20000);

    /* Every one of the 400 buyers holds a unit: nobody was sent away for
     * good (sold out or otherwise) while a segment still had stock. */
    PGconn *pg = harness_pg();
    sale_assert_persisted(&a, pg);
    sale_assert_persisted(&b, pg);
    cr_assert_eq(
        sql_int(pg, "SELECT count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64, item),
        STOCK, "each buyer once, and every buyer served");
    int64_t moved = sql_int(pg,
                            "SELECT count(*) FROM orders WHERE item_id = %" PRId64
                            " AND segment_id IS DISTINCT FROM home_id",
                            item);
    cr_assert_gt(moved, 0, "some units came from a segment other than the buyer's home");
    for (int j = 0; j < SEGMENTS; j++)
        cr_assert_eq(segment_stock(keys_segment(item, j, SEGMENTS)), 0, "segment %d", j);
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, 0);
    assert_books(&d);

    /* A buyer served by another segment cancels: the unit goes back to
     * that segment, and the buyer may buy again. */
    int64_t order = 0, user = 0, from = 0;
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id, segment_id FROM orders WHERE item_id = %" PRId64
             " AND segment_id IS DISTINCT FROM home_id ORDER BY id LIMIT 1",
             item);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQntuples(res), 1);
    order = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    user = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    from = PQgetisnull(res, 0, 2) ? item : strtoll(PQgetvalue(res, 0, 2), NULL, 10);
    PQclear(res);
    cr_assert_eq(settle("cancel", order, user, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"returned\":true"), "%s", resp);
    cr_assert_eq(segment_stock(from), 1, "the unit is back where it came from");
    d = item_detail(item);
    cr_assert_eq(d.remaining, 1);
    assert_books(&d);
    cr_assert_eq(buy_units(item, user, 1, resp, sizeof(resp)), 202,
                 "the buyer who gave the unit back buys it again: %s", resp);
    cr_assert_eq(buy_units(item, STOCK + 1, 1, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "sold_out"), "%s", resp);
    sale_free(&a);
    sale_free(&b);
    PQfinish(pg);
}

static void *race_one(void *arg)
{
    race *r = arg;
    pthread_barrier_wait(r->go);
    r->status = settle(r->what, r->order_id, r->user, r->resp, sizeof(r->resp));
    return NULL;
}

Test(orders, pay_and_cancel_fired_together_exactly_one_wins_each_time)
{
    enum { ORDERS = 200 };
    int64_t item = create_item(ORDERS, 60);
    sale s;
    sell_all(&s, item, ORDERS, 50);
    PGconn *pg = harness_pg();
    size_t n;
    int64_t(*o)[2] = orders_of(pg, item, &n);
    int paid = 0, cancelled = 0;
    for (size_t i = 0; i < n; i++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        race pay = {&go, "pay", o[i][0], 0, 0, ""};
        race cancel = {&go, "cancel", o[i][0], o[i][1], 0, ""};
        pthread_t a, b;
        pthread_create(&a, NULL, race_one, &pay);
        pthread_create(&b, NULL, race_one, &cancel);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&go);
        cr_assert((pay.status == 200) != (cancel.status == 200),
                  "order %zu: pay %d %s, cancel %d %s", i, pay.status, pay.resp, cancel.status,
                  cancel.resp);
        if (pay.status == 200) {
            paid++;
            cr_assert(cancel.status == 409 && has(cancel.resp, "\"error\":\"paid\""), "%s",
                      cancel.resp);
        } else {
            cancelled++;
            cr_assert(pay.status == 409 && has(pay.resp, "\"error\":\"cancelled\""), "%s",
                      pay.resp);
        }
    }
    detail d = item_detail(item);
    cr_assert_eq(d.paid, paid);
    cr_assert_eq(d.cancelled, cancelled);
    cr_assert_eq(d.remaining, cancelled, "each cancelled unit came back once");
    assert_books(&d);
    cr_log_info("pay won %d times, cancel %d", paid, cancelled);
    free(o);
    PQfinish(pg);
    sale_free(&s);
    harness_system_stop(&sys);
}

Test(orders, a_worker_killed_between_the_expiry_and_the_return_gives_the_units_back_once)
{
    enum { ORDERS = 20 };
    int64_t item = create_item(ORDERS, 1);
    sale s;
    sell_all(&s, item, ORDERS, 10);

    /* Redis refuses the returns (the returned-orders key is of the wrong
     * type), so the worker expires the orders in PostgreSQL and cannot give
     * their units back: the state a crash between the two steps leaves. */
    redisContext *c = harness_redis();
    char returned[KEYS_MAX];
    keys_item_returned(returned, sizeof(returned), item);
    freeReplyObject(redisCommand(c, "SET %s not-a-hash", returned));
    PGconn *pg = harness_pg();
    wait_orders(pg, item, "status = 'expired'", ORDERS, 15000);
    harness_sleep_ms(500);
    cr_assert_eq(sql_int(pg,
                         "SELECT count(*) FROM orders WHERE item_id = %" PRId64
                         " AND returned_at IS NOT NULL",
                         item),
                 0, "no return confirmed");
    cr_assert_eq(item_detail(item).remaining, 0, "no unit back yet");
    harness_stop(sys.worker, SIGKILL);
    sys.worker = 0;

    /* Half the returns reached Redis before a crash that kept them from
     * PostgreSQL: given back, never noted. */
    freeReplyObject(redisCommand(c, "DEL %s", returned));
    scripts sc;
    cr_assert_eq(scripts_init(&sc), 0);
    cr_assert_eq(scripts_load(&sc, c), 0);
    size_t n;
    int64_t(*o)[2] = orders_of(pg, item, &n);
    order_ref half[ORDERS / 2];
    char round_sql[128];
    snprintf(round_sql, sizeof(round_sql), "SELECT round FROM items WHERE id = %" PRId64, item);
    int64_t round = harness_pg_int(pg, round_sql);
    for (size_t i = 0; i < ORDERS / 2; i++)
        half[i] = (order_ref){o[i][0], item, round, o[i][1], 1, item, item, 0};
    unsigned char done[ORDERS / 2];
    config cfg;
    harness_config(&cfg);
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    cr_assert_eq(order_return_redis(rn, &sc, half, ORDERS / 2, done, "test"), 0);
    redis_nodes_free(rn);
    config_free(&cfg);
    detail mid = item_detail(item);
    cr_assert_eq(mid.remaining, ORDERS / 2, "remaining %" PRId64 ", round %" PRId64, mid.remaining,
                 round);

    /* Two workers come up (two nodes): the sweep finishes every return
     * owed, and a return that already happened adds nothing again. */
    char *env_b[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-orders-b", NULL};
    char *env_c[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-orders-c", NULL};
    pid_t b = harness_start_worker(env_b, "e2e-orders-worker-b.log");
    pid_t w = harness_start_worker(env_c, "e2e-orders-worker-c.log");
    wait_orders(pg, item, "returned_at IS NULL", 0, 20000);
    harness_sleep_ms(1500); /* a further pass of each, should one repeat anything */
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, ORDERS, "every unit back exactly once");
    cr_assert_eq(d.expired, ORDERS);
    cr_assert_eq(d.returned, ORDERS);
    assert_books(&d);
    harness_stop_clean(&b, "worker b");
    harness_stop_clean(&w, "worker c");
    harness_stop_clean(&sys.server, "server");
    free(o);
    redisFree(c);
    PQfinish(pg);
    sale_free(&s);
}

/* The state, buyers, returns and units given back of every segment gone,
 * as from a Redis that lost them (queues and pending hashes kept). */
static void forget_segments(int64_t item, int segments)
{
    redisContext *c = harness_redis();
    for (int j = 0; j < segments; j++) {
        int64_t key = keys_segment(item, j, segments);
        char keys[4][KEYS_MAX];
        keys_item_state(keys[0], KEYS_MAX, key);
        keys_item_buyers(keys[1], KEYS_MAX, key);
        keys_item_returned(keys[2], KEYS_MAX, key);
        keys_item_given_back(keys[3], KEYS_MAX, key);
        freeReplyObject(redisCommand(c, "DEL %s %s %s %s", keys[0], keys[1], keys[2], keys[3]));
    }
    redisFree(c);
}

Test(orders, a_rebuild_of_a_redis_that_forgot_keeps_given_back_units_given_back)
{
    enum { STOCK = 20, BOUGHT = 10, CANCELLED = 4 };
    const int64_t item = 123456789012LL; /* ids as long as they come */
    char body[160], resp[4096];
    snprintf(body, sizeof(body),
             "{\"id\":%" PRId64 ",\"name\":\"big\",\"stock\":%d,\"payment_timeout_s\":600}", item,
             STOCK);
    cr_assert_eq(call("POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201, "%s", resp);
    sale s;
    sell_all(&s, item, BOUGHT, 5);
    PGconn *pg = harness_pg();
    size_t n;
    int64_t(*o)[2] = orders_of(pg, item, &n);
    for (int i = 0; i < CANCELLED; i++)
        cr_assert_eq(settle("cancel", o[i][0], o[i][1], resp, sizeof(resp)), 200, "%s", resp);
    redisContext *c = harness_redis();
    int64_t version_before = harness_item_field(c, item, "returns");
    cr_assert_eq(version_before, CANCELLED, "one return call an order here");

    /* Redis forgot the item: everything of it is gone. */
    forget_segments(item, 1);
    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_assert_eq(harness_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    char *check[] = {"reconcile", NULL};
    cr_assert_eq(harness_admin(check, resp, sizeof(resp)), 0, "still drifting:\n%s", resp);
    cr_assert_eq(harness_item_field(c, item, "stock"), STOCK - (BOUGHT - CANCELLED));
    cr_assert_geq(harness_item_field(c, item, "returns"), version_before,
                  "the stock version never goes back: flags of servers that saw it must clear");

    /* A cancelled order's return, run again (a sweep finishing it), adds
     * nothing: the rebuild counted it given back. */
    cr_assert_eq(settle("cancel", o[0][0], o[0][1], resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(harness_item_field(c, item, "stock"), STOCK - (BOUGHT - CANCELLED));
    /* A buyer who cancelled buys again; the new order numbers its units after
     * the one given back, so the worker persists it. */
    cr_assert_eq(buy_units(item, o[1][1], 1, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000);
    char sql[200];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE item_id = %" PRId64 " AND user_id = %" PRId64
             " AND status = 'persisted'",
             item, o[1][1]);
    cr_assert_eq(harness_pg_int(pg, sql), 1, "the buyer's new order persisted");
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, STOCK - (BOUGHT - CANCELLED) - 1);
    assert_books(&d);
    free(o);
    redisFree(c);
    PQfinish(pg);
    sale_free(&s);
    harness_system_stop(&sys);
}

/* The first `n` orders of the item (id, buyer, segment) whose units came
 * from their buyer's home (moved == 0) or from another segment (moved). */
static void orders_placed(PGconn *pg, int64_t item, int moved, int n, int64_t (*out)[3])
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id, segment_id FROM orders WHERE item_id = %" PRId64
             " AND segment_id %s home_id ORDER BY id LIMIT %d",
             item, moved ? "<>" : "=", n);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    cr_assert_eq(PQntuples(res), n, "%d orders %s", n, moved ? "moved" : "at home");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            out[i][k] = strtoll(PQgetvalue(res, i, k), NULL, 10);
    PQclear(res);
}

/* Makes a cancelled order's return owed again, as a crash between
 * PostgreSQL's decision and Redis's confirmation leaves it. */
static void owe_return(PGconn *pg, int64_t order_id)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "UPDATE orders SET returned_at = NULL WHERE id = %" PRId64,
             order_id);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    cr_assert_str_eq(PQcmdTuples(res), "1");
    PQclear(res);
}

Test(orders, a_rebuild_sets_every_segment_of_a_split_item_back)
{
    /* 40 units over 4 segments and a restock of 4 (segment 0's); 40 buyers,
     * a quarter served away from home; 6 cancel. Then Redis forgets every key of
     * every segment, and the rebuild must set each segment's stock, buyers
     * and returns back as they were. */
    enum { STOCK = 40, SEGMENTS = 4, ADD = 4, CANCELLED = 3 };
    char body[160], resp[4096], path[96];
    snprintf(body, sizeof(body),
             "{\"name\":\"split\",\"stock\":%d,\"segments\":%d,\"payment_timeout_s\":600}", STOCK,
             SEGMENTS);
    cr_assert_eq(call("POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201, "%s", resp);
    int64_t item = member(resp, "id");
    /* Ids in a row spread evenly over the homes: these buyers leave
     * segment 3 nobody's home, so its units go to buyers from elsewhere. */
    for (int64_t user = 1, sold = 0; sold < STOCK; user++) {
        if (keys_segment_home(user, SEGMENTS) == SEGMENTS - 1)
            continue;
        cr_assert_eq(buy_units(item, user, 1, resp, sizeof(resp)), 202, "%s", resp);
        sold++;
    }
    sale_wait_drained(20000);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    snprintf(body, sizeof(body), "{\"add\":%d}", ADD);
    cr_assert_eq(call("POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s", resp);
    PGconn *pg = harness_pg();
    int64_t moved[CANCELLED + 1][3], home[CANCELLED][3];
    orders_placed(pg, item, 1, CANCELLED + 1, moved);
    orders_placed(pg, item, 0, CANCELLED, home);
    for (int i = 0; i < CANCELLED; i++) {
        cr_assert_eq(settle("cancel", moved[i][0], moved[i][1], resp, sizeof(resp)), 200, "%s",
                     resp);
        cr_assert_eq(settle("cancel", home[i][0], home[i][1], resp, sizeof(resp)), 200, "%s", resp);
    }
    int64_t key[SEGMENTS], stock[SEGMENTS], total = 0;
    for (int j = 0; j < SEGMENTS; j++) {
        key[j] = keys_segment(item, j, SEGMENTS);
        stock[j] = segment_stock(key[j]);
        total += stock[j];
    }
    cr_assert_eq(total, ADD + 2 * CANCELLED);

    /* Redis forgot the item: every key of every segment is gone. */
    forget_segments(item, SEGMENTS);
    redisContext *c = harness_redis();
    char *check[] = {"reconcile", NULL};
    cr_assert_neq(harness_admin(check, resp, sizeof(resp)), 0, "the loss is seen:\n%s", resp);
    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_assert_eq(harness_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    cr_assert_eq(harness_admin(check, resp, sizeof(resp)), 0, "still drifting:\n%s", resp);
    for (int j = 0; j < SEGMENTS; j++) {
        cr_assert_eq(segment_stock(key[j]), stock[j], "segment %d's stock", j);
        cr_assert_eq(harness_item_field(c, key[j], "segments"), SEGMENTS);
        cr_assert_eq(harness_item_field(c, key[j], "restocked"), j == 0 ? ADD : 0);
    }

    /* A return owed when Redis forgot (returned_at still null), run again,
     * adds nothing, on the segment the units came from or at the buyer's
     * home; a buyer served away from home who kept the unit is still
     * counted at home; one who gave it back buys again, and the old
     * order's return run after that does not free a third unit. */
    owe_return(pg, home[0][0]);
    owe_return(pg, moved[1][0]);
    cr_assert_eq(settle("cancel", home[0][0], home[0][1], resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(settle("cancel", moved[1][0], moved[1][1], resp, sizeof(resp)), 200, "%s", resp);
    for (int j = 0; j < SEGMENTS; j++)
        cr_assert_eq(segment_stock(key[j]), stock[j], "segment %d gave back twice", j);
    cr_assert_eq(buy_units(item, moved[CANCELLED][1], 1, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "limit_reached"), "%s", resp);
    cr_assert_eq(buy_units(item, moved[0][1], 1, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000); /* its order lock freed: the limit answers next */
    owe_return(pg, moved[0][0]);
    cr_assert_eq(settle("cancel", moved[0][0], moved[0][1], resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(buy_units(item, moved[0][1], 1, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "limit_reached"), "%s", resp);

    /* New buyers get exactly what is left, then the books balance. */
    sale rest;
    sale_init(&rest, sys.port, item, 3 * total, 10, 1000, (size_t)total - 1);
    cr_assert_eq(sale_run(&rest), 0);
    cr_assert_eq(rest.naccepted, (size_t)total - 1, "exactly the units left are sold");
    sale_wait_drained(20000);
    sale_assert_persisted(&rest, pg);
    for (int j = 0; j < SEGMENTS; j++)
        cr_assert_eq(segment_stock(key[j]), 0, "segment %d", j);
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, 0);
    cr_assert_eq(d.initial + d.restocked, STOCK + ADD);
    assert_books(&d);
    redisFree(c);
    PQfinish(pg);
    sale_free(&rest);
    harness_system_stop(&sys);
}

Test(orders, a_rebuild_numbers_a_buyers_next_units_after_the_last_and_keeps_pending_orders)
{
    enum { STOCK = 20, SEGMENTS = 4, LIMIT = 3 };
    const int64_t u = 7, v = 8, w = 9;
    char body[160], resp[4096];
    snprintf(body, sizeof(body),
             "{\"name\":\"numbered\",\"stock\":%d,\"segments\":%d,\"per_buyer_limit\":%d}", STOCK,
             SEGMENTS, LIMIT);
    cr_assert_eq(call("POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201, "%s", resp);
    int64_t item = member(resp, "id");
    PGconn *pg = harness_pg();
    char sql[256];

    /* Buyer u's units 1 and 3: unit 2 went to a hold that a crash left
     * unreleased at u's home (the count a unit too high). */
    cr_assert_eq(buy_units(item, u, 1, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000); /* u's order lock freed: u may buy again */
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers),
                     keys_segment(item, keys_segment_home(u, SEGMENTS), SEGMENTS));
    redisContext *c = harness_redis();
    freeReplyObject(redisCommand(c, "HINCRBY %s %lld 1", buyers, (long long)u));
    redisFree(c);
    cr_assert_eq(buy_units(item, u, 1, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000);
    snprintf(sql, sizeof(sql),
             "SELECT max(first_unit) FROM orders WHERE item_id = %" PRId64
             " AND user_id = %" PRId64,
             item, u);
    cr_assert_eq(harness_pg_int(pg, sql), 3, "u's second order numbered after the hold");

    /* With the worker stopped, v's and w's orders wait in Redis. */
    harness_stop_clean(&sys.worker, "worker");
    cr_assert_eq(buy_units(item, v, 2, resp, sizeof(resp)), 202, "%s", resp);
    cr_assert_eq(buy_units(item, w, 1, resp, sizeof(resp)), 202, "%s", resp);

    /* Redis forgets the segments and the registry of queues (on a cluster
     * another master may lose it): the pending orders are found all the
     * same, and their units stay sold. */
    forget_segments(item, SEGMENTS);
    c = harness_redis();
    freeReplyObject(redisCommand(c, "DEL %s", KEYS_ITEMS));
    redisFree(c);
    char *check[] = {"reconcile", NULL};
    cr_assert_neq(harness_admin(check, resp, sizeof(resp)), 0, "the loss is seen:\n%s", resp);
    char *rebuild[] = {"reconcile", "--rebuild", NULL};
    cr_assert_eq(harness_admin(rebuild, resp, sizeof(resp)), 0, "%s", resp);
    cr_assert_eq(harness_admin(check, resp, sizeof(resp)), 0, "still drifting:\n%s", resp);
    int64_t left = 0;
    for (int j = 0; j < SEGMENTS; j++)
        left += segment_stock(keys_segment(item, j, SEGMENTS));
    cr_assert_eq(left, STOCK - 2 - 3, "the pending units are out of stock");
    /* v's order is still being created: its lock stands through the
     * rebuild. Once it expires (the worker down past order_lock_ttl_ms),
     * the limit alone answers, and counts the pending units. */
    cr_assert_eq(buy_units(item, v, 2, resp, sizeof(resp)), 429, "%s", resp);
    cr_assert(has(resp, "in_progress"), "%s", resp);
    char lock[KEYS_MAX];
    keys_order_lock(lock, sizeof(lock),
                    keys_segment(item, keys_segment_home(v, SEGMENTS), SEGMENTS), v);
    c = harness_redis();
    cr_assert_eq(harness_redis_int(c, "DEL", lock), 1, "v's lock stood at v's home");
    redisFree(c);
    cr_assert_eq(buy_units(item, v, 2, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "limit_reached"), "v's pending units count: %s", resp);

    /* The pending orders persist; u's next unit is numbered 4, not 3, so
     * the worker does not take it for the order that holds unit 3. */
    char *worker_env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-orders", NULL};
    sys.worker = harness_start_worker(worker_env, "e2e-orders-worker-2.log");
    cr_assert_eq(buy_units(item, u, 1, resp, sizeof(resp)), 202, "%s", resp);
    sale_wait_drained(20000);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE item_id = %" PRId64 " AND user_id = %" PRId64, item,
             u);
    cr_assert_eq(harness_pg_int(pg, sql), 3, "every order of u answered 202 is persisted");
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(sum(quantity), 0) FROM orders WHERE item_id = %" PRId64
             " AND user_id IN (%" PRId64 ", %" PRId64 ")",
             item, v, w);
    cr_assert_eq(harness_pg_int(pg, sql), 3, "the orders pending at the rebuild persisted");
    cr_assert_eq(buy_units(item, u, 1, resp, sizeof(resp)), 409, "%s", resp);
    cr_assert(has(resp, "limit_reached"), "%s", resp);
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, STOCK - 6);
    assert_books(&d);
    PQfinish(pg);
    harness_system_stop(&sys);
}

/* ---- buyer tokens ---- */

static void mint(int64_t user, int64_t expiry_s, char *buf)
{
    char token[BUYER_TOKEN_MAX];
    cr_assert_gt(buyer_token_mint(SECRET, user, expiry_s, token, sizeof(token)), 0);
    strcpy(buf, token);
}

static int buy_as(const char *token, int64_t item, const char *body, char *resp, size_t cap)
{
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    return call("POST", path, token, body, resp, cap);
}

Test(buyer_tokens, a_buyer_buys_reads_and_cancels_as_themselves_and_nobody_else)
{
    int64_t item = create_item(10, 60);
    int64_t later = clock_wall_ms() / 1000 + 600;
    char alice[BUYER_TOKEN_MAX], bob[BUYER_TOKEN_MAX], stale[BUYER_TOKEN_MAX],
        forged[BUYER_TOKEN_MAX], resp[4096], path[96];
    mint(41, later, alice);
    mint(42, later, bob);
    mint(41, clock_wall_ms() / 1000 - 1, stale);
    strcpy(forged, alice);
    forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == 'A' ? 'B' : 'A';

    cr_assert_eq(buy_as(NULL, item, "{\"user_id\":\"41\"}", resp, sizeof(resp)), 401,
                 "no token: %s", resp);
    cr_assert_eq(buy_as(stale, item, "{}", resp, sizeof(resp)), 401, "expired: %s", resp);
    cr_assert(has(resp, "expired"), "%s", resp);
    cr_assert_eq(buy_as(forged, item, "{}", resp, sizeof(resp)), 401, "forged: %s", resp);
    cr_assert_eq(buy_as(alice, item, "{\"user_id\":\"42\"}", resp, sizeof(resp)), 403,
                 "buying as another: %s", resp);
    cr_assert_eq(buy_as(alice, item, "{}", resp, sizeof(resp)), 202, "%s", resp);
    char order_id[24];
    cr_assert_eq(sscanf(strstr(resp, "\"order_id\":\"") + 12, "%23[0-9]", order_id), 1, "%s", resp);
    cr_assert_eq(buy_as(bob, item, "{\"user_id\":\"42\"}", resp, sizeof(resp)), 202, "%s", resp);

    snprintf(path, sizeof(path), "/api/v1/orders/%s", order_id);
    cr_assert_eq(call("GET", path, alice, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"user_id\":\"41\""), "%s", resp);
    cr_assert_eq(call("GET", path, bob, NULL, resp, sizeof(resp)), 404,
                 "another buyer's order is not revealed: %s", resp);
    cr_assert_eq(call("GET", path, NULL, NULL, resp, sizeof(resp)), 401, "%s", resp);
    cr_assert_eq(call("GET", path, TOKEN, NULL, resp, sizeof(resp)), 200, "the shop reads any");

    sale_wait_drained(10000);
    cr_assert_eq(call("GET", "/api/v1/orders", alice, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, order_id) && !has(resp, "\"user_id\":\"42\""), "only alice's: %s", resp);
    cr_assert_eq(call("GET", "/api/v1/orders?user_id=42", alice, NULL, resp, sizeof(resp)), 403,
                 "%s", resp);

    snprintf(path, sizeof(path), "/api/v1/orders/%s/cancel", order_id);
    cr_assert_eq(call("POST", path, bob, NULL, resp, sizeof(resp)), 404, "%s", resp);
    cr_assert_eq(call("POST", path, alice, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert(has(resp, "\"status\":\"cancelled\""), "%s", resp);
    snprintf(path, sizeof(path), "/api/v1/orders/%s/pay", order_id);
    cr_assert_eq(call("POST", path, alice, NULL, resp, sizeof(resp)), 401,
                 "only the shop confirms a payment: %s", resp);
    detail d = item_detail(item);
    cr_assert_eq(d.remaining, 9, "alice's unit is back, bob's held");
    assert_books(&d);
    harness_system_stop(&sys);
}
