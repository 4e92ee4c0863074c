/* pg_session.c: connect, set up, prepare; run a statement and judge it. */
#include "pg_session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "log.h"

struct pg_session {
    const config *cfg;
    pg_session_spec spec;
    char *setup[PG_SESSION_SETUP_MAX + 1]; /* spec.setup points here */
    PGconn *pg;
};

/* Runs one statement of a new connection's setup (sql names a prepared
 * statement's text when name is not NULL). Returns 0, or -1 (logged). */
static int setup_one(PGconn *pg, const char *name, const char *sql, const char *component)
{
    PGresult *res = name ? PQprepare(pg, name, sql, 0, NULL) : PQexec(pg, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        log_msg(LOG_WARN, component, "postgresql: %s %s: %s", name ? "preparing" : "setting up",
                name ? name : sql, PQresultErrorMessage(res));
    PQclear(res);
    return ok ? 0 : -1;
}

PGconn *pg_session_connect(const config *cfg, const pg_session_spec *spec)
{
    char err[512];
    PGconn *pg = backend_pg_connect(cfg, err, sizeof(err));
    if (!pg) {
        log_msg(LOG_WARN, spec->component, "%s", err);
        return NULL;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && spec->setup && spec->setup[i]; i++)
        rc = setup_one(pg, NULL, spec->setup[i], spec->component);
    for (size_t i = 0; rc == 0 && spec->prepare && spec->prepare[i]; i += 2)
        rc = setup_one(pg, spec->prepare[i], spec->prepare[i + 1], spec->component);
    if (rc < 0) {
        PQfinish(pg);
        return NULL;
    }
    return pg;
}

pg_session *pg_session_create(const config *cfg, const pg_session_spec *spec)
{
    pg_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->spec = *spec;
    for (size_t i = 0; spec->setup && spec->setup[i]; i++)
        if (i == PG_SESSION_SETUP_MAX || !(s->setup[i] = strdup(spec->setup[i])))
            goto fail;
    s->spec.setup = (const char *const *)s->setup;
    return s;
fail:
    pg_session_free(s);
    return NULL;
}

void pg_session_free(pg_session *s)
{
    if (!s)
        return;
    PQfinish(s->pg);
    for (size_t i = 0; i < PG_SESSION_SETUP_MAX; i++)
        free(s->setup[i]);
    free(s);
}

/* A failure of PostgreSQL itself (not an answer): counted. */
static void count_error(pg_session *s)
{
    if (s->spec.metrics)
        metrics_backend_error(s->spec.metrics, METRICS_POSTGRESQL);
}

PGconn *pg_session_conn(pg_session *s)
{
    if (s->pg && PQstatus(s->pg) == CONNECTION_OK)
        return s->pg;
    pg_session_drop(s);
    s->pg = pg_session_connect(s->cfg, &s->spec);
    if (!s->pg)
        count_error(s);
    return s->pg;
}

void pg_session_drop(pg_session *s)
{
    PQfinish(s->pg);
    s->pg = NULL;
}

/* Judges res against want: returns it, or frees it and returns NULL as
 * pg_session_exec says. */
static PGresult *judge(pg_session *s, PGresult *res, ExecStatusType want, char *sqlstate)
{
    if (PQresultStatus(res) == want)
        return res;
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (sqlstate && state)
        snprintf(sqlstate, 6, "%s", state);
    const char *quiet = s->spec.quiet_state;
    if (!state || !quiet || strncmp(state, quiet, strlen(quiet)) != 0) {
        log_msg(LOG_WARN, s->spec.component, "postgresql: %s",
                res ? PQresultErrorMessage(res) : PQerrorMessage(s->pg));
        count_error(s);
    }
    PQclear(res);
    if (PQstatus(s->pg) != CONNECTION_OK)
        pg_session_drop(s);
    return NULL;
}

PGresult *pg_session_exec(pg_session *s, const char *sql, int n, const char *const *params,
                          ExecStatusType want, char *sqlstate)
{
    if (sqlstate)
        sqlstate[0] = '\0';
    if (!pg_session_conn(s))
        return NULL;
    return judge(s, PQexecParams(s->pg, sql, n, NULL, params, NULL, NULL, 0), want, sqlstate);
}

int pg_session_command(pg_session *s, const char *sql)
{
    PGresult *res = pg_session_exec(s, sql, 0, NULL, PGRES_COMMAND_OK, NULL);
    PQclear(res);
    return res ? 0 : -1;
}

/* id as a statement's text parameter, in buf (24 bytes). */
static const char *id_param(char *buf, int64_t id)
{
    snprintf(buf, 24, "%" PRId64, id);
    return buf;
}

PGresult *pg_exec_id(PGconn *pg, const char *sql, int64_t id)
{
    char id_s[24];
    const char *p[] = {id_param(id_s, id)};
    return PQexecParams(pg, sql, 1, NULL, p, NULL, NULL, 0);
}

PGresult *pg_session_exec_id(pg_session *s, const char *sql, int64_t id, ExecStatusType want,
                             char *sqlstate)
{
    char id_s[24];
    const char *p[] = {id_param(id_s, id)};
    return pg_session_exec(s, sql, 1, p, want, sqlstate);
}
