/* sale.c: the shared sale of the end-to-end tests. */
#include "sale.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "keys.h"

static int64_t create(int port, const char *token, char *view, size_t cap, const char *name,
                      int64_t stock, const char *terms, va_list ap)
{
    char members[512], body[768];
    int n = vsnprintf(members, sizeof(members), terms, ap);
    cr_assert(n >= 0 && (size_t)n < sizeof(members), "create item: terms too long");
    n = snprintf(body, sizeof(body), "{\"name\":\"%s\",\"stock\":%" PRId64 "%s%s}", name, stock,
                 members[0] ? "," : "", members);
    cr_assert(n >= 0 && (size_t)n < sizeof(body), "create item: body too long");
    int status = harness_http(port, "POST", "/api/v1/items", token, body, view, cap);
    cr_assert_eq(status, 201, "create item %s: %d %s", body, status, view);
    int64_t id = 0;
    cr_assert_eq(sscanf(view, "{\"id\":%" SCNd64, &id), 1, "create item: %s", view);
    return id;
}

int64_t sale_create_item_view(int port, const char *token, char *view, size_t cap, const char *name,
                              int64_t stock, const char *terms, ...)
{
    va_list ap;
    va_start(ap, terms);
    int64_t id = create(port, token, view, cap, name, stock, terms, ap);
    va_end(ap);
    return id;
}

int64_t sale_create_item_with(int port, const char *token, const char *name, int64_t stock,
                              const char *terms, ...)
{
    char view[4096];
    va_list ap;
    va_start(ap, terms);
    int64_t id = create(port, token, view, sizeof(view), name, stock, terms, ap);
    va_end(ap);
    return id;
}

int64_t sale_create_item(int port, const char *token, const char *name, int64_t stock)
{
    return sale_create_item_with(port, token, name, stock, "%s", "");
}

int64_t sale_create_lab_item(int port, const char *token, const char *name, int64_t stock)
{
    return sale_create_item_with(port, token, name, stock, "\"lab\":true");
}

int64_t sale_order_id(const char *resp)
{
    const char *at = strstr(resp, "\"order_id\":\"");
    cr_assert_not_null(at, "no order_id in %s", resp);
    return strtoll(at + strlen("\"order_id\":\""), NULL, 10);
}

int64_t sale_item_number(int port, int64_t item, const char *field)
{
    char path[64], resp[2048], pattern[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    int status = harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp));
    snprintf(pattern, sizeof(pattern), "\"%s\":", field);
    const char *at = status == 200 ? strstr(resp, pattern) : NULL;
    if (!at) {
        fprintf(stderr, "item %" PRId64 " %s: %d %s\n", item, field, status, resp);
        return -1;
    }
    return strtoll(at + strlen(pattern), NULL, 10);
}

static size_t build_purchase(void *ctx, size_t index, char *buf, size_t cap)
{
    sale *s = ctx;
    char body[48];
    int blen = snprintf(body, sizeof(body), "{\"user_id\":%zu}", s->first_user + index);
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                     s->item, blen, body);
    return n > 0 ? (size_t)n : 0;
}

static void on_purchase(void *ctx, size_t index, int status, const char *body, size_t len)
{
    sale *s = ctx;
    (void)index;
    (void)len;
    const char *id = body ? strstr(body, "\"order_id\":\"") : NULL;
    if (status == 202 && id) {
        cr_assert_lt(s->naccepted, s->room, "more 202s than the sale has room for");
        s->accepted[s->naccepted++] = strtoll(id + 12, NULL, 10);
    } else if (status == 409 && body && strstr(body, "\"sold_out\"")) {
        s->sold_out++;
    } else if (status == 503 && body && strstr(body, "\"queue_full\"")) {
        s->queue_full++;
    } else if (status == 503) {
        s->unavailable++;
        if (id && strstr(body, "\"unconfirmed\"") && s->nunconfirmed < s->room)
            s->unconfirmed[s->nunconfirmed++] = strtoll(id + 12, NULL, 10);
    } else if (status != 0) {
        s->other++;
    }
}

void sale_init(sale *s, int port, int64_t item, size_t buyers, size_t connections,
               size_t first_user, size_t max_accepted)
{
    memset(s, 0, sizeof(*s));
    s->item = item;
    s->first_user = first_user;
    s->room = max_accepted;
    s->accepted = calloc(max_accepted ? max_accepted : 1, sizeof(int64_t));
    s->unconfirmed = calloc(max_accepted ? max_accepted : 1, sizeof(int64_t));
    cr_assert(s->accepted && s->unconfirmed);
    s->spec = (blast_spec){.port = port,
                           .connections = connections,
                           .requests = buyers,
                           .timeout_ms = 120000,
                           .build = build_purchase,
                           .on_response = on_purchase,
                           .ctx = s};
}

