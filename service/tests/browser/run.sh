#!/usr/bin/env bash
# run.sh: the browser test of the pages (ctest browser_pages): installs playwright-core with
# `npm ci`, empties the run's Redis and PostgreSQL, then runs pages.js against its own
# seckill-server and seckill-worker. Usage: run.sh SERVER_BIN WORKER_BIN. Exit 77 (skipped) only
# when the user asks for it (SECKILL_SKIP_BROWSER=1); without node, npm or chromium it fails.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ ${SECKILL_SKIP_BROWSER:-0} == 1 ]]; then
    echo "browser_pages: SKIPPED (SECKILL_SKIP_BROWSER=1)"
    exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "browser_pages: node and npm are missing: scripts/deps.sh installs them" >&2
    exit 1
fi
for v in SECKILL_REDIS_PORT SECKILL_PG_CONNINFO SECKILL_TEST_DIR; do
    [[ -n ${!v:-} ]] || { echo "browser_pages: $v is not set: run \`make test\`" >&2; exit 1; }
done
[[ -x /usr/bin/chromium ]] || { echo "browser_pages: /usr/bin/chromium is missing (scripts/deps.sh installs it)" >&2; exit 1; }

(cd "$here" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)

# A clean slate, as harness_reset_backends() gives the C tests: the page lists every item.
redis-cli -h "${SECKILL_REDIS_HOST:-127.0.0.1}" -p "$SECKILL_REDIS_PORT" FLUSHALL >/dev/null
psql -q -v ON_ERROR_STOP=1 "$SECKILL_PG_CONNINFO" -c 'TRUNCATE orders, draw_entries, items RESTART IDENTITY' >/dev/null

# SECKILL_BROWSER_TEST names another test of this folder (ctest browser_cors: cors.js).
exec node "$here/${SECKILL_BROWSER_TEST:-pages.js}" "$@"
