/* order_row.h: an order's row in PostgreSQL (the orders table), stated once
 * for every module that reads or writes it: which columns hold the keys an
 * order names, the columns a SELECT names and their reader (the server's
 * order routes, the feed and the orders' events, which keep a row as of each
 * change: outbox.h), and the statement that inserts accepted orders.
 *
 * An order of a segmented item names the key ids (keys.h) of the segment
 * its units came from (segment_id) and of its buyer's home (home_id); an
 * order of an item of one segment names the item's own keys, written NULL
 * in PostgreSQL and 0 in C (order.h's segment_id and home_id, order_ref's
 * stock_key and home_key), and keys_of_order turns that 0 into the item. */
#ifndef SECKILL_ORDER_ROW_H
#define SECKILL_ORDER_ROW_H

#include <stdint.h>

#include <libpq-fe.h>

/* order.h's and order_life.h's; not included, so that this header does not
 * bring the name order into its includers (order_return.h's, whose tests
 * name variables so). */
struct order;
struct order_record;

/* The two key columns as C holds them: 0 for the item's own keys. */
#define ORDER_ROW_KEY_COLUMNS "coalesce(segment_id, 0), coalesce(home_id, 0)"

/* The key ids themselves, in SQL (keys_of_order's rule): the segment its
 * units came from and its buyer's home. */
#define ORDER_ROW_STOCK_KEY "coalesce(segment_id, item_id)"
#define ORDER_ROW_HOME_KEY "coalesce(home_id, item_id)"

/* An order row's columns, in order_row_read's order, for a SELECT over
 * orders or over a row of its type (jsonb_populate_record). */
#define ORDER_ROW_COLUMNS                                                                          \
    "id, item_id, user_id, round, (extract(epoch FROM created_at) * 1000)::bigint, quantity, "     \
    "first_unit, status, coalesce((extract(epoch FROM pay_by) * 1000)::bigint, 0), "               \
    "coalesce((extract(epoch FROM paid_at) * 1000)::bigint, 0), "                                  \
    "coalesce((extract(epoch FROM ended_at) * 1000)::bigint, 0), returned_at IS NOT NULL, "        \
    "coalesce(pay_by <= clock_timestamp(), false), " ORDER_ROW_KEY_COLUMNS ", "                    \
    "coalesce(round_over, false)"

/* How many they are: a query's own columns follow them. */
#define ORDER_ROW_NCOLUMNS 16

/* Reads row of res (selected with ORDER_ROW_COLUMNS first) into *r;
 * *overdue (may be NULL) says whether pay_by had passed, by the clock when
 * the row was read (a payment that waited for the row's lock is judged when
 * it got it, not when its transaction began). Returns 0, or -1 (logged for
 * component) when the row is not an order's. */
int order_row_read(const PGresult *res, int row, struct order_record *r, int *overdue,
                   const char *component);

/* The statement that persists accepted orders, a batch at a time: one
 * array parameter per field of order_insert_values, in its order
 * ($1..$ORDER_INSERT_PARAMS: bigint[] but quantity's int[], in their text
 * form "{1,2,3}"). The worker runs it for its batches (worker_pg.c); a server
 * runs it for one queued order it must settle now (orders.c: a cancellation
 * before the worker got to it). ON CONFLICT DO NOTHING: a repeat is harmless,
 * and units a buyer's round already holds are refused. An order's pay_by is
 * its acceptance plus its item's payment_timeout_s; an order of an item
 * that no longer exists is not inserted. */
extern const char order_insert_sql[];

/* order_insert_sql without ON CONFLICT: the whole statement fails
 * (unique_violation, SQLSTATE 23505) when one of its orders is already
 * persisted or holds units already held. For batches that hold none, which
 * is nearly all of them, it spares PostgreSQL the look into both unique
 * indexes before each row (the unique indexes still check each row as it
 * goes in); on 23505, order_insert_sql decides. */
extern const char order_insert_fresh_sql[];

/* The parameters of order_insert_sql and order_insert_fresh_sql. */
#define ORDER_INSERT_PARAMS 9

/* Writes o's fields into v in the order of the insert's parameters: id,
 * item_id, user_id, round, created_ms, quantity, first_unit, segment_id,
 * home_id. Every caller builds its arrays from this, so the statement and
 * its callers cannot disagree on the list. */
void order_insert_values(const struct order *o, int64_t v[ORDER_INSERT_PARAMS]);

/* The insert's parameters for the one order o: arrays of one element each,
 * written into text, pointed to by params. */
void order_insert_one(const struct order *o, char text[ORDER_INSERT_PARAMS][24],
                      const char *params[ORDER_INSERT_PARAMS]);

#endif
