/* integration_pg_session.c: a thread's PostgreSQL session against the run's
 * PostgreSQL: every new connection gets its setup and its prepared
 * statements, a connection that broke is made again on the next call, and a
 * failure that is an answer leaves its SQLSTATE to the caller. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "harness.h"
#include "pg_session.h"
#include "pg_value.h"

static config cfg;

static void setup(void)
{
    harness_config(&cfg);
}

static void teardown(void)
{
    config_free(&cfg);
}

TestSuite(pg_session, .init = setup, .fini = teardown, .timeout = 60);

static const char *const session_setup[] = {"SET application_name = 'pg_session_test'", NULL};
static const char *const session_prepare[] = {"plus_one", "SELECT $1::bigint + 1", NULL};
static const pg_session_spec spec = {
    .component = "test", .quiet_state = "22", .setup = session_setup, .prepare = session_prepare};

/* The single number a statement of s answers. */
static int64_t number(pg_session *s, const char *sql)
{
    PGresult *res = pg_session_exec(s, sql, 0, NULL, PGRES_TUPLES_OK, NULL);
    cr_assert_not_null(res, "%s", sql);
    int64_t v = 0;
    cr_assert_eq(pg_value_i64(res, 0, 0, &v), 0, "%s: a number", sql);
    PQclear(res);
    return v;
}

/* A new session of spec on the run's PostgreSQL, connected: *pid (may be
 * NULL) gets the backend that serves it. */
static pg_session *session(int64_t *pid)
{
    pg_session *s = pg_session_create(&cfg, &spec);
    cr_assert_not_null(s);
    int64_t serving = number(s, "SELECT pg_backend_pid()");
    if (pid)
        *pid = serving;
    return s;
}

/* The session's application_name is the setup's, and its statement is
 * prepared. */
static void expect_set_up(pg_session *s)
{
    PGresult *res = pg_session_exec(s, "SHOW application_name", 0, NULL, PGRES_TUPLES_OK, NULL);
    cr_assert_not_null(res);
    cr_expect_str_eq(PQgetvalue(res, 0, 0), "pg_session_test");
    PQclear(res);
    const char *p[] = {"41"};
    res = PQexecPrepared(pg_session_conn(s), "plus_one", 1, p, NULL, NULL, 0);
    int64_t v = 0;
    cr_expect_eq(pg_value_i64(res, 0, 0, &v), 0, "%s", PQresultErrorMessage(res));
    cr_expect_eq(v, 42);
    PQclear(res);
}

Test(pg_session, a_new_connection_gets_its_setup_and_prepared_statements)
{
    pg_session *s = session(NULL);
    expect_set_up(s);
    pg_session_free(s);
}

Test(pg_session, a_broken_connection_is_made_again_with_its_setup)
{
    int64_t pid;
    pg_session *s = session(&pid);
    PGconn *admin = harness_pg();
    char sql[80];
    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%lld)", (long long)pid);
    PQclear(PQexec(admin, sql));
    PQfinish(admin);
    /* The first call after the break fails (PostgreSQL may still be
     * telling the client); the one after it runs on a new connection. */
    char state[6];
    PGresult *res = pg_session_exec(s, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, state);
    PQclear(res);
    int64_t again = number(s, "SELECT pg_backend_pid()");
    cr_expect_neq(again, pid, "a new backend serves the session");
    expect_set_up(s);
    pg_session_free(s);
}

Test(pg_session, an_answer_leaves_its_sqlstate_and_the_connection)
{
    int64_t pid;
    pg_session *s = session(&pid);
    char state[6] = "xxxxx";
    PGresult *res = pg_session_exec(s, "SELECT 1 / 0", 0, NULL, PGRES_TUPLES_OK, state);
    cr_expect_null(res);
    cr_expect_str_eq(state, "22012", "division_by_zero");
    cr_expect_eq(pg_session_command(s, "BEGIN"), 0);
    cr_expect_eq(pg_session_command(s, "COMMIT"), 0);
    cr_expect_eq(number(s, "SELECT pg_backend_pid()"), pid, "the same connection still serves");
    pg_session_free(s);
}

