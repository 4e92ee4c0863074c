/* pg_value.c: a result's text fields read strictly (validate.h's grammar). */
#include "pg_value.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "validate.h"

/* The text of field (row, col) of res, or NULL when there is no such
 * field or it is NULL. */
static const char *field(const PGresult *res, int row, int col)
{
    if (!res || row < 0 || row >= PQntuples(res) || col < 0 || col >= PQnfields(res) ||
        PQgetisnull(res, row, col))
        return NULL;
    return PQgetvalue(res, row, col);
}

int pg_value_i64(const PGresult *res, int row, int col, int64_t *out)
{
    const char *text = field(res, row, col);
    return text ? validate_i64(text, strlen(text), out) : -1;
}

int pg_value_int(const PGresult *res, int row, int col, int *out)
{
    int64_t v;
    if (pg_value_i64(res, row, col, &v) < 0 || v < INT_MIN || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

int pg_value_real(const PGresult *res, int row, int col, double *out)
{
    const char *text = field(res, row, col);
    return text ? validate_real(text, strlen(text), out) : -1;
}

int pg_value_bool(const PGresult *res, int row, int col, int *out)
{
    const char *text = field(res, row, col);
    if (!text || (strcmp(text, "t") != 0 && strcmp(text, "f") != 0))
        return -1;
    *out = text[0] == 't';
    return 0;
}

int pg_value_affected(const PGresult *res, int64_t *out)
{
    const char *text = res ? PQcmdTuples((PGresult *)res) : "";
    return validate_i64(text, strlen(text), out);
}

pg_row pg_row_at(const PGresult *res, int row)
{
    return (pg_row){res, row, -1, ""};
}

/* Notes col as the row's first bad field when rc says it failed (and
 * none failed before). Returns rc. */
static int noted(pg_row *r, int col, int rc)
{
    if (rc == 0 || r->bad >= 0)
        return rc;
    r->bad = col;
    const char *name = r->res && col < PQnfields(r->res) ? PQfname(r->res, col) : NULL;
    snprintf(r->bad_name, sizeof(r->bad_name), "%s", name ? name : "none");
    return rc;
}

/* pg_row_<type>: column col read by pg_value_<type>, 0 and noted when it is
 * not one. The four readers differ in their type alone. */
#define PG_ROW_READER(type, c_type)                                                                \
    c_type pg_row_##type(pg_row *r, int col)                                                       \
    {                                                                                              \
        c_type v = 0;                                                                              \
        return noted(r, col, pg_value_##type(r->res, r->row, col, &v)) == 0 ? v : 0;               \
    }

PG_ROW_READER(i64, int64_t)
PG_ROW_READER(real, double)
PG_ROW_READER(int, int)
PG_ROW_READER(bool, int)

int pg_row_check(const pg_row *r, const char *component, const char *what)
{
    if (r->bad < 0)
        return 0;
    log_msg(LOG_ERROR, component,
            "postgresql: %s: column %d (%s) of row %d is not what it should be", what, r->bad,
            r->bad_name, r->row);
    return -1;
}
