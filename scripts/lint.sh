#!/usr/bin/env bash
# lint.sh: `make lint`: shellcheck of every script, clang-format check of the C sources, the
# include graph (no cycle, each part includes only what it may), and docker-compose.yml validated
# by `docker-compose config` (no Docker engine needed for that).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh shellcheck clang-format docker-compose python3
shellcheck scripts/*.sh .ci/run service/tests/browser/run.sh
find service -name '*.[ch]' -print0 | xargs -0 clang-format --dry-run --Werror
scripts/include_graph.sh
SECKILL_PG_PASSWORD=lint SECKILL_ADMIN_TOKEN=lint docker-compose -f docker-compose.yml config -q
echo "lint: scripts, format, include graph and docker-compose.yml are clean"
