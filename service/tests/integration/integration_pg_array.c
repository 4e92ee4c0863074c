/* integration_pg_array.c: the literals pg_array builds read back by the
 * run's PostgreSQL element for element: integers at their extremes, NULLs,
 * and text that must be quoted (empty, "NULL", braces, quotes, commas,
 * backslashes, white space) and text that needs not. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "pg_array.h"

static PGconn *pg;

static void setup(void)
{
    pg = harness_pg();
}

static void teardown(void)
{
    PQfinish(pg);
}

TestSuite(pg_array, .init = setup, .fini = teardown, .timeout = 60);

/* The elements of the literal as PostgreSQL reads it into type[]: one row
 * each, in order, NULL as NULL. The caller PQclear()s it. */
static PGresult *unnest(const pg_array *a, const char *sql)
{
    const char *p[] = {pg_array_text(a)};
    cr_assert_not_null(p[0]);
    PGresult *res = PQexecParams(pg, sql, 1, NULL, p, NULL, NULL, 0);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s: %s", p[0], PQresultErrorMessage(res));
    return res;
}

Test(pg_array, text_elements_come_back_from_postgresql_as_they_went)
{
    const char *texts[] = {"",     "NULL",      "null",      "a,b",        "{x}", "say \"hi\"",
                           "a\\b", "two words", "tab\there", "line\nnext", "won", "0a1b2c"};
    size_t n = sizeof(texts) / sizeof(texts[0]);
    pg_array a = {0};
    for (size_t i = 0; i < n; i++)
        pg_array_add_text(&a, texts[i]);
    pg_array_add_null(&a);
    PGresult *res = unnest(&a, "SELECT unnest($1::text[])");
    cr_assert_eq(PQntuples(res), (int)n + 1);
    for (size_t i = 0; i < n; i++) {
        cr_assert(!PQgetisnull(res, (int)i, 0), "element %zu is not NULL", i);
        cr_assert_str_eq(PQgetvalue(res, (int)i, 0), texts[i], "element %zu", i);
    }
    cr_assert(PQgetisnull(res, (int)n, 0), "the NULL element is SQL NULL");
    PQclear(res);
    pg_array_free(&a);
}

Test(pg_array, integers_and_nulls_come_back_from_postgresql_as_they_went)
{
    pg_array a = {0};
    pg_array_add_i64(&a, INT64_MIN);
    pg_array_add_null(&a);
    pg_array_add_i64(&a, INT64_MAX);
    pg_array_add_i64(&a, 0);
    PGresult *res = unnest(&a, "SELECT unnest($1::bigint[])");
    cr_assert_eq(PQntuples(res), 4);
    cr_assert_str_eq(PQgetvalue(res, 0, 0), "-9223372036854775808");
    cr_assert(PQgetisnull(res, 1, 0));
    cr_assert_str_eq(PQgetvalue(res, 2, 0), "9223372036854775807");
    cr_assert_str_eq(PQgetvalue(res, 3, 0), "0");
    PQclear(res);
    pg_array_free(&a);
}

Test(pg_array, an_empty_literal_is_an_empty_array)
{
    pg_array a = {0};
    PGresult *res = unnest(&a, "SELECT unnest($1::bigint[])");
    cr_assert_eq(PQntuples(res), 0);
    PQclear(res);
    pg_array_free(&a);
}
