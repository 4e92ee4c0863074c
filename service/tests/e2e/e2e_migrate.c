/* e2e_migrate.c: seckill-admin migrate against the run's PostgreSQL, each
 * test on fresh databases of its own: every file applied once and the
 * version said, again and nothing applied, the same schema as the files
 * applied by psql one by one, two at once, a failing file rolled back, a
 * database ahead of the folder refused. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "config.h"
#include "harness.h"

#define SQL_DIR SECKILL_SOURCE_DIR "/sql"

static char out[1 << 16];

/* The databases a test made, dropped by .fini. */
static char made[4][64];
static int nmade;

/* Runs sql on the run's database; aborts the test on error. */
static void pg_exec(const char *sql)
{
    PGconn *pg = harness_pg();
    PQclear(PQexec(pg, "set client_min_messages = warning"));
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(pg));
    PQclear(r);
    PQfinish(pg);
}

/* A new empty database named after the test process and tag; its conninfo
 * (the run's, with dbname replaced) in conninfo. */
static void fresh_database(const char *tag, char *conninfo, size_t cap)
{
    cr_assert_lt(nmade, 4);
    char *name = made[nmade++];
    snprintf(name, sizeof(made[0]), "seckill_migrate_%d_%s", (int)getpid(), tag);
    char sql[256];
    snprintf(sql, sizeof(sql), "drop database if exists %s", name);
    pg_exec(sql);
    snprintf(sql, sizeof(sql), "create database %s", name);
    pg_exec(sql);
    config cfg;
    harness_config(&cfg);
    /* A keyword given twice in a conninfo: libpq takes the last. */
    snprintf(conninfo, cap, "%s dbname=%s", cfg.pg_conninfo, name);
    config_free(&cfg);
}

static void drop_databases(void)
{
    for (int i = 0; i < nmade; i++) {
        char sql[sizeof(made) + 32];
        snprintf(sql, sizeof(sql), "drop database if exists %s", made[i]);
        PGconn *pg = harness_pg();
        PQclear(PQexec(pg, "set client_min_messages = warning"));
        PQclear(PQexec(pg, sql));
        PQfinish(pg);
    }
    nmade = 0;
}

TestSuite(migrate, .fini = drop_databases, .timeout = 120);

/* Runs a shell command; its output (both streams) in out; its exit code. */
static int run(const char *cmd)
{
    char full[4096];
    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* seckill-admin migrate on conninfo with the migrations of dir. */
static int migrate(const char *conninfo, const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' migrate --pg-conninfo '%s' --migrations-dir '%s'",
             SECKILL_ADMIN_BIN, conninfo, dir);
    return run(cmd);
}

/* Lines of text that hold needle. */
static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int is_migration(const struct dirent *e)
{
    return strlen(e->d_name) > 8 && strcmp(e->d_name + strlen(e->d_name) - 4, ".sql") == 0 &&
           e->d_name[3] == '_';
}

/* The migrations of sql/, and the version line migrate ends with once all
 * are applied ("schema version 006 (006_segments)"). */
static int migrations(char *version_line, size_t cap)
{
    struct dirent **files;
    int n = scandir(SQL_DIR, &files, is_migration, alphasort);
    cr_assert_gt(n, 0);
    const char *last = files[n - 1]->d_name;
    snprintf(version_line, cap, "schema version %.3s (%.*s)", last, (int)(strlen(last) - 4), last);
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return n;
}

Test(migrate, a_fresh_database_gets_every_file_once_and_a_second_run_applies_none)
{
    char conninfo[512], version[256];
    int n = migrations(version, sizeof(version));
    fresh_database("twice", conninfo, sizeof(conninfo));

    cr_assert_eq(migrate(conninfo, SQL_DIR), 0, "%s", out);
    cr_expect_eq(count(out, "migrate: applied "), n, "%s", out);
    cr_expect(strstr(out, version) && strstr(out, "migrated"), "the version is said: %s", out);

    cr_assert_eq(migrate(conninfo, SQL_DIR), 0, "%s", out);
    cr_expect_eq(count(out, "migrate: applied "), 0, "%s", out);
    cr_expect(strstr(out, version) && strstr(out, "up to date"), "%s", out);

    PGconn *pg = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(pg), CONNECTION_OK, "%s", PQerrorMessage(pg));
    cr_expect_eq(harness_pg_int(pg, "select count(*) from schema_migrations"), n);
    cr_expect_eq(harness_pg_int(pg, "select count(*) from items"), 0, "the tables are there");
    PQfinish(pg);
}

