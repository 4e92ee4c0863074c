/* webhook_dead.c: the dead-letter's list and replay, in PostgreSQL. */
#include "webhook_dead.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "outbox.h"
#include "pg_value.h"

sk_status webhook_dead_list(pool_session *s, int64_t endpoint_id, int64_t after, int limit,
                            char **body)
{
    char ep[24], after_s[24], limit_s[12];
    snprintf(ep, sizeof(ep), "%" PRId64, endpoint_id);
    snprintf(after_s, sizeof(after_s), "%" PRId64, after);
    snprintf(limit_s, sizeof(limit_s), "%d", limit);
    const char *p[] = {ep, after_s, limit_s};
    /* A page holds whole events: the limit counts events, not rows. */
    PGresult *res = pool_session_pg(
        s,
        "WITH ev AS (SELECT DISTINCT event_id FROM webhook_deliveries WHERE dead_at IS NOT NULL"
        "   AND event_id > $2::bigint AND ($1::bigint = 0 OR endpoint_id = $1::bigint)"
        "   ORDER BY event_id LIMIT $3::int)"
        /* An entry's event is keyed by the id reserved for its entrant's
         * order (sql/017), which is not an order: shown null, as the feed. */
        " SELECT d.endpoint_id, w.url, d.event_id, e.type,"
        "   CASE WHEN e.type NOT LIKE 'entry.%' THEN d.order_id::text END, d.attempts,"
        "   coalesce(d.last_error, ''), to_char(d.dead_at AT TIME ZONE 'UTC',"
        "   'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), (SELECT count(*) FROM ev)"
        " FROM webhook_deliveries d JOIN ev USING (event_id)"
        " JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN order_events e ON e.id = d.event_id"
        " WHERE d.dead_at IS NOT NULL AND ($1::bigint = 0 OR d.endpoint_id = $1::bigint)"
        " ORDER BY d.event_id, d.endpoint_id",
        3, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    json_t *list = json_array();
    int n = PQntuples(res);
    int64_t last_event = 0, events = 0;
    for (int i = 0; list && i < n; i++) {
        pg_row f = pg_row_at(res, i);
        int64_t endpoint = pg_row_i64(&f, 0);
        last_event = pg_row_i64(&f, 2);
        int attempts = pg_row_int(&f, 5);
        events = pg_row_i64(&f, 8);
        json_t *row =
            pg_row_check(&f, "webhooks", "a dead delivery") < 0
                ? NULL
                : json_pack("{s:I, s:s, s:I, s:s, s:s?, s:i, s:s, s:s}", "endpoint_id",
                            (json_int_t)endpoint, "url", PQgetvalue(res, i, 1), "event_id",
                            (json_int_t)last_event, "type", PQgetvalue(res, i, 3), "order_id",
                            PQgetisnull(res, i, 4) ? NULL : PQgetvalue(res, i, 4), "attempts",
                            attempts, "last_error", PQgetvalue(res, i, 6), "dead_at",
                            PQgetvalue(res, i, 7));
        if (json_array_append_new(list, row) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    json_t *next = n > 0 && events == limit ? json_integer(last_event) : json_null();
    PQclear(res);
    if (!list)
        json_decref(next);
    json_t *page = list ? json_pack("{s:o, s:o}", "dead", list, "next_after", next) : NULL;
    *body = page ? json_dumps(page, JSON_COMPACT) : NULL;
    json_decref(page);
    return *body ? SK_OK : SK_INTERNAL;
}

sk_status webhook_dead_replay(pool_session *s, int64_t endpoint_id, char **body)
{
    /* One statement: the count and the wake-up go together (a NOTIFY is
     * sent at the commit). */
    PGresult *res = pool_session_pg_id(
        s,
        "WITH r AS (UPDATE webhook_deliveries SET dead_at = NULL, attempts = 0, next_at = now(),"
        "   last_error = NULL WHERE dead_at IS NOT NULL"
        "   AND ($1::bigint = 0 OR endpoint_id = $1::bigint) RETURNING 1)"
        " SELECT (SELECT count(*) FROM r), pg_notify('" OUTBOX_CHANNEL "', '')",
        endpoint_id, PGRES_TUPLES_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    int64_t replayed = 0;
    json_t *j = pg_value_i64(res, 0, 0, &replayed) == 0
                    ? json_pack("{s:I}", "replayed", (json_int_t)replayed)
                    : NULL;
    PQclear(res);
    *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return *body ? SK_OK : SK_INTERNAL;
}
