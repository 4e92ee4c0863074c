/* unit_pg_value.c: a PostgreSQL field is read as a number or a boolean only
 * when it is one; a NULL or other text is an error, not 0. The results are
 * built with libpq's own PQmakeEmptyPGresult and PQsetvalue. */
#include <criterion/criterion.h>

#include <string.h>

#include "pg_value.h"

/* A result of one row whose columns hold values (NULL: SQL NULL). */
static PGresult *row_of(int n, const char *const *values)
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    cr_assert_not_null(res);
    PGresAttDesc attrs[8];
    char names[8][8];
    cr_assert(n <= 8);
    memset(attrs, 0, sizeof(attrs));
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "c%d", i);
        attrs[i].name = names[i];
        attrs[i].format = 0;
        attrs[i].typlen = -1;
        attrs[i].atttypmod = -1;
    }
    cr_assert(PQsetResultAttrs(res, n, attrs));
    for (int i = 0; i < n; i++)
        cr_assert(
            PQsetvalue(res, 0, i, (char *)values[i], values[i] ? (int)strlen(values[i]) : -1));
    return res;
}

Test(pg_value, a_number_is_read_and_anything_else_is_an_error)
{
    const char *v[] = {"42", "-7", NULL, "", "12abc", "9223372036854775808", "1.5"};
    PGresult *res = row_of(7, v);
    int64_t x = 99;
    cr_expect_eq(pg_value_i64(res, 0, 0, &x), 0);
    cr_expect_eq(x, 42);
    cr_expect_eq(pg_value_i64(res, 0, 1, &x), 0);
    cr_expect_eq(x, -7);
    for (int col = 2; col < 7; col++) {
        x = 99;
        cr_expect_eq(pg_value_i64(res, 0, col, &x), -1, "column %d is not a number", col);
        cr_expect_eq(x, 99, "column %d leaves the output alone", col);
    }
    cr_expect_eq(pg_value_i64(res, 1, 0, &x), -1, "no such row");
    cr_expect_eq(pg_value_i64(res, 0, 7, &x), -1, "no such column");
    cr_expect_eq(pg_value_i64(NULL, 0, 0, &x), -1, "no result");
    PQclear(res);
}

Test(pg_value, an_int_must_fit_and_a_boolean_is_t_or_f)
{
    const char *v[] = {"2147483647", "2147483648", "t", "f", "true", NULL};
    PGresult *res = row_of(6, v);
    int i = 0;
    cr_expect_eq(pg_value_int(res, 0, 0, &i), 0);
    cr_expect_eq(i, 2147483647);
    cr_expect_eq(pg_value_int(res, 0, 1, &i), -1, "past INT_MAX");
    int b = -1;
    cr_expect_eq(pg_value_bool(res, 0, 2, &b), 0);
    cr_expect_eq(b, 1);
    cr_expect_eq(pg_value_bool(res, 0, 3, &b), 0);
    cr_expect_eq(b, 0);
    cr_expect_eq(pg_value_bool(res, 0, 4, &b), -1, "libpq's text of a boolean is t or f");
    cr_expect_eq(pg_value_bool(res, 0, 5, &b), -1, "NULL is not false");
    PQclear(res);
}

Test(pg_value, a_row_remembers_its_first_bad_field)
{
    const char *v[] = {"1", "x", "t", NULL};
    PGresult *res = row_of(4, v);
    pg_row r = pg_row_at(res, 0);
    cr_expect_eq(pg_row_i64(&r, 0), 1);
    cr_expect_eq(pg_row_check(&r, "test", "a good prefix"), 0);
    cr_expect_eq(pg_row_i64(&r, 1), 0);
    cr_expect_eq(pg_row_bool(&r, 2), 1);
    cr_expect_eq(pg_row_int(&r, 3), 0);
    cr_expect_eq(r.bad, 1, "the first bad column is kept");
    cr_expect_str_eq(r.bad_name, "c1");
    PQclear(res);
    cr_expect_eq(pg_row_check(&r, "test", "a row with a bad field"), -1,
                 "checked after its result is cleared");
}

Test(pg_value, a_result_that_is_not_a_counting_command_has_no_rows_affected)
{
    int64_t n = 9;
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_COMMAND_OK);
    cr_assert_not_null(res);
    cr_expect_eq(pg_value_affected(res, &n), -1);
    cr_expect_eq(pg_value_affected(NULL, &n), -1);
    cr_expect_eq(n, 9);
    PQclear(res);
}
