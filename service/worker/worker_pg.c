/* worker_pg.c: the batch insert and the connection it runs on. */
#include "worker_pg.h"

#include <stdlib.h>

#include "backend.h"
#include "log.h"

#define COMPONENT "worker"
#define WORKER_STMT "worker_insert"

/* The whole batch in one statement. The implicit transaction of a single
 * statement is the batch's transaction: it commits when the call returns
 * success and leaves nothing behind when it fails, one round trip instead of
 * three (BEGIN, INSERT, COMMIT).
 *
 * The join on items drops orders of an item's previous round (an admin reset
 * deleted them and started a new round) and of deleted items. Without a lock
 * a reset could slip between our snapshot and our commit: the reset's UPDATE
 * (round + 1) and DELETE of the item's orders run in one transaction; if our
 * statement read the old round before that transaction committed, and the
 * DELETE ran before our rows were committed, the DELETE would miss them and
 * old-round rows would outlive the reset. FOR SHARE on the items rows closes
 * the gap both ways: if the reset holds the row, we wait for its commit and
 * READ COMMITTED re-reads the row, now in the new round, so nothing joins;
 * if we hold it first, the reset's UPDATE waits for our commit, and its
 * DELETE, a later statement with a later snapshot, sees and removes our rows.
 * (That relies on the reset updating the items row before deleting orders.)
 * Each item is locked once, in id order, so two workers never deadlock on
 * each other, and share locks never block each other. */
static const char insert_sql[] =
    "WITH o AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[],"
    "                                $5::bigint[]) AS o(id, item_id, user_id, round, created_ms)),"
    "     i AS (SELECT id, round FROM items WHERE id IN (SELECT item_id FROM o)"
    "           ORDER BY id FOR SHARE)"
    " INSERT INTO orders (id, item_id, user_id, round, created_at)"
    " SELECT o.id, o.item_id, o.user_id, o.round, to_timestamp(o.created_ms / 1000.0)"
    " FROM o JOIN i ON i.id = o.item_id AND i.round = o.round"
    " ON CONFLICT DO NOTHING";

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
        res = PQprepare(pg, WORKER_STMT, insert_sql, 0, NULL);
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
