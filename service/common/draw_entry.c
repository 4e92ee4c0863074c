/* draw_entry.c: a draw entry read from PostgreSQL and written as JSON. */
#include "draw_entry.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pg_value.h"
#include "room_terms.h"

int draw_entry_read(const PGresult *res, int row, int at, draw_entry *e, const char *component)
{
    pg_row f = pg_row_at(res, row);
    memset(e, 0, sizeof(*e));
    e->item_id = pg_row_i64(&f, at);
    e->round = pg_row_i64(&f, at + 1);
    e->user_id = pg_row_i64(&f, at + 2);
    snprintf(e->entrant, sizeof(e->entrant), "%s", PQgetvalue(res, row, at + 3));
    e->quantity = pg_row_int(&f, at + 4);
    e->entered_ms = pg_row_i64(&f, at + 5);
    e->position = pg_row_i64(&f, at + 6);
    snprintf(e->outcome, sizeof(e->outcome), "%s", PQgetvalue(res, row, at + 7));
    e->order_id = pg_row_i64(&f, at + 8);
    return pg_row_check(&f, component, "an entry");
}

/* A JSON value of an entry: n, or null for 0. */
static json_t *or_null(int64_t n)
{
    return n ? json_integer(n) : json_null();
}

/* An order id as the API writes it (a 64-bit integer as a string), or null
 * for 0. */
static json_t *order_id_or_null(int64_t id)
{
    char text[24];
    snprintf(text, sizeof(text), "%" PRId64, id);
    return id ? json_string(text) : json_null();
}

json_t *draw_entry_json(const draw_entry *e)
{
    return json_pack("{s:I, s:I, s:s, s:i, s:o, s:o, s:o, s:o}", "item_id", (json_int_t)e->item_id,
                     "round", (json_int_t)e->round, "entrant", e->entrant, "quantity", e->quantity,
                     "entered_at", room_terms_time(e->entered_ms), "position", or_null(e->position),
                     "outcome", e->outcome[0] ? json_string(e->outcome) : json_null(), "order_id",
                     order_id_or_null(e->order_id));
}
