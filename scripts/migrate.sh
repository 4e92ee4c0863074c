#!/usr/bin/env bash
# migrate.sh: applies the sql/NNN_*.sql files not yet applied to $SECKILL_PG_CONNINFO, in order, with
# `seckill-admin migrate` (service/admin/migrate.c: each file and its row in schema_migrations in one
# transaction, under an advisory lock). Never edit or rename an applied file, add a new one.
# From a checkout: $SECKILL_ADMIN_BIN, else build/seckill-admin, and ./sql; from the Docker image
# (share/seckill/scripts/): the seckill-admin on PATH and share/seckill/sql.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${SECKILL_PG_CONNINFO:?is not set (source run/<dir>/env first)}"

admin=${SECKILL_ADMIN_BIN:-}
if [[ -z $admin ]]; then
    admin=seckill-admin
    [[ -x build/seckill-admin ]] && admin=build/seckill-admin
fi
exec "$admin" migrate --migrations-dir "$PWD/sql"
