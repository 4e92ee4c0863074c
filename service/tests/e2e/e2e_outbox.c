/* e2e_outbox.c: what a shop reads of what it sold, end to end on real
 * servers: an item's orders page by page (filters, scopes, bad input), and
 * the feed of the orders' events after a sale whose orders are paid,
 * cancelled and left to expire, held against the orders table: one event
 * per change, every change with one, ids in order. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "harness.h"
#include "sale.h"

#define TOKEN "e2e-outbox-admin-token"
#define READER "e2e-outbox-reader-token-0123"
#define BIG 65536 /* what harness_http reads at most */

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_ORDERS_READ_TOKENS=" READER,
                      "SECKILL_WORKER_ID=e2e-outbox", NULL};

static void start_system(void)
{
    harness_system_start(&sys, env, "e2e-outbox");
}

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

TestSuite(outbox, .init = start_system, .fini = kill_leftovers, .timeout = 300);

/* GET path with token; asserts the status is want and returns the body
 * parsed (the caller decrefs). */
static json_t *get_json(const char *path, const char *token, int want)
{
    char *resp = malloc(BIG);
    cr_assert_not_null(resp);
    int status = harness_http(sys.port, "GET", path, token, NULL, resp, BIG);
    cr_assert_eq(status, want, "GET %s: %d %.300s", path, status, resp);
    json_error_t err;
    json_t *j = json_loads(resp, 0, &err);
    cr_assert_not_null(j, "GET %s: not JSON (%s): %.300s", path, err.text, resp);
    free(resp);
    return j;
}

/* An item with a payment window of window_s seconds. */
static int64_t create_item(int64_t stock, int window_s)
{
    char body[160], resp[4096];
    snprintf(body, sizeof(body),
             "{\"name\":\"outbox\",\"stock\":%" PRId64 ",\"payment_timeout_s\":%d}", stock,
             window_s);
    int status = harness_http(sys.port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(status, 201, "create item: %d %s", status, resp);
    int64_t id = 0;
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &id), 1, "create item: %s", resp);
    return id;
}

/* Sells every unit of item to buyers 1..stock and waits for the worker. */
static void sell_out(int64_t item, size_t stock)
{
    sale s;
    sale_init(&s, sys.port, item, stock, 50, 1, stock);
    cr_assert_eq(sale_run(&s), 0);
    cr_assert_eq(s.naccepted, stock, "every buyer got a unit");
    sale_free(&s);
    sale_wait_drained(30000);
}

/* The item's order ids in PostgreSQL, ascending; *n of them. */
static int64_t *order_ids(PGconn *pg, int64_t item, size_t *n)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT id FROM orders WHERE item_id = %" PRId64 " ORDER BY id",
             item);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    *n = (size_t)PQntuples(res);
    int64_t *ids = calloc(*n + 1, sizeof(*ids));
    for (size_t i = 0; i < *n; i++)
        ids[i] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
    PQclear(res);
    return ids;
}

