/* migrate.h: seckill-admin migrate: the numbered SQL files of a folder
 * (sql/NNN_name.sql) applied to PostgreSQL in order, each at most once,
 * forward only. */
#ifndef SECKILL_MIGRATE_H
#define SECKILL_MIGRATE_H

#include <stdio.h>

#include <libpq-fe.h>

/* The longest migration file name kept. */
#define MIGRATE_NAME_MAX 128

/* 1 when name is a migration's file name: three digits, '_', a name of
 * letters, digits and '_', ".sql". Pure. */
int migrate_is_name(const char *name);

/* Where the migrations are when migrations_dir is empty: beside an installed
 * seckill-admin (<bindir>/../share/seckill/sql, or wherever the build put
 * them), else ./sql, a checkout's. Writes the folder into out. */
void migrate_default_dir(char *out, size_t outlen);

/* Applies the migrations of dir that pg has not applied, in order, each in
 * one transaction with its row in schema_migrations, under an advisory lock
 * (a second migrate waits for the first, then finds nothing to do). Prints
 * each file applied and the schema version to out. Returns the number
 * applied, or -1 with err set: a file failed (rolled back, nothing of it
 * kept), the folder cannot be read or holds no migration, or the database
 * has applied a migration the folder lacks (a newer seckill migrated it). */
int migrate_run(PGconn *pg, const char *dir, FILE *out, char *err, size_t errlen);

#endif
