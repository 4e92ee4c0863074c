/* draw_sale.c: the shared draw of the end-to-end tests. */
#include "draw_sale.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "blast.h"
#include "clock.h"
#include "digest.h"
#include "draw_order.h"
#include "harness.h"
#include "rfc3339.h"
#include "room_order.h"
#include "sale.h"

int64_t draw_sale_create(int port, const char *token, int64_t stock, int64_t opens_in_ms,
                         int64_t closes_in_ms, const char *more)
{
    char view[4096], opens[RFC3339_MAX], closes[RFC3339_MAX];
    int64_t now = clock_wall_ms();
    cr_assert_gt(rfc3339_format(now + opens_in_ms, opens, sizeof(opens)), 0);
    cr_assert_gt(rfc3339_format(now + closes_in_ms, closes, sizeof(closes)), 0);
    return sale_create_item_view(port, token, view, sizeof(view), "draw", stock,
                                 "\"admission\":\"draw\",\"entries_open_at\":\"%s\","
                                 "\"entries_close_at\":\"%s\"%s%s",
                                 opens, closes, more[0] ? "," : "", more);
}

int draw_sale_call(int port, const char *method, const char *path, const char *token,
                   const char *body, json_t **out)
{
    static __thread char resp[1 << 20];
    int status = harness_http(port, method, path, token, body, resp, sizeof(resp));
    *out = json_loads(resp, 0, NULL);
    cr_assert_not_null(*out, "%s %s: %d %s", method, path, status, resp);
    return status;
}

int draw_sale_enter(int port, int64_t item, int64_t user, int quantity, json_t **out)
{
    char path[96], body[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/entries", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"quantity\":%d}", user, quantity);
    return draw_sale_call(port, "POST", path, NULL, body, out);
}

typedef struct entering {
    int64_t item, first_user;
    size_t n;
    int max_quantity;
} entering;

static size_t build_entry(void *ctx, size_t index, char *buf, size_t cap)
{
    const entering *e = ctx;
    int64_t user = e->first_user + (int64_t)(index % e->n);
    char body[96];
    int len = snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"quantity\":%d}", user,
                       1 + (int)(user % e->max_quantity));
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/entries HTTP/1.1\r\nHost: t\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     e->item, len, body);
    return n > 0 ? (size_t)n : 0;
}

size_t draw_sale_enter_many(int port, int64_t item, int64_t first_user, size_t n, int times,
                            int max_quantity, size_t connections)
{
    entering e = {item, first_user, n, max_quantity};
    blast_spec spec = {.port = port,
                       .connections = connections,
                       .requests = n * (size_t)times,
                       .timeout_ms = 60000,
                       .build = build_entry,
                       .ctx = &e};
    blast_result res;
    cr_assert_eq(blast_run(&spec, &res), 0, "entries: %s", res.errstr);
    cr_assert_eq(blast_count(&res, 201) + blast_count(&res, 200), n * (size_t)times,
                 "every entry answered 201 or 200: 201 %zu, 200 %zu, 409 %zu, 503 %zu",
                 blast_count(&res, 201), blast_count(&res, 200), blast_count(&res, 409),
                 blast_count(&res, 503));
    return blast_count(&res, 201);
}

void draw_sale_close_now(PGconn *pg, int64_t item)
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             "UPDATE items SET entries_close_at = now() WHERE id = %" PRId64
             " AND entries_open_at < now()",
             item);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQresultErrorMessage(res));
    cr_assert_str_eq(PQcmdTuples(res), "1", "the entries closed now");
    PQclear(res);
}

int draw_sale_draw(int port, const char *token, int64_t item, const char *beacon, json_t **out)
{
    char path[96], body[512];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/draw", item);
    if (beacon)
        snprintf(body, sizeof(body), "{\"beacon\":\"%s\"}", beacon);
    return draw_sale_call(port, "POST", path, token, beacon ? body : NULL, out);
}

int64_t draw_sale_num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "no integer %s", key);
    return json_integer_value(v);
}

static const char *text(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_string(v), "no string %s", key);
    return json_string_value(v);
}

/* Reads every page of the audit into *lines (the caller frees it); the last
 * page's object into *head (the caller decrefs). Returns the lines' count. */
