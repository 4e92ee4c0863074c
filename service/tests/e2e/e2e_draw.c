/* e2e_draw.c: the draw end to end on real servers (issue 28): 10,000
 * entrants for 1,000 units (exactly the stock won, no entrant twice, every
 * ticket and outcome recomputed from K and the beacon equal to the
 * published ones, the winners' orders granted); quantities above one
 * served whole or skipped; the entries window and its refusals with the
 * times, already_entered, a draw before the close refused, a second draw
 * answering the first, a purchase of a draw item refused; entries on two
 * instances at once, one per buyer; and a grant that a crash left owed
 * finished once by running it again. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "clock.h"
#include "draw_sale.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "rfc3339.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-draw", NULL};

HARNESS_SYSTEM_SUITE(draw, harness_system_start, sys, env, "e2e-draw", .timeout = 120);

static int64_t num(json_t *o, const char *key)
{
    return draw_sale_num(o, key);
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_string(v), "no string %s in %s", key, json_dumps(o, 0));
    return json_string_value(v);
}

/* Runs scripts/draw-verify against this server's public answers for item;
 * its output into out. Returns its exit status. */
static int draw_verify(int64_t item, char *out, size_t len)
{
    char cmd[2048];
    const char *said = harness_path("draw-verify.out");
    snprintf(cmd, sizeof(cmd),
             "python3 '%s/scripts/draw-verify' --url http://127.0.0.1:%d %" PRId64 " >'%s' 2>&1",
             SECKILL_SOURCE_DIR, sys.port, item, said);
    int status = system(cmd);
    FILE *f = fopen(said, "r");
    cr_assert_not_null(f, "draw-verify wrote nothing to %s", said);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int get(const char *path, json_t **out)
{
    return draw_sale_call(sys.port, "GET", path, NULL, NULL, out);
}

/* The item's "draw" object and its remaining units. */
static json_t *draw_of(int64_t item, int64_t *remaining)
{
    char path[64];
    json_t *o;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(get(path, &o), 200);
    cr_assert_str_eq(str(o, "admission"), "draw");
    *remaining = num(o, "remaining");
    json_t *d = json_incref(json_object_get(o, "draw"));
    json_decref(o);
    cr_assert(json_is_object(d));
    return d;
}

Test(draw, ten_thousand_entrants_for_a_thousand_units_win_exactly_the_stock)
{
    enum { ENTRANTS = 10000, STOCK = 1000 };
    int64_t item = draw_sale_create(sys.port, TOKEN, STOCK, -1000, 600000, "");
    int64_t t0 = clock_mono_ms();
    cr_assert_eq(draw_sale_enter_many(sys.port, item, 1, ENTRANTS, 1, 1, 32), ENTRANTS);
    int64_t t1 = clock_mono_ms();
    PGconn *pg = harness_pg();
    draw_sale_close_now(pg, item);
    json_t *o;
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, "drand 4242 f00d", &o), 200);
    int64_t t2 = clock_mono_ms();
    fprintf(stderr,
            "e2e_draw: %d entries through HTTP in %" PRId64 " ms, the draw in %" PRId64 " ms\n",
            ENTRANTS, t1 - t0, t2 - t1);
    json_t *d = json_object_get(o, "draw");
    cr_assert_eq(num(d, "entries"), ENTRANTS);
    cr_assert_eq(num(d, "won"), STOCK);
    cr_assert_eq(num(d, "units_won"), STOCK, "exactly the stock won");
    cr_assert_eq(num(d, "waitlisted"), ENTRANTS - STOCK);
    cr_assert_eq(num(d, "skipped"), 0);
    cr_assert_eq(num(d, "stock"), STOCK);
    cr_assert_str_eq(str(d, "beacon"), "drand 4242 f00d");
    json_decref(o);

    cr_assert_eq(draw_sale_assert_audit(sys.port, item, 1, ENTRANTS, 200), STOCK,
                 "the tickets and outcomes recomputed are the published ones");
    draw_sale_assert_orders(pg, item, STOCK);
    int64_t remaining;
    json_decref(draw_of(item, &remaining));
    cr_assert_eq(remaining, 0, "Redis granted every winner's units");
    PQfinish(pg);
    harness_system_stop(&sys);
}

