#!/usr/bin/env bash
# migrate.sh: applies the sql/NNN_*.sql files not yet applied to $SECKILL_PG_CONNINFO, in order.
# Each file and its row in schema_migrations commit in one transaction; never edit or rename an
# applied file, add a new one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${SECKILL_PG_CONNINFO:?is not set (source run/<dir>/env first)}"
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

psql=(psql "$SECKILL_PG_CONNINFO" -X -q -v ON_ERROR_STOP=1)
"${psql[@]}" -c "create table if not exists schema_migrations (
    version text primary key, applied_at timestamptz not null default now())"
applied=$("${psql[@]}" -tA -c "select version from schema_migrations")

count=0
for file in sql/[0-9][0-9][0-9]_*.sql; do
    [[ -e $file ]] || continue
    version=$(basename "$file" .sql)
    grep -qxF -- "$version" <<<"$applied" && continue
    "${psql[@]}" --single-transaction -v version="$version" -f "$file" \
        -f - <<<"insert into schema_migrations (version) values (:'version');"
    echo "migrate: applied $file"
    count=$((count + 1))
done
((count > 0)) || echo "migrate: schema up to date"
