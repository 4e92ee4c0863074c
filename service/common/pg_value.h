/* pg_value.h: a field of a PostgreSQL result read as a number or a boolean,
 * checked: a NULL or a text that is not one is an error, never a 0 that
 * looks like data. A row is read field by field through a pg_row, whose
 * first bad field sticks, so that a reader checks once per row. */
#ifndef SECKILL_PG_VALUE_H
#define SECKILL_PG_VALUE_H

#include <stdint.h>

#include <libpq-fe.h>

/* Field (row, col) of res as a 64-bit integer (bigint, integer, or a
 * numeric without a fraction). Returns 0 with *out set, or -1 (NULL, out of
 * range, not an integer; *out untouched). */
int pg_value_i64(const PGresult *res, int row, int col, int64_t *out);

/* The same for an int (integer). */
int pg_value_int(const PGresult *res, int row, int col, int *out);

/* Field (row, col) as a real number (double precision). Returns 0 or -1. */
int pg_value_real(const PGresult *res, int row, int col, double *out);

/* Field (row, col) as a boolean ("t" or "f"). Returns 0 or -1. */
int pg_value_bool(const PGresult *res, int row, int col, int *out);

/* The rows a command (INSERT, UPDATE, DELETE) of res changed, from its
 * command status. Returns 0 with *out, or -1 (not a command that counts). */
int pg_value_affected(const PGresult *res, int64_t *out);

/* One row of a result, read field by field. bad is the first column that
 * was not what its reader asked for, -1 while there is none, and bad_name
 * its name, kept here so that the row can be checked after the result is
 * cleared. */
typedef struct pg_row {
    const PGresult *res;
    int row;
    int bad;
    char bad_name[32];
} pg_row;

/* A reader of row `row` of res, with no bad field yet. */
pg_row pg_row_at(const PGresult *res, int row);

/* Column col of the row, as pg_value_i64, _real, _int and _bool;
 * 0 when it is not one (r->bad then names the first such column). */
int64_t pg_row_i64(pg_row *r, int col);
double pg_row_real(pg_row *r, int col);
int pg_row_int(pg_row *r, int col);
int pg_row_bool(pg_row *r, int col);

/* Returns 0 when every field read was good, else -1, logged for component
 * with what the row is ("an order", "item 7"). Reads nothing of the result:
 * it may be cleared by then. */
int pg_row_check(const pg_row *r, const char *component, const char *what);

#endif