void sale_free(sale *s)
{
    free(s->accepted);
    free(s->unconfirmed);
    s->accepted = s->unconfirmed = NULL;
}

int sale_run(sale *s)
{
    return blast_run(&s->spec, &s->result);
}

static void *sale_thread(void *arg)
{
    sale_run(arg);
    return NULL;
}

void sale_start(sale *s)
{
    cr_assert_eq(pthread_create(&s->thread, NULL, sale_thread, s), 0);
}

void sale_join(sale *s)
{
    pthread_join(s->thread, NULL);
}

/* An integer field of the item's state hash; `fallback` when absent. */
static long long state_field(redisContext *c, const char *key, const char *field,
                             long long fallback)
{
    redisReply *r = redisCommand(c, "HGET %s %s", key, field);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : fallback;
    freeReplyObject(r);
    return v;
}

void sale_wait_sold(int64_t item, int64_t units, int timeout_ms)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisContext *c = harness_redis();
    int64_t deadline = clock_mono_ms() + timeout_ms;
    for (;;) {
        long long initial = state_field(c, state, "initial", 0);
        long long left = state_field(c, state, "stock", initial);
        if (initial - left >= units)
            break;
        cr_assert(clock_mono_ms() < deadline, "the sale did not get to %" PRId64 " sold", units);
        usleep(1000);
    }
    redisFree(c);
}

void sale_wait_drained(int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    for (;;) {
        redisContext *c = harness_redis();
        long long pending = harness_redis_sum(c, "HLEN", keys_pending);
        long long queue = harness_redis_sum(c, "LLEN", keys_queue);
        redisFree(c);
        if (pending == 0 && queue == 0)
            return;
        cr_assert(clock_mono_ms() < deadline, "not drained: %lld pending, %lld queued", pending,
                  queue);
        usleep(50 * 1000);
    }
}

void sale_assert_persisted(const sale *s, PGconn *pg)
{
    char sql[192];
    for (size_t i = 0; i < s->naccepted; i++) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE id = %" PRId64,
                 s->accepted[i]);
        cr_assert_eq(harness_pg_int(pg, sql), 1, "accepted order %" PRId64 " is not persisted once",
                     s->accepted[i]);
    }
    /* A cancelled or expired order holds nothing: its buyer may buy again. */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) - count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64
             " AND status IN ('persisted', 'paid')",
             s->item);
    cr_assert_eq(harness_pg_int(pg, sql), 0, "a buyer holds two units");
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int answered(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

void sale_assert_orders_were_answered(const sale *s, PGconn *pg)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT id FROM orders WHERE item_id = %" PRId64, s->item);
    PGresult *rows = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(rows), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    for (int i = 0; i < PQntuples(rows); i++) {
        int64_t id = strtoll(PQgetvalue(rows, i, 0), NULL, 10);
        cr_assert(answered(s->accepted, s->naccepted, id) ||
                      answered(s->unconfirmed, s->nunconfirmed, id),
                  "order %" PRId64 " is in PostgreSQL, its buyer heard neither 202 nor 503 "
                  "unconfirmed with its id",
                  id);
    }
    PQclear(rows);
}

void sale_assert_exactly_persisted(sale *s, PGconn *pg)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT id FROM orders WHERE item_id = %" PRId64 " ORDER BY id",
             s->item);
    PGresult *rows = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(rows), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    cr_assert_eq((size_t)PQntuples(rows), s->naccepted, "%d orders in PostgreSQL, %zu answered 202",
                 PQntuples(rows), s->naccepted);
    qsort(s->accepted, s->naccepted, sizeof(int64_t), cmp_id);
    for (size_t i = 0; i < s->naccepted; i++)
        cr_assert_eq(strtoll(PQgetvalue(rows, (int)i, 0), NULL, 10), s->accepted[i],
                     "the ids answered 202 and those in PostgreSQL differ at %zu", i);
    PQclear(rows);
    /* A cancelled or expired order holds nothing: its buyer may buy again. */
    snprintf(sql, sizeof(sql),
             "SELECT count(*) - count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64
             " AND status IN ('persisted', 'paid')",
             s->item);
    cr_assert_eq(harness_pg_int(pg, sql), 0, "a buyer holds two units");
}