/* Pays or cancels an order as the shop. */
static void settle(const char *what, int64_t order_id)
{
    char path[96], resp[4096];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/%s", order_id, what);
    int status = harness_http(sys.port, "POST", path, TOKEN, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s %" PRId64 ": %d %s", what, order_id, status, resp);
}

static int64_t id_of(json_t *v)
{
    return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : json_integer_value(v);
}

/* How many orders of item the list shows with the query q ("status=paid"). */
static size_t listed(int64_t item, const char *q, const char *want_status)
{
    char path[160];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/orders?%s", item, q);
    json_t *j = get_json(path, READER, 200);
    json_t *orders = json_object_get(j, "orders"), *o;
    size_t i, n = json_array_size(orders);
    json_array_foreach(orders, i, o)
    {
        const char *st = json_string_value(json_object_get(o, "status"));
        cr_assert(want_status == NULL || strcmp(st, want_status) == 0, "%s: %s", q, st);
    }
    json_decref(j);
    return n;
}

/* An item of stock units with two minutes to pay, sold out; its order ids
 * (*n of them, the caller frees) and the item in *item. */
static int64_t *sold_item(PGconn *pg, size_t stock, int64_t *item, size_t *n)
{
    *item = create_item((int64_t)stock, 120);
    sell_out(*item, stock);
    int64_t *ids = order_ids(pg, *item, n);
    cr_assert_eq(*n, stock);
    return ids;
}

Test(outbox, an_items_orders_come_page_by_page_in_id_order_filtered_by_status_and_round)
{
    enum { STOCK = 30, PAGE = 7 };
    PGconn *pg = harness_pg();
    size_t n;
    int64_t item;
    int64_t *ids = sold_item(pg, STOCK, &item, &n);
    for (size_t i = 0; i < 10; i++)
        settle("pay", ids[i]);
    for (size_t i = 10; i < 15; i++)
        settle("cancel", ids[i]);

    /* Page after page, each the next ids, until next_after is null. */
    size_t seen = 0, pages = 0;
    char path[160];
    int64_t after = 0;
    for (;;) {
        snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/orders?limit=%d&after=%" PRId64,
                 item, PAGE, after);
        json_t *j = get_json(path, READER, 200);
        json_t *orders = json_object_get(j, "orders"), *o, *next = json_object_get(j, "next_after");
        size_t i;
        json_array_foreach(orders, i, o)
        {
            cr_assert_lt(seen, n, "more orders listed than there are");
            cr_assert_eq(id_of(json_object_get(o, "order_id")), ids[seen], "order %zu", seen);
            seen++;
        }
        pages++;
        cr_assert(json_array_size(orders) == PAGE ? json_is_string(next) : json_is_null(next),
                  "a full page says where the next starts, a short one that it is the last");
        after = json_is_string(next) ? id_of(next) : 0;
        json_decref(j);
        if (!after)
            break;
    }
    cr_assert_eq(seen, n, "every order listed once");
    cr_assert_eq(pages, (STOCK + PAGE - 1) / PAGE);

    cr_assert_eq(listed(item, "status=paid", "paid"), 10);
    cr_assert_eq(listed(item, "status=cancelled&round=1", "cancelled"), 5);
    cr_assert_eq(listed(item, "status=persisted&limit=1000", "persisted"), STOCK - 15);
    cr_assert_eq(listed(item, "round=2", NULL), 0, "the item has no second round yet");

    /* The shop's credentials only; bad input is a 400 that says why. */
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/orders", item);
    json_decref(get_json(path, NULL, 401));
    json_decref(get_json(path, TOKEN, 200));
    const char *bad[] = {"limit=0",  "limit=1001", "status=queued", "status=shipped",
                         "after=-1", "after=x",    "round=0",       "round=1.5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/orders?%s", item, bad[i]);
        json_t *j = get_json(path, READER, 400);
        cr_assert_str_eq(json_string_value(json_object_get(j, "error")), "invalid_request", "%s",
                         bad[i]);
        cr_assert_not_null(json_string_value(json_object_get(j, "message")), "%s", bad[i]);
        json_decref(j);
    }
    json_decref(get_json("/api/v1/items/987654/orders", READER, 404));
    free(ids);
    PQfinish(pg);
    harness_system_stop(&sys);
}

/* One event of the feed, as the test keeps it. */
typedef struct seen_event {
    int64_t id, order_id;
    char type[24], status[16];
} seen_event;

static int by_order_then_id(const void *a, const void *b)
{
    const seen_event *x = a, *y = b;
    if (x->order_id != y->order_id)
        return (x->order_id > y->order_id) - (x->order_id < y->order_id);
    return (x->id > y->id) - (x->id < y->id);
}

/* Reads the whole feed from the start, pages of limit; *n events. Asserts
 * the ids strictly increase across pages. */
static seen_event *read_feed(int limit, size_t *n)
{
    size_t cap = 1024;
    seen_event *ev = malloc(cap * sizeof(*ev));
    *n = 0;
    int64_t after = 0;
    for (;;) {
        char path[96];
        snprintf(path, sizeof(path), "/api/v1/events?after=%" PRId64 "&limit=%d", after, limit);
        json_t *j = get_json(path, READER, 200), *e;
        json_t *events = json_object_get(j, "events");
        size_t i;
        json_array_foreach(events, i, e)
        {
            if (*n == cap)
                ev = realloc(ev, (cap *= 2) * sizeof(*ev));
            seen_event *s = &ev[(*n)++];
            json_t *order = json_object_get(e, "order");
            s->id = json_integer_value(json_object_get(e, "id"));
            s->order_id = id_of(json_object_get(order, "order_id"));
            snprintf(s->type, sizeof(s->type), "%s", json_string_value(json_object_get(e, "type")));
            snprintf(s->status, sizeof(s->status), "%s",
                     json_string_value(json_object_get(order, "status")));
            cr_assert_gt(s->id, after, "event ids strictly increase");
            cr_assert_not_null(json_string_value(json_object_get(e, "created_at")));
            after = s->id;
        }
        json_t *next = json_object_get(j, "next_after");
        cr_assert(json_array_size(events) ? json_integer_value(next) == after : json_is_null(next),
                  "next_after is the last id of the page, null when it is empty");
        size_t got = json_array_size(events);
        json_decref(j);
        if (got == 0)
            return ev;
    }
}

