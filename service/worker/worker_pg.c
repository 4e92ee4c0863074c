/* worker_pg.c: the batch insert and the connection it runs on. */
#include "worker_pg.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "order_row.h"
#include "pg_session.h"
#include "pg_value.h"

#define COMPONENT "worker"
#define WORKER_STMT "worker_insert"
#define WORKER_STMT_FRESH "worker_insert_fresh"
#define SQLSTATE_UNIQUE_VIOLATION "23505"

/* The whole batch in one statement (order_insert_sql). The implicit
 * transaction of a single statement is the batch's transaction: it commits
 * when the call returns success and leaves nothing behind when it fails, one
 * round trip instead of three (BEGIN, INSERT, COMMIT).
 *
 * Every accepted order is kept, whatever its round: a reset starts a new
 * round and never deletes the orders of the old one, so an order of an older
 * round still on the queue is persisted under its own round. The join on
 * items drops only orders of items that no longer exist. ON CONFLICT DO
 * NOTHING makes a repeat harmless (the order id is the primary key, and a
 * server may have persisted a queued order to cancel it) and refuses units
 * of a buyer's round that an order already holds (orders_units_once: a
 * Redis that forgot its buyers can never have a unit persisted twice).
 *
 * A batch is first tried without ON CONFLICT (order_insert_fresh_sql): the
 * conflict check before each row was an eighth of the backend's time during a
 * drain, and only a repeat (a crash before an acknowledgement, an order a
 * server persisted to cancel it) or units already held can conflict. Such a
 * batch fails whole, leaving nothing behind, and goes again with ON CONFLICT
 * DO NOTHING: the same rows end up persisted either way. */
PGconn *worker_pg_connect(const config *cfg)
{
    /* The batch leaves Redis right after its COMMIT, so the commit must be
     * on disk first, whatever the server's default: with synchronous_commit
     * off, a PostgreSQL crash loses the last commits the worker already
     * acknowledged (the chaos test of a PostgreSQL crash caught it). */
    const char *setup[] = {"SET synchronous_commit = on", NULL};
    const char *prepare[] = {WORKER_STMT, order_insert_sql, WORKER_STMT_FRESH,
                             order_insert_fresh_sql, NULL};
    const pg_session_spec spec = {.component = COMPONENT, .setup = setup, .prepare = prepare};
    PGconn *pg = pg_session_connect(cfg, &spec);
    if (pg)
        log_msg(LOG_INFO, COMPONENT, "connected to postgresql");
    return pg;
}

static void batch_values(const worker_batch *b, const char **values)
{
    for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
        values[c] = pg_array_text(&b->columns[c]);
}

/* Judges the result of the batch's insert, without ON CONFLICT when fresh,
 * and frees it. Returns the rows inserted, -1 on an error, -2 on a unique
 * violation of the fresh one (logged at debug only). */
static int64_t judge(PGresult *res, int fresh, const worker_batch *b)
{
    int64_t inserted = -1;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (PQresultStatus(res) == PGRES_COMMAND_OK) {
        if (pg_value_affected(res, &inserted) < 0)
            log_msg(LOG_WARN, COMPONENT, "postgresql: the insert of %zu orders counted no rows",
                    b->norders);
    } else if (fresh && state && strcmp(state, SQLSTATE_UNIQUE_VIOLATION) == 0) {
        log_msg(LOG_DEBUG, COMPONENT, "a batch of %zu holds a repeat (%s): again with ON CONFLICT",
                b->norders, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
        inserted = -2;
    } else {
        log_msg(LOG_WARN, COMPONENT, "postgresql: inserting %zu orders: %s", b->norders,
                res ? PQresultErrorMessage(res) : "no result");
    }
    PQclear(res);
    return inserted;
}

/* The ON CONFLICT insert, blocking. */
static int64_t insert_repeats(PGconn *pg, const worker_batch *b)
{
    const char *values[WORKER_BATCH_COLUMNS];
    batch_values(b, values);
    return judge(PQexecPrepared(pg, WORKER_STMT, WORKER_BATCH_COLUMNS, values, NULL, NULL, 0), 0,
                 b);
}

int64_t worker_pg_insert(PGconn *pg, const worker_batch *b)
{
    return worker_pg_send(pg, b) < 0 ? -1 : worker_pg_finish(pg, b);
}

int worker_pg_send(PGconn *pg, const worker_batch *b)
{
    const char *values[WORKER_BATCH_COLUMNS];
    batch_values(b, values);
    if (PQsendQueryPrepared(pg, WORKER_STMT_FRESH, WORKER_BATCH_COLUMNS, values, NULL, NULL, 0)) {
        PQflush(pg); /* a blocking connection: sends it all */
        return 0;
    }
    log_msg(LOG_WARN, COMPONENT, "postgresql: sending %zu orders: %s", b->norders,
            PQerrorMessage(pg));
    return -1;
}

int64_t worker_pg_finish(PGconn *pg, const worker_batch *b)
{
    /* One statement, one result, then NULL: the connection is ready again. */
    PGresult *res = PQgetResult(pg);
    PGresult *extra;
    while ((extra = PQgetResult(pg)) != NULL)
        PQclear(extra);
    int64_t inserted = judge(res, 1, b);
    return inserted == -2 ? insert_repeats(pg, b) : inserted;
}
