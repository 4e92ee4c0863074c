/* integration_webhook_store.c: the deliverer's statements on the run's
 * PostgreSQL, in a session made as the deliverer makes its own
 * (webhook_store_setup, webhook_store_prepared): each answers, and each is
 * planned once, not at every call (PostgreSQL re-planned the page and due
 * queries at every call while they were merely prepared). */
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "pg_session.h"
#include "webhook_store.h"

static config cfg;

static void setup(void)
{
    harness_config(&cfg);
}

static void teardown(void)
{
    config_free(&cfg);
}

TestSuite(webhook_store, .init = setup, .fini = teardown, .timeout = 60);

/* More calls than PostgreSQL's five custom plans before it may choose a
 * generic one. */
#define CALLS 8

/* Each statement of a turn, run CALLS times as a turn runs it, is planned
 * generically every time, never for its parameters. */
Test(webhook_store, statements_planned_once)
{
    const pg_session_spec spec = {
        .component = "test", .setup = webhook_store_setup, .prepare = webhook_store_prepared};
    PGconn *pg = pg_session_connect(&cfg, &spec);
    cr_assert_not_null(pg, "the deliverer's statements prepare");
    int64_t ids[1] = {webhook_store_endpoint(pg, "http://127.0.0.1:9/integration-store")};
    cr_assert_gt(ids[0], 0);
    int64_t room[1] = {16}, cursor[1] = {0}, lag[1];
    static outbox_event page[10];
    static webhook_delivery due[16];
    uint32_t has_row[10];
    webhook_key done = {ids[0], 1}, busy[1] = {{0, 0}};
    for (int i = 0; i < CALLS; i++) {
        cr_assert_geq(webhook_store_page(pg, i, 10, ids, 1, page, has_row), 0);
        cr_assert_geq(webhook_store_due(pg, ids, room, 1, busy, 0, due, 16), 0);
        cr_assert_eq(webhook_store_move(pg, ids, cursor, 1), 0);
        cr_assert_eq(webhook_store_lags_ms(pg, ids, 1, lag), 0);
        cr_assert_eq(webhook_store_delivered(pg, &done, 1), 0);
    }
    PGresult *res =
        PQexec(pg, "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements"
                   " WHERE name LIKE 'webhook\\_%' ORDER BY name");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    cr_assert_eq(PQntuples(res), 5, "the five statements of a turn are prepared");
    for (int r = 0; r < PQntuples(res); r++) {
        cr_expect_str_eq(PQgetvalue(res, r, 2), "0", "%s: planned for its parameters",
                         PQgetvalue(res, r, 0));
        cr_expect_eq(atoi(PQgetvalue(res, r, 1)), CALLS, "%s: its one plan at every call",
                     PQgetvalue(res, r, 0));
    }
    PQclear(res);
    PQfinish(pg);
}