/* The events an order in state `status`, returned or not, must have had,
 * in order, into types; returns how many. */
static int expected_events(const char *status, int returned, const char *types[3])
{
    int n = 0;
    types[n++] = "order.persisted";
    if (strcmp(status, "persisted") != 0) {
        static char kind[32];
        snprintf(kind, sizeof(kind), "order.%s", status);
        types[n++] = kind;
    }
    if (returned)
        types[n++] = "order.returned";
    return n;
}

Test(outbox, the_feed_holds_one_event_per_change_of_a_sale_with_pays_cancels_and_expiries)
{
    enum { STOCK = 1000 };
    PGconn *pg = harness_pg();
    size_t n;
    int64_t item;
    int64_t *ids = sold_item(pg, STOCK, &item, &n);
    for (size_t i = 0; i < n; i++)
        if (i % 3 == 0)
            settle("pay", ids[i]);
        else if (i % 3 == 1)
            settle("cancel", ids[i]);
    /* The last third's deadline passes; the worker's expiry ends them and
     * gives their units back. */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "WITH due AS (UPDATE orders SET pay_by = now() WHERE item_id = %" PRId64
             " AND status = 'persisted' RETURNING 1) SELECT count(*) FROM due",
             item);
    cr_assert_eq(harness_pg_int(pg, sql), STOCK / 3);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE item_id = %" PRId64
             " AND status = 'expired' AND returned_at IS NOT NULL",
             item);
    for (int waited = 0; harness_pg_int(pg, sql) < STOCK / 3 && waited < 20000; waited += 100)
        harness_sleep_ms(100);
    cr_assert_eq(harness_pg_int(pg, sql), STOCK / 3, "the unpaid third expired and came back");

    size_t nev;
    seen_event *ev = read_feed(100, &nev);
    cr_assert_eq((int64_t)nev, harness_pg_int(pg, "SELECT count(*) FROM order_events"),
                 "the feed shows every event once");
    qsort(ev, nev, sizeof(*ev), by_order_then_id);

    /* Against the orders table: each order's changes, each once, in order. */
    PGresult *res =
        PQexec(pg, "SELECT id, status, returned_at IS NOT NULL FROM orders ORDER BY id");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    size_t at = 0, want_total = 0;
    for (int r = 0; r < PQntuples(res); r++) {
        int64_t id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        const char *status = PQgetvalue(res, r, 1);
        const char *types[3];
        int k = expected_events(status, PQgetvalue(res, r, 2)[0] == 't', types);
        want_total += (size_t)k;
        for (int t = 0; t < k; t++, at++) {
            cr_assert_lt(at, nev, "order %" PRId64 " lacks %s", id, types[t]);
            cr_assert_eq(ev[at].order_id, id, "order %" PRId64 " lacks %s", id, types[t]);
            cr_assert_str_eq(ev[at].type, types[t], "order %" PRId64 "'s event %d", id, t);
            /* The order as of the change: persisted, then its new state. */
            cr_assert_str_eq(ev[at].status, t == 0 ? "persisted" : status, "order %" PRId64, id);
        }
    }
    cr_assert_eq(nev, want_total, "no event without a change");
    cr_assert_eq(want_total, STOCK + 2 * (STOCK / 3) * 2 + (STOCK - 2 * (STOCK / 3)),
                 "1000 persisted, 334 paid, 333 cancelled and 333 expired, 666 returned");
    PQclear(res);

    /* The feed's own rules. */
    json_decref(get_json("/api/v1/events", NULL, 401));
    json_decref(get_json("/api/v1/events?after=x", READER, 400));
    json_decref(get_json("/api/v1/events?limit=1001", READER, 400));
    free(ev);
    free(ids);
    PQfinish(pg);
    harness_system_stop(&sys);
}