/* The feed's events of item, in the feed's order (pages of 100: harness_http
 * reads 64 KiB). */
static json_t *events_of(int64_t item)
{
    json_t *all = json_array();
    for (int64_t after = 0; after >= 0;) {
        char path[96];
        json_t *o, *e;
        size_t i;
        snprintf(path, sizeof(path), "/api/v1/events?after=%" PRId64 "&limit=100", after);
        cr_assert_eq(draw_sale_call(sys.port, "GET", path, TOKEN, NULL, &o), 200);
        json_array_foreach(json_object_get(o, "events"), i, e)
        {
            json_t *subject = json_object_get(e, "entry");
            if (!subject)
                subject = json_object_get(e, "order");
            if (num(subject, "item_id") == item)
                json_array_append(all, e);
        }
        json_t *next = json_object_get(o, "next_after");
        after = json_is_integer(next) ? json_integer_value(next) : -1;
        json_decref(o);
    }
    return all;
}

/* The feed holds one entry.waitlisted per entrant of item the draw put on
 * the waitlist (waitlisted or skipped), in ticket order, each the entry as
 * drawn with its buyer and no order, and none for a winner; and one
 * order.won per winner. Returns the feed's events of item. */
static json_t *assert_waitlisted_events(PGconn *pg, int64_t item)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT user_id, position, outcome, quantity, entrant FROM draw_entries"
             " WHERE item_id = %" PRId64 " AND outcome IN ('waitlisted', 'skipped')"
             " ORDER BY position",
             item);
    PGresult *w = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(w), PGRES_TUPLES_OK);
    json_t *all = events_of(item), *e;
    size_t i;
    int k = 0, won = 0;
    json_array_foreach(all, i, e)
    {
        won += strcmp(str(e, "type"), "order.won") == 0;
        if (strcmp(str(e, "type"), "entry.waitlisted") != 0)
            continue;
        cr_assert_lt(k, PQntuples(w), "an entry.waitlisted of an entrant not on the waitlist");
        json_t *entry = json_object_get(e, "entry");
        cr_assert_str_eq(str(entry, "user_id"), PQgetvalue(w, k, 0),
                         "entry.waitlisted %d in ticket order", k);
        cr_assert_eq(num(entry, "position"), strtoll(PQgetvalue(w, k, 1), NULL, 10));
        cr_assert_str_eq(str(entry, "outcome"), PQgetvalue(w, k, 2));
        cr_assert_eq(num(entry, "quantity"), strtoll(PQgetvalue(w, k, 3), NULL, 10));
        cr_assert_str_eq(str(entry, "entrant"), PQgetvalue(w, k, 4));
        cr_assert(json_is_null(json_object_get(entry, "order_id")), "no order yet");
        k++;
    }
    cr_assert_eq(k, PQntuples(w), "one entry.waitlisted per entrant on the waitlist");
    PQclear(w);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64 " AND outcome = 'won'",
             item);
    cr_assert_eq(won, harness_pg_int(pg, sql), "one order.won per winner");
    return all;
}

/* A restock of 3 units (the most an entrant wants): the worker's draw
 * chore serves the waitlist with them, and each entrant served gets its
 * order.won after its entry.waitlisted, both under one key (the order id
 * the draw reserved). */
