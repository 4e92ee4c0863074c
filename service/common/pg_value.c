/* pg_value.c: a result's text fields read strictly (validate.h's grammar). */
#include "pg_value.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "validate.h"

int pg_value_i64(const PGresult *res, int row, int col, int64_t *out)
{
    if (!res || row < 0 || row >= PQntuples(res) || col < 0 || col >= PQnfields(res) ||
        PQgetisnull(res, row, col))
        return -1;
    const char *text = PQgetvalue(res, row, col);
    return validate_i64(text, (size_t)PQgetlength(res, row, col), out);
}

int pg_value_int(const PGresult *res, int row, int col, int *out)
{
    int64_t v;
    if (pg_value_i64(res, row, col, &v) < 0 || v < INT_MIN || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

int pg_value_bool(const PGresult *res, int row, int col, int *out)
{
    if (!res || row < 0 || row >= PQntuples(res) || col < 0 || col >= PQnfields(res) ||
        PQgetisnull(res, row, col))
        return -1;
    const char *text = PQgetvalue(res, row, col);
    if (strcmp(text, "t") != 0 && strcmp(text, "f") != 0)
        return -1;
    *out = text[0] == 't';
    return 0;
}

pg_row pg_row_at(const PGresult *res, int row)
{
    return (pg_row){res, row, -1, ""};
}

/* Notes col as the row's first bad field, when it is. */
static void bad(pg_row *r, int col)
{
    if (r->bad >= 0)
        return;
    r->bad = col;
    const char *name = r->res && col < PQnfields(r->res) ? PQfname(r->res, col) : NULL;
    snprintf(r->bad_name, sizeof(r->bad_name), "%s", name ? name : "none");
}

int64_t pg_row_i64(pg_row *r, int col)
{
    int64_t v = 0;
    if (pg_value_i64(r->res, r->row, col, &v) < 0) {
        bad(r, col);
        return 0;
    }
    return v;
}

int pg_row_int(pg_row *r, int col)
{
    int v = 0;
    if (pg_value_int(r->res, r->row, col, &v) < 0) {
        bad(r, col);
        return 0;
    }
    return v;
}

int pg_row_bool(pg_row *r, int col)
{
    int v = 0;
    if (pg_value_bool(r->res, r->row, col, &v) < 0) {
        bad(r, col);
        return 0;
    }
    return v;
}

int pg_row_check(const pg_row *r, const char *component, const char *what)
{
    if (r->bad < 0)
        return 0;
    log_msg(LOG_ERROR, component,
            "postgresql: %s: column %d (%s) of row %d is not what it should be", what, r->bad,
            r->bad_name, r->row);
    return -1;
}
