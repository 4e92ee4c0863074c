/* webhook_store.c: the deliveries' statements. */
#include "webhook_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_value.h"

#define COMPONENT "webhooks"
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* Runs sql with n parameters; the result when its status is want, else
 * NULL (logged). The caller PQclear()s. */
static PGresult *run(PGconn *pg, const char *sql, int n, const char *const *p, ExecStatusType want)
{
    PGresult *res = PQexecParams(pg, sql, n, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(res) == want)
        return res;
    log_msg(LOG_WARN, COMPONENT, "postgresql: %s", PQresultErrorMessage(res));
    PQclear(res);
    return NULL;
}

/* The first column of the first row as an integer; def without a row. */
static int64_t first_int(PGresult *res, int64_t def)
{
    int64_t v = def;
    if (res && PQntuples(res) > 0 && pg_value_i64(res, 0, 0, &v) < 0) {
        log_msg(LOG_WARN, COMPONENT, "postgresql: %s is not a number", PQfname(res, 0));
        v = def;
    }
    PQclear(res);
    return v;
}

int64_t webhook_store_endpoint(PGconn *pg, const char *url)
{
    const char *p[] = {url};
    return first_int(run(pg,
                         "INSERT INTO webhook_endpoints (url, after_event)"
                         " VALUES ($1, (SELECT coalesce(max(id), 0) FROM order_events))"
                         " ON CONFLICT (url) DO UPDATE SET url = EXCLUDED.url RETURNING id",
                         1, p, PGRES_TUPLES_OK),
                     -1);
}

int64_t webhook_store_fan_out(PGconn *pg, int64_t endpoint_id)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, endpoint_id);
    const char *p[] = {id};
    PGresult *res = run(pg,
                        "WITH ev AS (SELECT e.id, e.order_id FROM order_events e"
                        "   WHERE e.id > (SELECT after_event FROM webhook_endpoints WHERE id = $1)"
                        "   ORDER BY e.id LIMIT " TEXT(
                            WEBHOOK_FAN_OUT_MAX) "),"
                                                 " ins AS (INSERT INTO webhook_deliveries "
                                                 "(endpoint_id, event_id, order_id, dead_at,"
                                                 "   last_error)"
                                                 "   SELECT $1, ev.id, ev.order_id, CASE WHEN "
                                                 "q.dead THEN now() END,"
                                                 "     CASE WHEN q.dead THEN 'an earlier event of "
                                                 "its order is in the dead-letter' END"
                                                 "   FROM ev CROSS JOIN LATERAL (SELECT EXISTS "
                                                 "(SELECT 1 FROM webhook_deliveries p"
                                                 "     WHERE p.endpoint_id = $1 AND p.order_id = "
                                                 "ev.order_id AND p.dead_at IS NOT NULL)"
                                                 "     AS dead) q"
                                                 "   ON CONFLICT DO NOTHING)"
                                                 " UPDATE webhook_endpoints SET after_event = "
                                                 "(SELECT max(id) FROM ev)"
                                                 " WHERE id = $1 AND EXISTS (SELECT 1 FROM ev) "
                                                 "RETURNING (SELECT count(*) FROM ev)",
                        1, p, PGRES_TUPLES_OK);
    return res ? first_int(res, 0) : -1;
}

