/* order_row.c: an order's row read from a result, the statement that inserts
 * orders and its parameters. */
#include "order_row.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "order.h"
#include "order_life.h"
#include "pg_value.h"

int order_row_read(const PGresult *res, int row, order_record *r, int *overdue,
                   const char *component)
{
    memset(r, 0, sizeof(*r));
    pg_row f = pg_row_at(res, row);
    r->o = (order){pg_row_i64(&f, 0), pg_row_i64(&f, 1),  pg_row_i64(&f, 2),
                   pg_row_i64(&f, 3), pg_row_i64(&f, 4),  pg_row_int(&f, 5),
                   pg_row_i64(&f, 6), pg_row_i64(&f, 13), pg_row_i64(&f, 14)};
    if (order_state_named(PQgetvalue(res, row, 7), &r->state) < 0)
        r->state = ORDER_PERSISTED;
    r->pay_by_ms = pg_row_i64(&f, 8);
    r->paid_ms = pg_row_i64(&f, 9);
    r->ended_ms = pg_row_i64(&f, 10);
    r->returned = pg_row_bool(&f, 11);
    int late = pg_row_bool(&f, 12);
    if (overdue)
        *overdue = late;
    r->round_over = pg_row_bool(&f, 15);
    return pg_row_check(&f, component, "an order");
}

/* $1..$9 are order_insert_values' fields, in its order. */
#define ORDER_INSERT                                                                               \
    "INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, first_unit, pay_by,"   \
    "                    segment_id, home_id)"                                                     \
    " SELECT o.id, o.item_id, o.user_id, o.round, to_timestamp(o.created_ms / 1000.0),"            \
    "        o.quantity, o.first_unit,"                                                            \
    "        CASE WHEN i.payment_timeout_s > 0 THEN to_timestamp(o.created_ms / 1000.0)"           \
    "             + make_interval(secs => i.payment_timeout_s) END,"                               \
    "        nullif(o.segment_id, 0), nullif(o.home_id, 0)"                                        \
    " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[],"           \
    "             $6::int[], $7::bigint[], $8::bigint[], $9::bigint[])"                            \
    "      AS o(id, item_id, user_id, round, created_ms, quantity, first_unit, segment_id,"        \
    "           home_id)"                                                                          \
    " JOIN items i ON i.id = o.item_id"

const char order_insert_sql[] = ORDER_INSERT " ON CONFLICT DO NOTHING";
const char order_insert_fresh_sql[] = ORDER_INSERT;

void order_insert_values(const order *o, int64_t v[ORDER_INSERT_PARAMS])
{
    const int64_t fields[ORDER_INSERT_PARAMS] = {o->id,         o->item_id,    o->user_id,
                                                 o->round,      o->created_ms, o->quantity,
                                                 o->first_unit, o->segment_id, o->home_id};
    memcpy(v, fields, sizeof(fields));
}

void order_insert_one(const order *o, char text[ORDER_INSERT_PARAMS][24],
                      const char *params[ORDER_INSERT_PARAMS])
{
    int64_t v[ORDER_INSERT_PARAMS];
    order_insert_values(o, v);
    for (int i = 0; i < ORDER_INSERT_PARAMS; i++) {
        snprintf(text[i], 24, "{%" PRId64 "}", v[i]);
        params[i] = text[i];
    }
}