static void assert_served_after_waitlisted(PGconn *pg, int64_t item)
{
    char sql[320], path[96], resp[2048];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, "{\"add\":3}", resp, sizeof(resp)),
                 200, "%s", resp);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64
             " AND outcome = 'won_from_waitlist'",
             item);
    for (int waited = 0; harness_pg_int(pg, sql) == 0; waited += 50) {
        cr_assert_lt(waited, 10000, "nobody served from the waitlist");
        harness_sleep_ms(50);
    }
    int64_t served = harness_pg_int(pg, sql);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM draw_entries d JOIN order_events e ON e.order_id = d.order_id"
             " AND e.type = 'entry.waitlisted' AND (e.order_row->>'user_id')::bigint = d.user_id"
             " WHERE d.item_id = %" PRId64 " AND d.outcome = 'won_from_waitlist'",
             item);
    cr_assert_eq(harness_pg_int(pg, sql), served, "the order takes its entry event's key");
    json_t *all = events_of(item), *e;
    size_t i;
    int64_t seen = 0;
    json_array_foreach(all, i, e)
    {
        if (strcmp(str(e, "type"), "order.won") != 0)
            continue;
        json_t *o = json_object_get(e, "order");
        json_t *f, *entry;
        size_t k;
        int waitlisted_before = 0;
        json_array_foreach(all, k, f)
        {
            entry = json_object_get(f, "entry");
            waitlisted_before |=
                k < i && entry && strcmp(str(entry, "user_id"), str(o, "user_id")) == 0;
        }
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM draw_entries WHERE order_id = %s"
                 " AND outcome = 'won_from_waitlist'",
                 str(o, "order_id"));
        if (harness_pg_int(pg, sql) == 1) {
            cr_assert(waitlisted_before, "order.won of %s after its entry.waitlisted",
                      str(o, "order_id"));
            seen++;
        }
    }
    cr_assert_eq(seen, served, "every entrant served got order.won");
    json_decref(all);
}

Test(draw, quantities_above_one_are_served_whole_or_skipped)
{
    enum { ENTRANTS = 300, STOCK = 101 };
    int64_t item = draw_sale_create(sys.port, TOKEN, STOCK, -1000, 600000,
                                    "\"per_buyer_limit\":3,\"payment_timeout_s\":0");
    /* Each buyer twice: the second is already entered. */
    cr_assert_eq(draw_sale_enter_many(sys.port, item, 501, ENTRANTS, 2, 3, 16), ENTRANTS);
    PGconn *pg = harness_pg();
    draw_sale_close_now(pg, item);
    json_t *o;
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, NULL, &o), 200);
    json_decref(o);
    int64_t units = draw_sale_assert_audit(sys.port, item, 501, ENTRANTS, 7);
    cr_assert_leq(units, STOCK);
    draw_sale_assert_orders(pg, item, units);
    int64_t remaining;
    json_t *d = draw_of(item, &remaining);
    cr_assert_eq(num(d, "units_won"), units);
    cr_assert_eq(remaining, STOCK - units);
    cr_assert_str_eq(str(d, "beacon"), "", "no beacon: the empty one");
    json_decref(d);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM orders WHERE pay_by IS NOT NULL"), 0,
                 "no payment step: no pay_by");
    json_decref(assert_waitlisted_events(pg, item));
    assert_served_after_waitlisted(pg, item);
    PQfinish(pg);
    /* The published draw checks out from the public answers alone. */
    char said[8192];
    cr_assert_eq(draw_verify(item, said, sizeof(said)), 0, "draw-verify: %s", said);
    harness_system_stop(&sys);
}

/* POST /entries of user; asserts status and, for a refusal, its code and
 * the window's times in the answer. */
static void expect_refused(int64_t item, int64_t user, int quantity, int status, const char *code)
{
    json_t *o;
    cr_assert_eq(draw_sale_enter(sys.port, item, user, quantity, &o), status, "%s", code);
    cr_assert_str_eq(str(o, "error"), code);
    if (status == 409 && strncmp(code, "entries_", 8) == 0) {
        str(o, "entries_open_at");
        str(o, "entries_close_at");
    }
    json_decref(o);
}

static void wait_past(int64_t until_ms)
{
    while (clock_wall_ms() < until_ms)
        usleep(50 * 1000);
}

