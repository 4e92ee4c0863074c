/* worker_pg.h: the worker's PostgreSQL side: a connection fit for
 * committing batches, and the one idempotent statement that inserts a
 * batch (see worker_pg.c for why it cannot let an old round's order in). */
#ifndef SECKILL_WORKER_PG_H
#define SECKILL_WORKER_PG_H

#include <stdint.h>

#include <libpq-fe.h>

#include "config.h"
#include "worker_batch.h"

/* Connects to cfg->pg_conninfo with synchronous_commit on and the insert
 * prepared. Returns the connection (PQfinish() it) or NULL (logged). */
PGconn *worker_pg_connect(const config *cfg);

/* Inserts the orders of b (sorted) in one statement, its own transaction.
 * Returns the rows it added (duplicates, old rounds and unknown items add
 * none), or -1 (logged): then close the connection. */
int64_t worker_pg_insert(PGconn *pg, const worker_batch *b);

/* worker_pg_insert in two halves, so that the worker can work on Redis
 * while PostgreSQL inserts: worker_pg_send sends the statement and returns
 * at once (0, or -1 logged: then close the connection); worker_pg_finish
 * waits for its result and returns what worker_pg_insert would. Nothing
 * else may use the connection in between. */
int worker_pg_send(PGconn *pg, const worker_batch *b);
int64_t worker_pg_finish(PGconn *pg, const worker_batch *b);

#endif
