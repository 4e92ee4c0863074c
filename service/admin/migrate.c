/* migrate.c: the schema's migrations, applied by seckill-admin migrate.
 *
 * A migration is a file sql/NNN_name.sql, never edited or renamed once
 * applied: a change of schema is a new file. Each one not yet applied runs
 * in its own transaction together with its row in schema_migrations, so a
 * file is either wholly applied and recorded or not at all, and a run that
 * dies half-way is finished by the next. There is no way down: a release's
 * binaries expect its schema or a later one, never an earlier.
 *
 * Two migrates at once (two hosts deployed together) would both find 007
 * missing and both run it; a session advisory lock makes the second wait
 * for the first, and then find nothing to do. PostgreSQL drops the lock
 * with the session, so a migrate that was killed leaves no lock behind. */
#include "migrate.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The advisory lock's key: "seckill" in ASCII. */
#define MIGRATE_LOCK_KEY "32480264398039148"

#ifndef SECKILL_SQL_FROM_BIN
#define SECKILL_SQL_FROM_BIN "../share/seckill/sql"
#endif

int migrate_is_name(const char *name)
{
    size_t len = strlen(name);
    if (len < 9 || len >= MIGRATE_NAME_MAX || strcmp(name + len - 4, ".sql") != 0)
        return 0;
    for (size_t i = 0; i < 3; i++)
        if (!isdigit((unsigned char)name[i]))
            return 0;
    if (name[3] != '_')
        return 0;
    for (size_t i = 4; i < len - 4; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_')
            return 0;
    return 1;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void migrate_default_dir(char *out, size_t outlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char installed[PATH_MAX + sizeof(SECKILL_SQL_FROM_BIN) + 1], real[PATH_MAX];
        snprintf(installed, sizeof(installed), "%s/%s", dirname(exe), SECKILL_SQL_FROM_BIN);
        if (is_dir(installed)) {
            snprintf(out, outlen, "%s", realpath(installed, real) ? real : installed);
            return;
        }
    }
    snprintf(out, outlen, "sql");
}

/* Runs one statement without parameters; 0, or -1 with err set. */
static int exec(PGconn *pg, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The whole of the file at path, NUL-terminated; the caller frees it. NULL
 * with err set. */
static char *read_file(const char *path, char *err, size_t errlen)
{
    errno = 0;
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0)
        text = malloc((size_t)len + 1);
    if (text && fread(text, 1, (size_t)len, f) == (size_t)len) {
        text[len] = '\0';
    } else {
        snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot be read");
        free(text);
        text = NULL;
    }
    if (f)
        fclose(f);
    return text;
}

/* Applies the file dir/name and records it as version, in one transaction. */
static int apply(PGconn *pg, const char *dir, const char *name, const char *version, char *err,
                 size_t errlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *sql = read_file(path, err, errlen);
    if (!sql)
        return -1;
    int rc = exec(pg, "begin", err, errlen);
    if (rc == 0 && exec(pg, sql, err, errlen) < 0) {
        char why[512];
        snprintf(why, sizeof(why), "%s", PQerrorMessage(pg));
        snprintf(err, errlen, "%s: %s(rolled back: nothing of it applied)", name, why);
        rc = -1;
    }
    if (rc == 0) {
        const char *params[] = {version};
        PGresult *r = PQexecParams(pg, "insert into schema_migrations (version) values ($1)", 1,
                                   NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
            rc = -1;
        }
        PQclear(r);
    }
    if (rc == 0)
        rc = exec(pg, "commit", err, errlen);
    else
        PQclear(PQexec(pg, "rollback"));
    free(sql);
    return rc;
}

static int select_migration(const struct dirent *e)
{
    return migrate_is_name(e->d_name);
}

/* 1 when version is among the rows of applied. */
static int is_applied(const PGresult *applied, const char *version)
{
    for (int i = 0; i < PQntuples(applied); i++)
        if (strcmp(PQgetvalue(applied, i, 0), version) == 0)
            return 1;
    return 0;
}

/* 1 when version is one of the n files. */
static int is_file(struct dirent **files, int n, const char *version)
{
    size_t len = strlen(version);
    for (int i = 0; i < n; i++)
        if (strncmp(files[i]->d_name, version, len) == 0 &&
            strcmp(files[i]->d_name + len, ".sql") == 0)
            return 1;
    return 0;
}

/* The steps under the lock: the table, what is applied, what is not yet. */
static int run_locked(PGconn *pg, const char *dir, struct dirent **files, int n, FILE *out,
                      char *err, size_t errlen)
{
    if (exec(pg,
             "create table if not exists schema_migrations ("
             "version text primary key, applied_at timestamptz not null default now())",
             err, errlen) < 0)
        return -1;
    PGresult *applied = PQexec(pg, "select version from schema_migrations order by version");
    if (PQresultStatus(applied) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
        PQclear(applied);
        return -1;
    }
    /* A version the folder lacks was applied by a newer seckill: this one's
     * binaries and files are older than the schema, and cannot say it is
     * up to date. */
    for (int i = 0; i < PQntuples(applied); i++) {
        const char *v = PQgetvalue(applied, i, 0);
        if (!is_file(files, n, v)) {
            snprintf(err, errlen,
                     "the database has migration %s, which %s lacks: a newer seckill migrated it "
                     "(migrations go forward only: run that seckill's seckill-admin migrate)",
                     v, dir);
            PQclear(applied);
            return -1;
        }
    }
    int count = 0;
    for (int i = 0; i < n; i++) {
        char version[MIGRATE_NAME_MAX];
        snprintf(version, sizeof(version), "%.*s", (int)(strlen(files[i]->d_name) - 4),
                 files[i]->d_name);
        if (is_applied(applied, version))
            continue;
        if (apply(pg, dir, files[i]->d_name, version, err, errlen) < 0) {
            PQclear(applied);
            return -1;
        }
        fprintf(out, "migrate: applied %s/%s\n", dir, files[i]->d_name);
        count++;
    }
    PQclear(applied);
    const char *last = files[n - 1]->d_name;
    fprintf(out, "migrate: schema version %.3s (%.*s), %s\n", last, (int)(strlen(last) - 4), last,
            count > 0 ? "migrated" : "up to date");
    return count;
}

int migrate_run(PGconn *pg, const char *dir, FILE *out, char *err, size_t errlen)
{
    struct dirent **files = NULL;
    int n = scandir(dir, &files, select_migration, alphasort);
    if (n < 0) {
        snprintf(err, errlen, "migrations_dir %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = -1;
    if (n == 0) {
        snprintf(err, errlen, "migrations_dir %s holds no migration (NNN_name.sql)", dir);
        goto done;
    }
    /* Notices (a table that already exists) are not news to an operator. */
    if (exec(pg, "set client_min_messages = warning", err, errlen) < 0)
        goto done;
    PGresult *r = PQexec(pg, "select pg_try_advisory_lock(" MIGRATE_LOCK_KEY ")");
    int locked = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';
    int failed = PQresultStatus(r) != PGRES_TUPLES_OK;
    PQclear(r);
    if (failed) {
        snprintf(err, errlen, "postgresql: %s", PQerrorMessage(pg));
        goto done;
    }
    if (!locked) {
        fprintf(out, "migrate: waiting for another migrate to finish\n");
        fflush(out);
        if (exec(pg, "select pg_advisory_lock(" MIGRATE_LOCK_KEY ")", err, errlen) < 0)
            goto done;
    }
    rc = run_locked(pg, dir, files, n, out, err, errlen);
    char ignored[256];
    exec(pg, "select pg_advisory_unlock(" MIGRATE_LOCK_KEY ")", ignored, sizeof(ignored));
done:
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}