Test(draw, the_window_refusals_already_entered_and_a_draw_that_runs_once)
{
    int64_t opens = clock_wall_ms() + 1500, closes = opens + 1500;
    int64_t item = draw_sale_create(sys.port, TOKEN, 1, 1500, 3000,
                                    "\"per_buyer_limit\":2,\"payment_timeout_s\":600");
    char path[128];
    json_t *o, *e;
    expect_refused(item, 7, 1, 409, "entries_not_open");
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, NULL, &o), 409);
    cr_assert_str_eq(str(o, "error"), "entries_open");
    str(o, "entries_close_at");
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/draw/audit", item);
    cr_assert_eq(get(path, &o), 409);
    cr_assert_str_eq(str(o, "error"), "not_drawn");
    json_decref(o);
    wait_past(opens + 50);

    cr_assert_eq(draw_sale_enter(sys.port, item, 7, 2, &o), 201);
    e = json_object_get(o, "entry");
    cr_assert_eq(num(e, "quantity"), 2);
    cr_assert(json_is_null(json_object_get(e, "position")), "not drawn yet");
    cr_assert(json_is_null(json_object_get(e, "outcome")));
    cr_assert(json_is_null(json_object_get(e, "order_id")));
    char entrant[80];
    snprintf(entrant, sizeof(entrant), "%s", str(e, "entrant"));
    json_decref(o);
    cr_assert_eq(draw_sale_enter(sys.port, item, 7, 1, &o), 200);
    cr_assert(json_is_true(json_object_get(o, "already_entered")));
    e = json_object_get(o, "entry");
    cr_assert_eq(num(e, "quantity"), 2, "the stored entry, unchanged");
    cr_assert_str_eq(str(e, "entrant"), entrant);
    json_decref(o);
    cr_assert_eq(draw_sale_enter(sys.port, item, 8, 1, &o), 201);
    json_decref(o);
    expect_refused(item, 9, 3, 400, "invalid_request"); /* above per_buyer_limit */
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/entries?user_id=7", item);
    cr_assert_eq(get(path, &o), 200);
    cr_assert_str_eq(str(json_object_get(o, "entry"), "entrant"), entrant);
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/entries?user_id=9", item);
    cr_assert_eq(get(path, &o), 404);
    cr_assert_str_eq(str(o, "error"), "not_entered");
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    cr_assert_eq(draw_sale_call(sys.port, "POST", path, NULL, "{\"user_id\":7}", &o), 409);
    cr_assert_str_eq(str(o, "error"), "draw_item", "a draw item is not bought");
    json_decref(o);
    wait_past(closes + 50);

    expect_refused(item, 10, 1, 409, "entries_closed");
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, "x", &o), 200);
    json_t *first = json_deep_copy(json_object_get(o, "draw"));
    json_decref(o);
    cr_assert_eq(num(first, "entries"), 2);
    cr_assert_eq(num(first, "units_won"), 1, "one unit: buyer 8's, or 7's 2 skipped");
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, "another", &o), 200);
    cr_assert(json_equal(json_object_get(o, "draw"), first), "the second call: the first result");
    json_decref(o);
    json_decref(first);
    cr_assert_eq(draw_sale_assert_audit(sys.port, item, 7, 2, 200), 1);
    PGconn *pg = harness_pg();
    draw_sale_assert_orders(pg, item, 1);
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE item_id = %" PRId64 " AND user_id = 8 AND "
             "pay_by BETWEEN now() + interval '590 s' AND now() + interval '600 s'",
             item);
    cr_assert_eq(harness_pg_int(pg, sql), 1, "buyer 8 won (7's two units do not fit), pays by");
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/entries?user_id=8", item);
    cr_assert_eq(get(path, &o), 200);
    e = json_object_get(o, "entry");
    cr_assert_str_eq(str(e, "outcome"), "won");
    int64_t order = strtoll(str(e, "order_id"), NULL, 10);
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order);
    cr_assert_eq(get(path, &o), 200);
    cr_assert_str_eq(str(o, "status"), "persisted", "awaiting payment");
    json_decref(o);
    expect_refused(item, 11, 1, 409, "entries_closed");
    PQfinish(pg);
    harness_system_stop(&sys);
}

