/* worker_pg.c: the batch insert and the connection it runs on. */
#include "worker_pg.h"

#include <stdlib.h>

#include "backend.h"
#include "log.h"
#include "order_life.h"

#define COMPONENT "worker"
#define WORKER_STMT "worker_insert"

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
 * Redis that forgot its buyers can never have a unit persisted twice). */
PGconn *worker_pg_connect(const config *cfg)
{
    char err[512];
    PGconn *pg = backend_pg_connect(cfg, err, sizeof(err));
    if (!pg) {
        log_msg(LOG_WARN, COMPONENT, "%s", err);
        return NULL;
    }
    /* The batch leaves Redis right after its COMMIT, so the commit must be
     * on disk first, whatever the server's default: with synchronous_commit
     * off, a PostgreSQL crash loses the last commits the worker already
     * acknowledged (the chaos test of a PostgreSQL crash caught it). */
    PGresult *res = PQexec(pg, "SET synchronous_commit = on");
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        log_msg(LOG_WARN, COMPONENT, "postgresql: synchronous_commit: %s",
                PQresultErrorMessage(res));
    PQclear(res);
    if (ok) {
        res = PQprepare(pg, WORKER_STMT, order_insert_sql, 0, NULL);
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        if (!ok)
            log_msg(LOG_WARN, COMPONENT, "postgresql: preparing the insert: %s",
                    PQresultErrorMessage(res));
        PQclear(res);
    }
    if (!ok) {
        PQfinish(pg);
        return NULL;
    }
    log_msg(LOG_INFO, COMPONENT, "connected to postgresql");
    return pg;
}

int64_t worker_pg_insert(PGconn *pg, const worker_batch *b)
{
    const char *values[WORKER_BATCH_COLUMNS];
    for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
        values[c] = b->columns[c].text;
    PGresult *res = PQexecPrepared(pg, WORKER_STMT, WORKER_BATCH_COLUMNS, values, NULL, NULL, 0);
    int64_t inserted = -1;
    if (PQresultStatus(res) == PGRES_COMMAND_OK)
        inserted = strtoll(PQcmdTuples(res), NULL, 10);
    else
        log_msg(LOG_WARN, COMPONENT, "postgresql: inserting %zu orders: %s", b->norders,
                PQresultErrorMessage(res));
    PQclear(res);
    return inserted;
}
