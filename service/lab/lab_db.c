/* lab_db.c: the PostgreSQL strategies. Every decrement and its lab_sales
 * row are one statement (a data-modifying WITH), so a sale is recorded if
 * and only if its unit was taken. */
#include "lab_db.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "pg_value.h"

/* $1 item: the read of the check (stock, version). */
static const char select_stock[] = "SELECT stock, version FROM lab_stock WHERE item_id = $1";
static const char select_stock_for_update[] =
    "SELECT stock, version FROM lab_stock WHERE item_id = $1 FOR UPDATE";

/* $1 item, $2 strategy, $3 the value read: each takes one unit and records
 * the sale; no row back means nothing was taken. */
static const char set_stock_to_seen_minus_one[] =
    "WITH u AS (UPDATE lab_stock SET stock = $3::bigint - 1 WHERE item_id = $1 RETURNING stock), "
    "s AS (INSERT INTO lab_sales (item_id, strategy) SELECT $1::bigint, $2::text FROM u) SELECT "
    "stock FROM u";
static const char decrement_if_left[] =
    "WITH u AS (UPDATE lab_stock SET stock = stock - 1 WHERE item_id = $1 AND stock > 0 RETURNING "
    "stock), "
    "s AS (INSERT INTO lab_sales (item_id, strategy) SELECT $1::bigint, $2::text FROM u) SELECT "
    "stock FROM u";
static const char decrement[] =
    "WITH u AS (UPDATE lab_stock SET stock = stock - 1 WHERE item_id = $1 RETURNING stock), "
    "s AS (INSERT INTO lab_sales (item_id, strategy) SELECT $1::bigint, $2::text FROM u) SELECT "
    "stock FROM u";
/* $3 here is the version read. */
static const char decrement_if_version[] =
    "WITH u AS (UPDATE lab_stock SET stock = stock - 1, version = version + 1 "
    "WHERE item_id = $1 AND version = $3::bigint RETURNING stock), "
    "s AS (INSERT INTO lab_sales (item_id, strategy) SELECT $1::bigint, $2::text FROM u) SELECT "
    "stock FROM u";

/* $1 item: its stock row, from the item's initial stock, when a new round
 * did not make it (an item created while the laboratory was not built in). */
static const char create_stock[] =
    "INSERT INTO lab_stock (item_id, stock) SELECT id, initial_stock FROM items WHERE id = $1 "
    "ON CONFLICT DO NOTHING";

/* What the take's $3 is. */
typedef enum take_value { TAKE_NOTHING, TAKE_SEEN, TAKE_VERSION } take_value;

/* What a DB counter carries between its read and its take. */
typedef struct db_arg {
    const char *read_sql; /* $1 item */
    const char *take_sql; /* $1 item, $2 strategy, $3 per `value` */
    take_value value;
    int64_t version; /* read by read_sql */
} db_arg;

static sk_status db_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    db_arg *a = arg;
    PGresult *res = lab_ctx_sql_id(c, a->read_sql, r->item, PGRES_TUPLES_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    int rows = PQntuples(res);
    pg_row f = pg_row_at(res, 0);
    if (rows > 0) {
        *value = pg_row_i64(&f, 0);
        a->version = pg_row_i64(&f, 1);
    }
    PQclear(res);
    if (rows == 0)
        return SK_NOT_FOUND;
    return pg_row_check(&f, "lab", "a lab stock row") == 0 ? SK_OK : SK_INTERNAL;
}

/* The stock row from the item's initial stock; none when there is no such
 * item (the read after it says so). arg is ignored. */
static sk_status db_make(lab_ctx *c, const lab_request *r, void *arg)
{
    (void)arg;
    PGresult *res = lab_ctx_sql_id(c, create_stock, r->item, PGRES_COMMAND_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    PQclear(res);
    return SK_OK;
}

/* SK_OK with *remaining when the statement took a unit, SK_BUSY when it
 * took none (a stale version, or nothing left). */
static sk_status db_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                         int64_t *remaining)
{
    db_arg *a = arg;
    char item_s[24], value_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, r->item);
    snprintf(value_s, sizeof(value_s), "%" PRId64, a->value == TAKE_VERSION ? a->version : seen);
    const char *params[] = {item_s, r->strategy, value_s};
    PGresult *res =
        lab_ctx_sql(c, a->take_sql, a->value == TAKE_NOTHING ? 2 : 3, params, PGRES_TUPLES_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    int rows = PQntuples(res);
    int bad = rows > 0 && pg_value_i64(res, 0, 0, remaining) < 0;
    PQclear(res);
    if (bad)
        return SK_INTERNAL;
    return rows > 0 ? SK_OK : SK_BUSY;
}