Test(draw, bad_terms_and_the_routes_of_items_that_are_not_draws)
{
    char resp[1024];
    static const char *const bad[][2] = {
        {"{\"name\":\"d\",\"stock\":1,\"admission\":\"draw\","
         "\"entries_open_at\":\"2099-01-01T00:00:00Z\"}",
         "entries_close_at"},
        {"{\"name\":\"d\",\"stock\":1,\"admission\":\"draw\",\"entries_open_at\":\"2099-01-01T00:"
         "00:00Z\",\"entries_close_at\":\"2098-01-01T00:00:00Z\"}",
         "entries_close_at"},
        {"{\"name\":\"d\",\"stock\":4,\"segments\":2,\"admission\":\"draw\",\"entries_open_at\":"
         "\"2099-01-01T00:00:00Z\",\"entries_close_at\":\"2099-01-02T00:00:00Z\"}",
         "segments"},
        {"{\"name\":\"d\",\"stock\":1,\"entries_open_at\":\"2099-01-01T00:00:00Z\"}", "draw"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int status =
            harness_http(sys.port, "POST", "/api/v1/items", TOKEN, bad[i][0], resp, sizeof(resp));
        cr_assert_eq(status, 400, "%s: %d %s", bad[i][0], status, resp);
        cr_assert(strstr(resp, bad[i][1]), "%s names %s: %s", bad[i][0], bad[i][1], resp);
    }
    int64_t race = sale_create_item(sys.port, TOKEN, "race", 3);
    json_t *o;
    cr_assert_eq(draw_sale_enter(sys.port, race, 1, 1, &o), 409);
    cr_assert_str_eq(str(o, "error"), "not_a_draw");
    json_decref(o);
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, race, NULL, &o), 409);
    cr_assert_str_eq(str(o, "error"), "not_a_draw");
    json_decref(o);
    int64_t item = draw_sale_create(sys.port, TOKEN, 1, -1000, 60000, "");
    cr_assert_eq(draw_sale_draw(sys.port, NULL, item, NULL, &o), 401, "the draw is the admin's");
    json_decref(o);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/draw", item);
    cr_assert_eq(draw_sale_call(sys.port, "POST", path, TOKEN, "{\"beacon\":7}", &o), 400);
    json_decref(o);
    /* A new round keeps no entries window: the old one would close it to
     * entries from birth. The reset names a new one, or is refused. */
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    int status = harness_http(sys.port, "POST", path, TOKEN, "{\"stock\":2}", resp, sizeof(resp));
    cr_assert_eq(status, 400, "%s", resp);
    cr_assert(strstr(resp, "entries_open_at"), "%s", resp);
    char body[256], opens[RFC3339_MAX], closes[RFC3339_MAX];
    cr_assert_gt(rfc3339_format(clock_wall_ms() - 1000, opens, sizeof(opens)), 0);
    cr_assert_gt(rfc3339_format(clock_wall_ms() + 60000, closes, sizeof(closes)), 0);
    snprintf(body, sizeof(body),
             "{\"stock\":2,\"admission\":\"draw\",\"entries_open_at\":\"%s\","
             "\"entries_close_at\":\"%s\"}",
             opens, closes);
    status = harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    cr_assert_eq(draw_sale_enter(sys.port, item, 5, 1, &o), 201, "the new round takes entries");
    json_decref(o);
    harness_system_stop(&sys);
}

typedef struct entering_b {
    int port;
    int64_t item;
    size_t buyers, created;
} entering_b;

static void *enter_on_b(void *arg)
{
    entering_b *b = arg;
    b->created = draw_sale_enter_many(b->port, b->item, 1, b->buyers, 3, 1, 16);
    return NULL;
}