static size_t read_audit(int port, int64_t item, int page, draw_entrant **lines, json_t **head)
{
    size_t n = 0, cap = 1024;
    int64_t after = 0;
    *lines = malloc(cap * sizeof(**lines));
    *head = NULL;
    for (;;) {
        char path[128];
        json_t *o;
        snprintf(path, sizeof(path),
                 "/api/v1/items/%" PRId64 "/draw/audit?after=%" PRId64 "&limit=%d", item, after,
                 page);
        cr_assert_eq(draw_sale_call(port, "GET", path, NULL, NULL, &o), 200);
        json_t *list = json_object_get(o, "entrants"), *line;
        size_t i;
        json_array_foreach(list, i, line)
        {
            if (n == cap)
                *lines = realloc(*lines, (cap *= 2) * sizeof(**lines));
            draw_entrant *e = &(*lines)[n];
            memset(e, 0, sizeof(*e));
            cr_assert_eq(draw_sale_num(line, "position"), (int64_t)n + 1, "positions 1, 2, ...");
            snprintf(e->e, sizeof(e->e), "%s", text(line, "entrant"));
            cr_assert_eq(digest_unhex(text(line, "ticket"), e->ticket, sizeof(e->ticket)), 0);
            e->quantity = (int)draw_sale_num(line, "quantity");
            cr_assert_eq(draw_outcome_named(text(line, "outcome"), &e->outcome), 0);
            n++;
        }
        json_t *next = json_object_get(o, "next_after");
        json_decref(*head);
        *head = o;
        if (json_is_null(next))
            return n;
        after = json_integer_value(next);
    }
}

static int by_e(const void *a, const void *b)
{
    return strcmp(((const draw_entrant *)a)->e, ((const draw_entrant *)b)->e);
}

/* The lines' entrants are the handles of the buyers, each once. */
static void assert_entrants(const draw_entrant *lines, size_t n, int64_t item, int64_t round,
                            int64_t first_user, size_t buyers)
{
    cr_assert_eq(n, buyers, "every buyer entered once: %zu lines for %zu buyers", n, buyers);
    draw_entrant *want = calloc(buyers, sizeof(*want)), *got = malloc(n * sizeof(*got));
    for (size_t i = 0; i < buyers; i++)
        cr_assert_eq(room_entrant(item, round, first_user + (int64_t)i, want[i].e), 0);
    memcpy(got, lines, n * sizeof(*got));
    qsort(want, buyers, sizeof(*want), by_e);
    qsort(got, n, sizeof(*got), by_e);
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(got[i].e, want[i].e, "the entrants are the buyers' handles, each once");
    free(want);
    free(got);
}

int64_t draw_sale_assert_audit(int port, int64_t item, int64_t first_user, size_t n, int page)
{
    draw_entrant *lines;
    json_t *head;
    size_t count = read_audit(port, item, page, &lines, &head);
    unsigned char k[32];
    char commitment[ROOM_HEX_LEN + 1];
    cr_assert_eq(digest_unhex(text(head, "secret"), k, sizeof(k)), 0);
    cr_assert_eq(room_commitment(k, commitment), 0);
    cr_assert_str_eq(text(head, "commitment"), commitment, "the commitment is SHA-256(K)");
    const char *beacon = text(head, "beacon");
    int64_t stock = draw_sale_num(head, "stock");
    assert_entrants(lines, count, item, draw_sale_num(head, "round"), first_user, n);
    draw_entrant *again = malloc((count + 1) * sizeof(*again));
    for (size_t i = 0; i < count; i++) {
        again[i] = lines[i];
        cr_assert_eq(draw_ticket(k, beacon, strlen(beacon), lines[i].e, again[i].ticket), 0);
        cr_assert_eq(memcmp(again[i].ticket, lines[i].ticket, 32), 0,
                     "line %zu: the published ticket is K's and the beacon's", i + 1);
    }
    draw_sort(again, count);
    int64_t units = draw_serve(again, count, stock);
    for (size_t i = 0; i < count; i++) {
        cr_assert_str_eq(again[i].e, lines[i].e, "line %zu: in ticket order", i + 1);
        cr_assert_eq(again[i].outcome, lines[i].outcome, "line %zu: the rule's outcome", i + 1);
    }
    free(again);
    free(lines);
    json_decref(head);
    return units;
}

void draw_sale_assert_orders(PGconn *pg, int64_t item, int64_t units)
{
    char sql[768];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM draw_entries d FULL JOIN orders o ON o.id = d.order_id "
             "WHERE (d.item_id = %" PRId64 " OR o.item_id = %" PRId64 ") AND "
             "NOT coalesce(d.outcome = 'won' AND o.user_id = d.user_id "
             "AND o.draw_position = d.position AND o.quantity = d.quantity "
             "AND o.granted_at IS NOT NULL AND o.status = 'persisted' AND o.round = d.round, false)"
             " AND (d.order_id IS NOT NULL OR o.id IS NOT NULL)",
             item, item);
    cr_assert_eq(harness_pg_int(pg, sql), 0,
                 "every winner's entry has its granted order, every order its winning entry");
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(sum(quantity), 0) FROM orders WHERE item_id = %" PRId64, item);
    cr_assert_eq(harness_pg_int(pg, sql), units, "the units won are the units ordered");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) - count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64,
             item);
    cr_assert_eq(harness_pg_int(pg, sql), 0, "no buyer twice");
}
