/* outbox.c: the orders' events read from PostgreSQL and written as JSON. */
#include "outbox.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_io.h"
#include "order_row.h"
#include "pg_value.h"
#include "rfc3339.h"

/* The row an event kept goes back into the orders' row type, so the order
 * is read with the same columns (and so rendered the same way) as a live
 * one; a column a later migration adds is null in older events. */
const char outbox_events_sql[] = "SELECT " OUTBOX_EVENT_COLUMNS " FROM (SELECT " OUTBOX_EVENT_INNER
                                 " FROM order_events e " OUTBOX_EVENT_ORDER
                                 " WHERE e.id > $1::bigint ORDER BY e.id LIMIT $2::int) x"
                                 " ORDER BY ev_id";

int outbox_events_read(const PGresult *res, outbox_event *out, int cap)
{
    int rows = PQntuples(res);
    int n = rows < cap ? rows : cap;
    for (int r = 0; r < n; r++) {
        if (order_row_read(res, r, &out[r].order, NULL, "outbox") < 0)
            return -1;
        pg_row f = pg_row_at(res, r);
        out[r].id = pg_row_i64(&f, ORDER_ROW_NCOLUMNS);
        snprintf(out[r].type, sizeof(out[r].type), "%s",
                 PQgetvalue(res, r, ORDER_ROW_NCOLUMNS + 1));
        out[r].at_ms = pg_row_i64(&f, ORDER_ROW_NCOLUMNS + 2);
        if (pg_row_check(&f, "outbox", "an event") < 0)
            return -1;
    }
    return n;
}

char *outbox_event_json(const outbox_event *e)
{
    char when[RFC3339_MAX];
    if (rfc3339_format(e->at_ms, when, sizeof(when)) <= 0)
        return NULL;
    /* The order as it was shown at the event: its pay_in_ms counts from
     * then, so the text never changes. */
    char *shown = json_io_order(&e->order, e->at_ms);
    if (!shown)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        /* The type is one of the table's CHECK: nothing to escape. */
        fprintf(f, "{\"id\":%" PRId64 ",\"type\":\"%s\",\"created_at\":\"%s\",\"order\":%s}", e->id,
                e->type, when, shown);
        if (fclose(f) != 0) {
            free(text);
            text = NULL;
        }
    }
    free(shown);
    return text;
}

char *outbox_page_json(const char *key, char *const *values, size_t n, const char *next)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fprintf(f, "{\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", values[i]);
    fprintf(f, "],\"next_after\":%s}", next);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *outbox_feed_json(const outbox_event *e, size_t n)
{
    char **values = calloc(n + 1, sizeof(*values));
    int ok = values != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = (values[i] = outbox_event_json(&e[i])) != NULL;
    char next[24] = "null";
    if (n > 0)
        snprintf(next, sizeof(next), "%" PRId64, e[n - 1].id);
    char *text = ok ? outbox_page_json("events", values, n, next) : NULL;
    for (size_t i = 0; values && i < n; i++)
        free(values[i]);
    free(values);
    return text;
}
