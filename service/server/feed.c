/* feed.c: an item's orders and the events' feed, read on the pool. Both
 * page by id upward (?after=), so a reader that keeps the last id it handled
 * reads on without missing or repeating anything: order ids never change,
 * and event ids are in commit order (sql/010_outbox.sql). */
#include "feed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "order_row.h"
#include "outbox.h"
#include "pool_session.h"
#include "validate.h"
#include "webhook_dead.h"

typedef struct feed_job {
    app *a;
    http_exchange *ex;
    route_id route;
    int64_t item_id;
    feed_query q;
} feed_job;

/* A whole number 0..max in s (NULL: def). 0, or -1 when it is not one. */
static int count_param(const char *s, int64_t min, int64_t max, int64_t def, int64_t *out)
{
    *out = def;
    if (!s)
        return 0;
    if (strcmp(s, "0") == 0 && min == 0) {
        *out = 0;
        return 0;
    }
    return validate_id(s, strlen(s), out) == 0 && *out >= min && *out <= max ? 0 : -1;
}

sk_status feed_parse(route_id route, const feed_params *p, feed_query *q, const char **why)
{
    int feed = route == ROUTE_EVENTS || route == ROUTE_WEBHOOK_DEAD;
    int64_t max = feed ? OUTBOX_PAGE_MAX : FEED_ORDERS_MAX;
    int64_t v;
    memset(q, 0, sizeof(*q));
    if (route == ROUTE_WEBHOOK_DEAD || route == ROUTE_WEBHOOK_REPLAY) {
        if (count_param(p->endpoint_id, 1, INT64_MAX, 0, &q->endpoint_id) < 0) {
            *why = "endpoint_id must be an endpoint's id (as the dead-letter lists it)";
            return SK_INVALID;
        }
    }
    if (count_param(p->after, 0, INT64_MAX, 0, &q->after) < 0) {
        *why = feed ? "after must be an event id (0: from the first)"
                    : "after must be an order id (0: from the first)";
        return SK_INVALID;
    }
    if (count_param(p->limit, 1, max, feed ? OUTBOX_PAGE_DEFAULT : FEED_ORDERS_DEFAULT, &v) < 0) {
        *why = "limit must be an integer from 1 to 1000";
        return SK_INVALID;
    }
    q->limit = (int)v;
    if (route != ROUTE_ITEM_ORDERS)
        return SK_OK;
    if (count_param(p->round, 1, INT64_MAX, 0, &q->round) < 0) {
        *why = "round must be a round number of the item (1, 2, ...)";
        return SK_INVALID;
    }
    if (p->status) {
        q->has_status = 1;
        if (order_state_named(p->status, &q->status) < 0 || q->status == ORDER_QUEUED) {
            *why = "status must be persisted, paid, cancelled or expired";
            return SK_INVALID;
        }
    }
    return SK_OK;
}

/* Whether the item exists: an empty page of an unknown item is a 404. */
static sk_status item_known(pool_session *s, int64_t item_id)
{
    PGresult *res;
    sk_status st = pool_session_pg_row(s, "SELECT 1 FROM items WHERE id = $1", item_id, &res);
    PQclear(res);
    return st;
}

/* The page of an item's orders as JSON into *body: {"orders":[...],
 * "next_after":"<the last id>" when the page is full, else null}. */
static sk_status item_orders(pool_session *s, int64_t item_id, const feed_query *q, char **body)
{
    char item[24], round[24], after[24], limit[12];
    snprintf(item, sizeof(item), "%" PRId64, item_id);
    snprintf(round, sizeof(round), "%" PRId64, q->round);
    snprintf(after, sizeof(after), "%" PRId64, q->after);
    snprintf(limit, sizeof(limit), "%d", q->limit);
    const char *p[] = {item, round, q->has_status ? order_state_name(q->status) : "", after, limit};
    PGresult *res = pool_session_pg(s,
                                    "SELECT " ORDER_ROW_COLUMNS " FROM orders WHERE item_id = $1"
                                    " AND ($2::bigint = 0 OR round = $2::bigint)"
                                    " AND ($3::text = '' OR status = $3::text)"
                                    " AND id > $4::bigint ORDER BY id LIMIT $5::int",
                                    5, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    int n = PQntuples(res);
    sk_status st = n > 0 ? SK_OK : item_known(s, item_id);
    char **values = calloc((size_t)n + 1, sizeof(*values));
    if (!values)
        st = SK_INTERNAL;
    int64_t now = clock_wall_ms();
    order_record r;
    for (int i = 0; st == SK_OK && i < n; i++) {
        if (order_row_read(res, i, &r, NULL, "feed") < 0 || !(values[i] = json_io_order(&r, now)))
            st = SK_INTERNAL;
    }
    char next[26] = "null";
    if (n == q->limit)
        snprintf(next, sizeof(next), "\"%" PRId64 "\"", r.o.id);
    if (st == SK_OK && !(*body = outbox_page_json("orders", values, (size_t)n, next)))
        st = SK_INTERNAL;
    for (int i = 0; values && i < n; i++)
        free(values[i]);
    free(values);
    PQclear(res);
    return st;
}

/* The feed's page after q->after as JSON into *body. */
static sk_status events_page(pool_session *s, const feed_query *q, char **body)
{
    char after[24], limit[12];
    snprintf(after, sizeof(after), "%" PRId64, q->after);
    snprintf(limit, sizeof(limit), "%d", q->limit);
    const char *p[] = {after, limit};
    PGresult *res = pool_session_pg(s, outbox_events_sql, 2, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    outbox_event *e = malloc((size_t)q->limit * sizeof(*e));
    int n = e ? outbox_events_read(res, e, q->limit) : -1;
    PQclear(res);
    *body = n >= 0 ? outbox_feed_json(e, (size_t)n) : NULL;
    free(e);
    return *body ? SK_OK : SK_INTERNAL;
}

static void run_feed(void *thread_ctx, void *arg)
{
    feed_job *j = arg;
    pool_session *s = thread_ctx;
    char *body = NULL;
    sk_status st = SK_BACKEND_DOWN;
    if (s && j->route == ROUTE_EVENTS)
        st = events_page(s, &j->q, &body);
    else if (s && j->route == ROUTE_ITEM_ORDERS)
        st = item_orders(s, j->item_id, &j->q, &body);
    else if (s && j->route == ROUTE_WEBHOOK_DEAD)
        st = webhook_dead_list(s, j->q.endpoint_id, j->q.after, j->q.limit, &body);
    else if (s)
        st = webhook_dead_replay(s, j->q.endpoint_id, &body);
    if (st == SK_OK)
        http_exchange_reply(j->ex, 200, body, strlen(body), NULL);
    else
        http_exchange_reply_error(j->ex, st, st == SK_NOT_FOUND ? "no such item" : NULL);
    free(body);
    free(j);
}

void feed_start(app *a, http_exchange *ex, const route_match *m)
{
    feed_job *j = calloc(1, sizeof(*j));
    const char *why = NULL;
    if (!j) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    feed_params p = {http_exchange_query(ex, "after"), http_exchange_query(ex, "limit"),
                     http_exchange_query(ex, "round"), http_exchange_query(ex, "status"),
                     http_exchange_query(ex, "endpoint_id")};
    sk_status st = feed_parse(m->route, &p, &j->q, &why);
    if (st != SK_OK) {
        free(j);
        http_exchange_reply_error(ex, st, why);
        return;
    }
    j->a = a;
    j->ex = ex;
    j->route = m->route;
    j->item_id = m->item_id;
    pool_submit_exchange(a->pool, ex, run_feed, j);
}