Test(pg_session, a_wrong_conninfo_gives_no_connection)
{
    char conninfo[] = "host=127.0.0.1 port=1 connect_timeout=2";
    config bad = cfg;
    bad.pg_conninfo = conninfo;
    pg_session *s = pg_session_create(&bad, &spec);
    cr_assert_not_null(s);
    char state[6] = "xxxxx";
    cr_expect_null(pg_session_conn(s));
    cr_expect_null(pg_session_exec(s, "SELECT 1", 0, NULL, PGRES_TUPLES_OK, state));
    cr_expect_str_eq(state, "", "no SQLSTATE without a server");
    pg_session_free(s);
}

/* The application_name of a connection made by backend_pg_connect with
 * conninfo. */
static void expect_name(const char *conninfo, const char *name)
{
    config c = cfg;
    c.pg_conninfo = (char *)conninfo;
    char err[256];
    PGconn *pg = backend_pg_connect(&c, err, sizeof(err));
    cr_assert_not_null(pg, "%s", err);
    PGresult *res = PQexec(pg, "SHOW application_name");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    cr_expect_str_eq(PQgetvalue(res, 0, 0), name, "%s", conninfo);
    PQclear(res);
    PQfinish(pg);
}

Test(pg_session, a_connection_names_the_program_unless_the_conninfo_names_another)
{
    expect_name(cfg.pg_conninfo, program_invocation_short_name);
    char named[1024];
    snprintf(named, sizeof(named), "%s application_name=the_shops_name", cfg.pg_conninfo);
    expect_name(named, "the_shops_name");
}

/* The number a one-id statement answered (its first field). */
static int64_t answered(PGresult *res)
{
    cr_assert_not_null(res);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQresultErrorMessage(res));
    int64_t v = 0;
    cr_assert_eq(pg_value_i64(res, 0, 0, &v), 0, "a number");
    PQclear(res);
    return v;
}

Test(pg_session, a_one_id_statement_gets_the_id_as_its_parameter_to_the_last_digit)
{
    pg_session *s = session(NULL);
    const int64_t ids[] = {42, 0, -7, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        int64_t got =
            answered(pg_session_exec_id(s, "SELECT $1::bigint", ids[i], PGRES_TUPLES_OK, NULL));
        cr_expect_eq(got, ids[i], "the session's statement got %lld", (long long)got);
        got = answered(pg_exec_id(pg_session_conn(s), "SELECT $1::bigint", ids[i]));
        cr_expect_eq(got, ids[i], "the bare connection's statement got %lld", (long long)got);
    }
    pg_session_free(s);
}

Test(pg_session, a_one_id_statement_is_judged_as_any_other)
{
    int64_t pid;
    pg_session *s = session(&pid);
    char state[6] = "xxxxx";
    cr_expect_null(pg_session_exec_id(s, "SELECT 1 / ($1::bigint - 7)", 7, PGRES_TUPLES_OK, state));
    cr_expect_str_eq(state, "22012", "division_by_zero");
    cr_expect_null(pg_session_exec_id(s, "SELECT $1::bigint", 7, PGRES_COMMAND_OK, state),
                   "rows are not the status asked for");
    /* The bare connection's result comes back as it is, for its caller to judge. */
    PGresult *res = pg_exec_id(pg_session_conn(s), "SELECT 1 / ($1::bigint - 7)", 7);
    cr_expect_eq(PQresultStatus(res), PGRES_FATAL_ERROR);
    cr_expect_str_eq(PQresultErrorField(res, PG_DIAG_SQLSTATE), "22012");
    PQclear(res);
    cr_expect_eq(number(s, "SELECT pg_backend_pid()"), pid, "the same connection still serves");
    pg_session_free(s);
}
