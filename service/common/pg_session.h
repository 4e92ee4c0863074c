/* pg_session.h: one thread's blocking PostgreSQL session, written once for
 * the server's pool threads (pool_session.h), the laboratory's (lab_ctx.h)
 * and the worker (worker_pg.h): connected when a statement needs it, made
 * again after it broke, with the thread's settings and prepared statements
 * made on every new connection, and every statement run and judged one way
 * (logged unless its failure is an answer, counted, the connection dropped
 * when it broke). Pacing the retries is the caller's (backoff.h): each call
 * on a broken session tries one connect. */
#ifndef SECKILL_PG_SESSION_H
#define SECKILL_PG_SESSION_H

#include <stdint.h>

#include <libpq-fe.h>

#include "config.h"
#include "metrics.h"

/* What a session is: how it logs, what it counts, what each new connection
 * gets. Every pointer must outlive the sessions made from it, except setup
 * and its strings, which pg_session_create copies. */
typedef struct pg_session_spec {
    const char *component; /* the log's name for the session's owner */
    metrics *metrics;      /* PostgreSQL errors are counted here; may be NULL */
    /* The SQLSTATE (or its class, "23") of a failure that is an answer for
     * the caller to give, not an error to log or count; NULL: none. */
    const char *quiet_state;
    /* Statements run on every new connection, NULL-terminated; may be NULL. */
    const char *const *setup;
    /* Statements prepared on every new connection: name, SQL, name, SQL,
     * ..., NULL; may be NULL. */
    const char *const *prepare;
} pg_session_spec;

/* The most setup statements a spec may name. */
#define PG_SESSION_SETUP_MAX 4

/* A new connection to cfg->pg_conninfo with spec's setup run and its
 * statements prepared. Returns it (PQfinish() it) or NULL (logged). */
PGconn *pg_session_connect(const config *cfg, const pg_session_spec *spec);

typedef struct pg_session pg_session;

/* Connects nothing yet. cfg must outlive the session. NULL on OOM or more
 * than PG_SESSION_SETUP_MAX setup statements. */
pg_session *pg_session_create(const config *cfg, const pg_session_spec *spec);
/* Closes the connection. NULL is a no-op. */
void pg_session_free(pg_session *s);

/* The connection, made when there is none or it broke. NULL (logged,
 * counted) when PostgreSQL does not answer. The caller may run statements on
 * it directly; pg_session_drop() after a failure that broke it. */
PGconn *pg_session_conn(pg_session *s);

/* Closes the connection: the next call makes a new one. */
void pg_session_drop(pg_session *s);

/* A parameterized statement (text parameters). Returns the result, which the
 * caller PQclear()s, when its status is want; else NULL: logged and counted
 * unless spec's quiet_state says it is an answer, the connection dropped
 * when it broke. *sqlstate (6 bytes; may be NULL) gets the failure's
 * SQLSTATE, "" when PostgreSQL gave none (no connection, a broken one). */
PGresult *pg_session_exec(pg_session *s, const char *sql, int n, const char *const *params,
                          ExecStatusType want, char *sqlstate);

/* A statement without parameters or rows (BEGIN, COMMIT). Returns 0 or -1. */
int pg_session_command(pg_session *s, const char *sql);

/* A statement whose one parameter, $1, is the integer id (an item's, an
 * order's, an endpoint's), run and judged as pg_session_exec. */
PGresult *pg_session_exec_id(pg_session *s, const char *sql, int64_t id, ExecStatusType want,
                             char *sqlstate);

/* The same on a connection outside a session (the worker's, the admin's):
 * PQexecParams's result, whatever its status; the caller judges it and
 * PQclear()s it. */
PGresult *pg_exec_id(PGconn *pg, const char *sql, int64_t id);

#endif
