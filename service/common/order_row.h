/* order_row.h: an order's row of PostgreSQL read into an order_record: the
 * columns a SELECT names, and the reader of one row of its result. Shared by
 * the server's order routes and the orders' events, which keep a row as of
 * each change (outbox.h). */
#ifndef SECKILL_ORDER_ROW_H
#define SECKILL_ORDER_ROW_H

#include <libpq-fe.h>

#include "order_life.h"

/* An order row's columns, in order_row_read's order, for a SELECT over
 * orders or over a row of its type (jsonb_populate_record). */
#define ORDER_ROW_COLUMNS                                                                          \
    "id, item_id, user_id, round, (extract(epoch FROM created_at) * 1000)::bigint, quantity, "     \
    "first_unit, status, coalesce((extract(epoch FROM pay_by) * 1000)::bigint, 0), "               \
    "coalesce((extract(epoch FROM paid_at) * 1000)::bigint, 0), "                                  \
    "coalesce((extract(epoch FROM ended_at) * 1000)::bigint, 0), returned_at IS NOT NULL, "        \
    "coalesce(pay_by <= clock_timestamp(), false), coalesce(segment_id, 0), "                      \
    "coalesce(home_id, 0), coalesce(round_over, false)"

/* How many they are: a query's own columns follow them. */
#define ORDER_ROW_NCOLUMNS 16

/* Reads row of res (selected with ORDER_ROW_COLUMNS first) into *r;
 * *overdue (may be NULL) says whether pay_by had passed, by the clock when
 * the row was read. */
void order_row_read(const PGresult *res, int row, order_record *r, int *overdue);

/* The integer at (row, col) of res; 0 when it is not one. */
int64_t order_row_int(const PGresult *res, int row, int col);

#endif
