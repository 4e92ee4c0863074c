/* integration_pool_session.c: a pool thread's one-id statements against the
 * run's PostgreSQL: the id reaches the statement as $1, and the row of an id
 * is found, not found, or PostgreSQL failed, each told apart. */
#include <stdint.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "pg_value.h"
#include "pool_session.h"

static config cfg;

static void setup(void)
{
    harness_config(&cfg);
}

static void teardown(void)
{
    config_free(&cfg);
}

TestSuite(pool_session, .init = setup, .fini = teardown, .timeout = 60);

/* The rows of ids 1 and 2 (as a table would hold them), the id's row
 * selected by $1. */
#define ROW_OF_ID                                                                                  \
    "SELECT v.name FROM (VALUES (1::bigint, 'one'), (2::bigint, 'two')) AS v(id, name) "           \
    "WHERE v.id = $1"

Test(pool_session, the_row_of_an_id_is_found_or_not)
{
    pool_session *s = pool_session_create(&cfg, NULL, NULL);
    cr_assert_not_null(s);
    PGresult *row = (PGresult *)&row;
    cr_expect_eq(pool_session_pg_row(s, ROW_OF_ID, 2, &row), SK_OK);
    cr_assert_not_null(row);
    cr_expect_eq(PQntuples(row), 1);
    cr_expect_str_eq(PQgetvalue(row, 0, 0), "two");
    PQclear(row);
    row = (PGresult *)&row;
    cr_expect_eq(pool_session_pg_row(s, ROW_OF_ID, 3, &row), SK_NOT_FOUND);
    cr_expect_null(row, "no result is left to the caller");
    pool_session_free(s);
}

Test(pool_session, a_failed_statement_is_a_backend_failure_not_a_missing_row)
{
    pool_session *s = pool_session_create(&cfg, NULL, NULL);
    cr_assert_not_null(s);
    PGresult *row = (PGresult *)&row;
    cr_expect_eq(pool_session_pg_row(s, "SELECT 1 / ($1::bigint - 7)", 7, &row), SK_BACKEND_DOWN);
    cr_expect_null(row);
    /* The session still serves after the failure. */
    cr_expect_eq(pool_session_pg_row(s, ROW_OF_ID, 1, &row), SK_OK);
    PQclear(row);
    pool_session_free(s);
}

Test(pool_session, without_postgresql_the_row_is_a_backend_failure)
{
    char conninfo[] = "host=127.0.0.1 port=1 connect_timeout=2";
    config bad = cfg;
    bad.pg_conninfo = conninfo;
    pool_session *s = pool_session_create(&bad, NULL, NULL);
    cr_assert_not_null(s);
    PGresult *row = (PGresult *)&row;
    cr_expect_eq(pool_session_pg_row(s, ROW_OF_ID, 1, &row), SK_BACKEND_DOWN);
    cr_expect_null(row);
    pool_session_free(s);
}

Test(pool_session, a_one_id_command_gets_the_id)
{
    pool_session *s = pool_session_create(&cfg, NULL, NULL);
    cr_assert_not_null(s);
    PGresult *res = pool_session_pg_id(s, "SELECT $1::bigint + 1", INT64_MAX - 1, PGRES_TUPLES_OK);
    cr_assert_not_null(res);
    int64_t v = 0;
    cr_expect_eq(pg_value_i64(res, 0, 0, &v), 0);
    cr_expect_eq(v, INT64_MAX);
    PQclear(res);
    cr_expect_null(pool_session_pg_id(s, "SELECT $1::bigint", 1, PGRES_COMMAND_OK),
                   "rows are not the status asked for");
    pool_session_free(s);
}