Test(draw, entries_on_two_instances_at_once_are_one_per_buyer)
{
    enum { BUYERS = 200 };
    int port_b = 0;
    pid_t second = harness_start_server(&port_b, env, "e2e-draw-b-server.log");
    int64_t item = draw_sale_create(sys.port, TOKEN, 50, -1000, 600000, "");
    /* Every buyer three times on each instance, all at once. */
    entering_b b = {port_b, item, BUYERS, 0};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, enter_on_b, &b), 0);
    size_t created_a = draw_sale_enter_many(sys.port, item, 1, BUYERS, 3, 1, 16);
    pthread_join(t, NULL);
    size_t created_b = b.created;
    PGconn *pg = harness_pg();
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM draw_entries WHERE item_id = %" PRId64, item);
    cr_assert_eq(harness_pg_int(pg, sql), BUYERS, "one entry per buyer");
    cr_assert_eq(created_a + created_b, BUYERS, "one 201 per buyer over both instances");
    draw_sale_close_now(pg, item);
    json_t *o;
    cr_assert_eq(draw_sale_draw(port_b, TOKEN, item, NULL, &o), 200);
    json_decref(o);
    cr_assert_eq(draw_sale_assert_audit(sys.port, item, 1, BUYERS, 200), 50);
    draw_sale_assert_orders(pg, item, 50);
    PQfinish(pg);
    harness_stop_clean(&second, "server B");
    harness_system_stop(&sys);
}

Test(draw, a_grant_a_crash_left_owed_is_finished_once_by_running_it_again)
{
    enum { ENTRANTS = 40, STOCK = 10 };
    int64_t item = draw_sale_create(sys.port, TOKEN, STOCK, -1000, 600000, "");
    cr_assert_eq(draw_sale_enter_many(sys.port, item, 1, ENTRANTS, 1, 1, 8), ENTRANTS);
    PGconn *pg = harness_pg();
    draw_sale_close_now(pg, item);
    json_t *o;
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, NULL, &o), 200);
    json_decref(o);
    char sql_lock[128];
    /* As if the server died after the commit for 4 winners: granted in
     * Redis (2 of them, whose granted_at never landed) or not at all (2:
     * their marks and units put back as they were). Made under the item's
     * row lock, as the draw holds it, so that the worker's draw chore
     * (which skips a locked item) never sees the half-made state: only
     * the state a crash leaves. */
    PQclear(PQexec(pg, "BEGIN"));
    snprintf(sql_lock, sizeof(sql_lock), "SELECT 1 FROM items WHERE id = %" PRId64 " FOR UPDATE",
             item);
    PGresult *locked = PQexec(pg, sql_lock);
    cr_assert_eq(PQresultStatus(locked), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    PQclear(locked);
    redisContext *redis = harness_redis();
    char granted[KEYS_MAX], state[KEYS_MAX], buyers[KEYS_MAX], sql[256];
    keys_item_granted(granted, sizeof(granted), item);
    keys_item_state(state, sizeof(state), item);
    keys_item_buyers(buyers, sizeof(buyers), item);
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id FROM orders WHERE item_id = %" PRId64 " ORDER BY id LIMIT 4",
             item);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQntuples(res), 4);
    for (int i = 0; i < 2; i++) {
        freeReplyObject(redisCommand(redis, "HDEL %s %s", granted, PQgetvalue(res, i, 0)));
        freeReplyObject(redisCommand(redis, "HINCRBY %s stock 1", state));
        freeReplyObject(redisCommand(redis, "HINCRBY %s %s -1", buyers, PQgetvalue(res, i, 1)));
    }
    PQclear(res);
    snprintf(sql, sizeof(sql),
             "UPDATE orders SET granted_at = NULL WHERE id IN (SELECT id FROM orders "
             "WHERE item_id = %" PRId64 " ORDER BY id LIMIT 4)",
             item);
    PQclear(PQexec(pg, sql));
    cr_assert_eq(harness_item_field(redis, item, "stock"), 2, "two grants undone");
    PQclear(PQexec(pg, "COMMIT"));
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, NULL, &o), 200, "the grants again");
        json_decref(o);
        cr_assert_eq(harness_item_field(redis, item, "stock"), 0, "run %d: each unit once", run);
        cr_assert_eq(harness_redis_int(redis, "HLEN", granted), STOCK);
    }
    draw_sale_assert_orders(pg, item, STOCK);
    redisFree(redis);
    PQfinish(pg);
    harness_system_stop(&sys);
}
