/* webhook_dead.c: the dead-letter's list and replay, in PostgreSQL. */
#include "webhook_dead.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "outbox.h"

sk_status webhook_dead_list(store *s, int64_t endpoint_id, int64_t after, int limit, char **body)
{
    char ep[24], after_s[24], limit_s[12];
    snprintf(ep, sizeof(ep), "%" PRId64, endpoint_id);
    snprintf(after_s, sizeof(after_s), "%" PRId64, after);
    snprintf(limit_s, sizeof(limit_s), "%d", limit);
    const char *p[] = {ep, after_s, limit_s};
    /* A page holds whole events: the limit counts events, not rows. */
    PGresult *res = store_pg(
        s,
        "WITH ev AS (SELECT DISTINCT event_id FROM webhook_deliveries WHERE dead_at IS NOT NULL"
        "   AND event_id > $2::bigint AND ($1::bigint = 0 OR endpoint_id = $1::bigint)"
        "   ORDER BY event_id LIMIT $3::int)"
        " SELECT d.endpoint_id, w.url, d.event_id, e.type, d.order_id, d.attempts,"
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
    for (int i = 0; list && i < n; i++) {
        json_t *row = json_pack("{s:I, s:s, s:I, s:s, s:s, s:i, s:s, s:s}", "endpoint_id",
                                (json_int_t)strtoll(PQgetvalue(res, i, 0), NULL, 10), "url",
                                PQgetvalue(res, i, 1), "event_id",
                                (json_int_t)strtoll(PQgetvalue(res, i, 2), NULL, 10), "type",
                                PQgetvalue(res, i, 3), "order_id", PQgetvalue(res, i, 4),
                                "attempts", atoi(PQgetvalue(res, i, 5)), "last_error",
                                PQgetvalue(res, i, 6), "dead_at", PQgetvalue(res, i, 7));
        if (json_array_append_new(list, row) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    int full = n > 0 && strtoll(PQgetvalue(res, 0, 8), NULL, 10) == limit;
    json_t *next = full ? json_integer(strtoll(PQgetvalue(res, n - 1, 2), NULL, 10)) : json_null();
    PQclear(res);
    json_t *page = list ? json_pack("{s:o, s:o}", "dead", list, "next_after", next) : NULL;
    *body = page ? json_dumps(page, JSON_COMPACT) : NULL;
    json_decref(page);
    return *body ? SK_OK : SK_INTERNAL;
}

sk_status webhook_dead_replay(store *s, int64_t endpoint_id, char **body)
{
    char ep[24];
    snprintf(ep, sizeof(ep), "%" PRId64, endpoint_id);
    const char *p[] = {ep};
    /* One statement: the count and the wake-up go together (a NOTIFY is
     * sent at the commit). */
    PGresult *res = store_pg(
        s,
        "WITH r AS (UPDATE webhook_deliveries SET dead_at = NULL, attempts = 0, next_at = now(),"
        "   last_error = NULL WHERE dead_at IS NOT NULL"
        "   AND ($1::bigint = 0 OR endpoint_id = $1::bigint) RETURNING 1)"
        " SELECT (SELECT count(*) FROM r), pg_notify('" OUTBOX_CHANNEL "', '')",
        1, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    json_t *j =
        json_pack("{s:I}", "replayed", (json_int_t)strtoll(PQgetvalue(res, 0, 0), NULL, 10));
    PQclear(res);
    *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return *body ? SK_OK : SK_INTERNAL;
}