static const lab_counter db_counter = {db_read, db_take, db_make};

/* The shared read-modify-write counter: its arg is ignored. */
static sk_status stock_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    (void)arg;
    db_arg a = {select_stock, set_stock_to_seen_minus_one, TAKE_SEEN, 0};
    return db_read(c, r, &a, value);
}

static sk_status stock_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                            int64_t *remaining)
{
    (void)arg;
    db_arg a = {select_stock, set_stock_to_seen_minus_one, TAKE_SEEN, 0};
    return db_take(c, r, &a, seen, remaining);
}

const lab_counter lab_db_stock = {stock_read, stock_take, db_make};

/* Runs the skeleton inside BEGIN ... COMMIT (ROLLBACK unless it sold). */
static sk_status in_transaction(lab_ctx *c, const lab_request *r, db_arg *a, int64_t *remaining)
{
    if (lab_ctx_sql_command(c, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    sk_status st = lab_check_work_take(c, r, &db_counter, a, remaining);
    if (st == SK_OK && lab_ctx_sql_command(c, "COMMIT") < 0)
        return SK_BACKEND_DOWN;
    if (st != SK_OK)
        lab_ctx_sql_command(c, "ROLLBACK");
    return st;
}

sk_status lab_db_read_modify_write(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    db_arg a = {select_stock, set_stock_to_seen_minus_one, TAKE_SEEN, 0};
    return lab_check_work_take(c, r, &db_counter, &a, remaining);
}

sk_status lab_db_single_update(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    /* Check and decrement are one statement (document 003's "one SQL").
     * Business work, when asked for, follows it in the same transaction, so
     * the row stays locked while it runs. */
    db_arg a = {select_stock, decrement_if_left, TAKE_NOTHING, 0};
    int transaction = r->delay_ms > 0;
    if (transaction && lab_ctx_sql_command(c, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    sk_status st = db_take(c, r, &a, 0, remaining);
    if (st == SK_BUSY) {
        /* Nothing taken: sold out, or no such item. */
        int64_t stock;
        st = lab_counter_read(c, r, &db_counter, &a, &stock);
        if (st == SK_OK)
            st = SK_SOLD_OUT;
    }
    if (!transaction)
        return st;
    if (st != SK_OK) {
        lab_ctx_sql_command(c, "ROLLBACK");
        return st;
    }
    lab_work(r);
    return lab_ctx_sql_command(c, "COMMIT") == 0 ? SK_OK : SK_BACKEND_DOWN;
}

sk_status lab_db_for_update(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    db_arg a = {select_stock_for_update, decrement, TAKE_NOTHING, 0};
    return in_transaction(c, r, &a, remaining);
}

sk_status lab_db_optimistic(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    db_arg a = {select_stock, decrement_if_version, TAKE_VERSION, 0};
    return lab_retry_until_won(c, r, &db_counter, &a, remaining);
}

sk_status lab_db_advisory(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    if (lab_ctx_sql_command(c, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    /* The lock is a number, not a row: it guards the plain read-modify-write
     * that oversells without it, and ends with the transaction, so a
     * crashed holder cannot leave it behind. */
    PGresult *res =
        lab_ctx_sql_id(c, "SELECT pg_advisory_xact_lock($1::bigint)", r->item, PGRES_TUPLES_OK);
    sk_status st = SK_BACKEND_DOWN;
    if (res) {
        PQclear(res);
        st = lab_check_work_take(c, r, &lab_db_stock, NULL, remaining);
    }
    if (st == SK_OK)
        return lab_ctx_sql_command(c, "COMMIT") == 0 ? SK_OK : SK_BACKEND_DOWN;
    lab_ctx_sql_command(c, "ROLLBACK");
    return st;
}

sk_status lab_db_remaining(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    db_arg a = {select_stock, decrement, TAKE_NOTHING, 0};
    return lab_counter_read(c, r, &db_counter, &a, remaining);
}
