/* outbox.c: the orders' (and draw entries') events read from PostgreSQL and
 * written as JSON. */
#include "outbox.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_io.h"
#include "order_row.h"
#include "pg_value.h"
#include "rfc3339.h"
#include "text_buf.h"

/* The row an event kept goes back into the orders' row type, so the order
 * is read with the same columns (and so rendered the same way) as a live
 * one; a column a later migration adds is null in older events. */
const char outbox_events_sql[] = "SELECT " OUTBOX_EVENT_COLUMNS " FROM (SELECT " OUTBOX_EVENT_INNER
                                 " FROM order_events e " OUTBOX_EVENT_ORDER
                                 " WHERE e.id > $1::bigint ORDER BY e.id LIMIT $2::int) x"
                                 " ORDER BY ev_id";

/* An entry.* event's entry (OUTBOX_ENTRY_COLUMNS from column at) into
 * ev->entry, and of its order only what identifies it: its key (the
 * column before, the id the draw reserved for the entrant's order), item,
 * round, buyer and quantity. 0, or -1 (logged). */
static int entry_read(const PGresult *res, int r, int at, outbox_event *ev)
{
    if (draw_entry_read(res, r, at, &ev->entry, "outbox") < 0)
        return -1;
    pg_row f = pg_row_at(res, r);
    memset(&ev->order, 0, sizeof(ev->order));
    ev->order.o.id = pg_row_i64(&f, at - 1);
    ev->order.o.item_id = ev->entry.item_id;
    ev->order.o.user_id = ev->entry.user_id;
    ev->order.o.round = ev->entry.round;
    ev->order.o.quantity = ev->entry.quantity;
    return pg_row_check(&f, "outbox", "an entry's event");
}

int outbox_events_read(const PGresult *res, outbox_event *out, int cap)
{
    int rows = PQntuples(res);
    int n = rows < cap ? rows : cap;
    for (int r = 0; r < n; r++) {
        const char *type = PQgetvalue(res, r, ORDER_ROW_NCOLUMNS + 1);
        out[r].is_entry = strncmp(type, "entry.", 6) == 0;
        if (out[r].is_entry ? entry_read(res, r, ORDER_ROW_NCOLUMNS + 4, &out[r]) < 0
                            : order_row_read(res, r, &out[r].order, NULL, "outbox") < 0)
            return -1;
        pg_row f = pg_row_at(res, r);
        out[r].id = pg_row_i64(&f, ORDER_ROW_NCOLUMNS);
        snprintf(out[r].type, sizeof(out[r].type), "%s", type);
        out[r].at_ms = pg_row_i64(&f, ORDER_ROW_NCOLUMNS + 2);
        if (pg_row_check(&f, "outbox", "an event") < 0)
            return -1;
    }
    return n;
}

/* The subject of an event as JSON text: its order as shown at the event
 * (its pay_in_ms counts from then, so the text never changes), or its
 * entry with its buyer. NULL when out of memory; the caller frees. */
static char *subject_json(const outbox_event *e)
{
    if (!e->is_entry)
        return json_io_order(&e->order, e->at_ms);
    /* The buyer's id as an order shows it: a decimal string. */
    char user[24];
    snprintf(user, sizeof(user), "%" PRId64, e->entry.user_id);
    json_t *o = draw_entry_json(&e->entry);
    char *text = NULL;
    if (o && json_object_set_new(o, "user_id", json_string(user)) == 0)
        text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

char *outbox_event_json(const outbox_event *e)
{
    char when[RFC3339_MAX];
    if (rfc3339_format(e->at_ms, when, sizeof(when)) <= 0)
        return NULL;
    char *shown = subject_json(e);
    if (!shown)
        return NULL;
    text_buf t = TEXT_BUF_INIT;
    /* The type is one of the table's CHECK: nothing to escape. */
    text_buf_printf(&t, "{\"id\":%" PRId64 ",\"type\":\"%s\",\"created_at\":\"%s\",\"%s\":%s}",
                    e->id, e->type, when, e->is_entry ? "entry" : "order", shown);
    free(shown);
    return text_buf_take(&t);
}

char *outbox_page_json(const char *key, char *const *values, size_t n, const char *next)
{
    text_buf t = TEXT_BUF_INIT;
    text_buf_printf(&t, "{\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        text_buf_printf(&t, "%s%s", i ? "," : "", values[i]);
    text_buf_printf(&t, "],\"next_after\":%s}", next);
    return text_buf_take(&t);
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