int webhook_store_due(PGconn *pg, int64_t endpoint_id, webhook_delivery *out, int cap)
{
    char limit[12], id[24];
    snprintf(limit, sizeof(limit), "%d", cap);
    snprintf(id, sizeof(id), "%" PRId64, endpoint_id);
    const char *p[] = {limit, id};
    PGresult *res = run(pg,
                        "SELECT " OUTBOX_EVENT_COLUMNS
                        ", endpoint_id, attempts FROM (SELECT " OUTBOX_EVENT_INNER
                        ", d.endpoint_id, d.attempts FROM webhook_deliveries d"
                        " JOIN order_events e ON e.id = d.event_id " OUTBOX_EVENT_ORDER
                        " WHERE d.endpoint_id = $2 AND d.dead_at IS NULL AND d.next_at <= now()"
                        /* The head of its order's chain. A correlated subquery, not NOT EXISTS: a
                         * planner without statistics yet (a new table) ran that as an anti join
                         * that read every delivery of the endpoint for each row. */
                        "   AND d.event_id = (SELECT min(w.event_id) FROM webhook_deliveries w"
                        "     WHERE w.endpoint_id = d.endpoint_id AND w.order_id = d.order_id)"
                        " ORDER BY d.event_id LIMIT $1::int) x ORDER BY ev_id",
                        2, p, PGRES_TUPLES_OK);
    if (!res)
        return -1;
    int n = PQntuples(res) < cap ? PQntuples(res) : cap;
    outbox_event *ev = malloc((size_t)(n > 0 ? n : 1) * sizeof(*ev));
    if (!ev) {
        PQclear(res);
        return -1;
    }
    if (outbox_events_read(res, ev, n) < 0)
        n = -1;
    for (int i = 0; i < n; i++) {
        pg_row f = pg_row_at(res, i);
        out[i].ev = ev[i];
        out[i].endpoint_id = pg_row_i64(&f, OUTBOX_EVENT_NCOLUMNS);
        out[i].attempts = pg_row_int(&f, OUTBOX_EVENT_NCOLUMNS + 1);
        if (pg_row_check(&f, COMPONENT, "a delivery") < 0)
            n = -1;
    }
    free(ev);
    PQclear(res);
    return n;
}

/* The delivery's endpoint and event as text parameters. */
typedef struct delivery_keys {
    char endpoint[24], event[24], order[24];
} delivery_keys;

static void keys_of(const webhook_delivery *d, delivery_keys *k)
{
    snprintf(k->endpoint, sizeof(k->endpoint), "%" PRId64, d->endpoint_id);
    snprintf(k->event, sizeof(k->event), "%" PRId64, d->ev.id);
    snprintf(k->order, sizeof(k->order), "%" PRId64, d->ev.order.o.id);
}

int webhook_store_delivered(PGconn *pg, const webhook_delivery *d)
{
    delivery_keys k;
    keys_of(d, &k);
    const char *p[] = {k.endpoint, k.event};
    PGresult *res =
        run(pg, "DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2", 2, p,
            PGRES_COMMAND_OK);
    PQclear(res);
    return res ? 0 : -1;
}

int webhook_store_failed(PGconn *pg, const webhook_delivery *d, const char *error, int64_t delay_ms,
                         int dead)
{
    delivery_keys k;
    keys_of(d, &k);
    char delay[24];
    snprintf(delay, sizeof(delay), "%" PRId64, delay_ms);
    const char *p[] = {k.endpoint, k.event, error, delay, dead ? "t" : "f", k.order};
    PGresult *res =
        run(pg,
            "UPDATE webhook_deliveries SET"
            "  attempts = attempts + CASE WHEN event_id = $2::bigint THEN 1 ELSE 0 END,"
            "  last_error = CASE WHEN event_id = $2::bigint THEN $3"
            "    ELSE 'an earlier event of its order is in the dead-letter' END,"
            "  next_at = now() + make_interval(secs => $4::bigint / 1000.0),"
            "  dead_at = CASE WHEN $5::boolean THEN now() END"
            " WHERE endpoint_id = $1 AND (event_id = $2::bigint OR ($5::boolean AND order_id = $6"
            "   AND event_id > $2::bigint AND dead_at IS NULL))",
            6, p, PGRES_COMMAND_OK);
    PQclear(res);
    return res ? 0 : -1;
}

double webhook_store_lag_s(PGconn *pg, int64_t endpoint_id)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, endpoint_id);
    const char *p[] = {id};
    /* The oldest event waiting (ids are in commit order): the first of its
     * deliveries, else the first not yet taken. */
    PGresult *res =
        run(pg,
            "SELECT (coalesce(extract(epoch FROM now() - (SELECT created_at FROM order_events"
            " WHERE id = coalesce((SELECT min(event_id) FROM webhook_deliveries"
            "   WHERE endpoint_id = $1 AND dead_at IS NULL),"
            " (SELECT min(id) FROM order_events WHERE id > (SELECT after_event"
            "   FROM webhook_endpoints WHERE id = $1))))), 0) * 1000)::bigint",
            1, p, PGRES_TUPLES_OK);
    int64_t lag_ms = -1;
    if (res && PQntuples(res) == 1 && pg_value_i64(res, 0, 0, &lag_ms) < 0)
        lag_ms = -1;
    double lag = lag_ms < 0 ? -1 : (double)lag_ms / 1000.0;
    PQclear(res);
    return lag;
}