Test(migrate, the_schema_is_the_one_psql_makes_of_the_files_one_by_one)
{
    char ours[512], theirs[512], version[256], cmd[8192];
    migrations(version, sizeof(version));
    fresh_database("ours", ours, sizeof(ours));
    fresh_database("psql", theirs, sizeof(theirs));
    cr_assert_eq(migrate(ours, SQL_DIR), 0, "%s", out);
    /* As scripts/migrate.sh applied them before seckill-admin did: each
     * file by psql in one transaction. */
    snprintf(cmd, sizeof(cmd),
             "for f in '%s'/[0-9][0-9][0-9]_*.sql; do PGOPTIONS='-c client_min_messages=warning' "
             "psql '%s' -X -q -v ON_ERROR_STOP=1 --single-transaction -f \"$f\" || exit 1; done",
             SQL_DIR, theirs);
    cr_assert_eq(run(cmd), 0, "%s", out);

    char dump_ours[600], dump_theirs[600];
    snprintf(dump_ours, sizeof(dump_ours), "%s", harness_path("migrate-ours.sql"));
    snprintf(dump_theirs, sizeof(dump_theirs), "%s", harness_path("migrate-psql.sql"));
    /* Without the \restrict lines: a random key each dump. */
    const char *dump = "pg_dump --schema-only --no-owner -T schema_migrations -d '%s' -f '%s.raw' "
                       "&& grep -Ev '^.(un)?restrict ' '%s.raw' > '%s'";
    char one[3000], two[3000];
    snprintf(one, sizeof(one), dump, ours, dump_ours, dump_ours, dump_ours);
    snprintf(two, sizeof(two), dump, theirs, dump_theirs, dump_theirs, dump_theirs);
    snprintf(cmd, sizeof(cmd), "%s && %s && diff -u '%s' '%s'", one, two, dump_theirs, dump_ours);
    cr_expect_eq(run(cmd), 0, "the schemas differ:\n%s", out);
    struct stat st;
    cr_expect(stat(dump_ours, &st) == 0 && st.st_size > 1000, "pg_dump dumped a schema");
}

Test(migrate, two_at_once_on_a_fresh_database_apply_each_file_once)
{
    char conninfo[512], version[256], cmd[4096];
    int n = migrations(version, sizeof(version));
    fresh_database("together", conninfo, sizeof(conninfo));
    const char *one = "'%s' migrate --pg-conninfo '%s' --migrations-dir '%s'";
    char a[1024];
    snprintf(a, sizeof(a), one, SECKILL_ADMIN_BIN, conninfo, SQL_DIR);
    snprintf(cmd, sizeof(cmd), "(%s > '%s' 2>&1 & %s; rc=$?; wait $! && exit $rc) && cat '%s'", a,
             harness_path("migrate-first.out"), a, harness_path("migrate-first.out"));
    cr_assert_eq(run(cmd), 0, "both succeed: %s", out);
    cr_expect_eq(count(out, "migrate: applied "), n, "each file once between them: %s", out);
    cr_expect_eq(count(out, version), 2, "both say the version: %s", out);
}

/* A folder under the run's with copies of the first `first` migrations of
 * sql/ and, when extra is not NULL, a file 999_extra.sql holding it. */
static void folder_of(const char *name, int first, const char *extra, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s", harness_path(name));
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "rm -rf '%s' && mkdir -p '%s' && ls '%s'/[0-9]*.sql | head -n %d | "
             "xargs -I{} cp {} '%s'/",
             dir, dir, SQL_DIR, first, dir);
    cr_assert_eq(run(cmd), 0, "%s", out);
    if (extra) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/999_extra.sql", dir);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(extra, f);
        fclose(f);
    }
}

Test(migrate, a_failing_file_is_rolled_back_whole_and_named)
{
    char conninfo[512], version[256], dir[1024];
    int n = migrations(version, sizeof(version));
    fresh_database("broken", conninfo, sizeof(conninfo));
    folder_of("migrate-broken", n, "create table half_done (a int);\nselect no_such_function();\n",
              dir, sizeof(dir));

    cr_expect_eq(migrate(conninfo, dir), 1, "%s", out);
    cr_expect(strstr(out, "999_extra.sql") && strstr(out, "no_such_function"), "%s", out);
    cr_expect(strstr(out, "rolled back"), "%s", out);
    PGconn *pg = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(pg), CONNECTION_OK, "%s", PQerrorMessage(pg));
    cr_expect_eq(harness_pg_int(pg, "select count(*) from pg_tables where tablename = 'half_done'"),
                 0, "nothing of the failed file stays");
    cr_expect_eq(harness_pg_int(pg, "select count(*) from schema_migrations"), n,
                 "the files before it stay applied");
    PQfinish(pg);
}

Test(migrate, a_database_ahead_of_the_folder_is_refused_and_a_missing_folder_is_usage)
{
    char conninfo[512], version[256], dir[1024];
    int n = migrations(version, sizeof(version));
    fresh_database("ahead", conninfo, sizeof(conninfo));
    cr_assert_eq(migrate(conninfo, SQL_DIR), 0, "%s", out);
    folder_of("migrate-older", n - 1, NULL, dir, sizeof(dir));

    cr_expect_eq(migrate(conninfo, dir), 1, "an older folder cannot say up to date: %s", out);
    cr_expect(strstr(out, "newer seckill"), "%s", out);
    cr_expect_eq(migrate(conninfo, "/nonexistent/sql"), 2, "%s", out);
    cr_expect(strstr(out, "/nonexistent/sql"), "%s", out);
}
