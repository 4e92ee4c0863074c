#!/usr/bin/env bash
# lint.sh: `make lint`: shellcheck of every script (loadtest/ too), the Python of loadtest/seckill-lab
# compiled and checked by pyflakes, clang-format check of the C sources, the
# include graph (no cycle, each part includes only what it may), the size rule (scripts/code_size.sh: no
# product .c over 550 lines, no function over 80), docker-compose.yml alone and with
# docker-compose.host.yml validated by `docker-compose config` (no Docker engine needed for that),
# and the systemd units of deploy/systemd verified by systemd-analyze (pointed at build/'s binaries;
# any warning fails).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh shellcheck clang-format docker-compose python3 python3-pyflakes systemd
shellcheck scripts/*.sh loadtest/*.sh .ci/run service/tests/browser/run.sh service/tests/records/run.sh \
    service/tests/support/on_backends.sh
python_files=(loadtest/seckill-lab scripts/room-verify scripts/draw-verify scripts/seckill_audit.py loadtest/seckill_lab/*.py loadtest/tests/*.py)
PYTHONDONTWRITEBYTECODE=1 python3 -c 'import sys; [compile(open(f).read(), f, "exec") for f in sys.argv[1:]]' "${python_files[@]}"
pyflakes3 "${python_files[@]}"
find service -name '*.[ch]' -print0 | xargs -0 clang-format --dry-run --Werror
scripts/include_graph.sh
scripts/code_size.sh
SECKILL_PG_PASSWORD=lint SECKILL_ADMIN_TOKEN=lint docker-compose -f docker-compose.yml config -q
SECKILL_PG_PASSWORD=lint SECKILL_ADMIN_TOKEN=lint SECKILL_HOST_REDIS_PORT=6379 SECKILL_HOST_PORT_1=8081 \
    SECKILL_HOST_PORT_2=8082 SECKILL_HOST_PG_CONNINFO='host=127.0.0.1 dbname=seckill user=seckill' \
    docker-compose -f docker-compose.yml -f docker-compose.host.yml config -q
units=$(mktemp -d)
trap 'rm -rf "$units"' EXIT
for f in deploy/systemd/*.service; do
    sed "s#/usr/local/bin/#$PWD/build/#" "$f" >"$units/${f##*/}"
done
mv "$units/seckill-worker@.service" "$units/seckill-worker@1.service" # a template: verify an instance
[[ -x build/seckill-server && -x build/seckill-worker ]] || scripts/build.sh >/dev/null
verified=$(systemd-analyze verify "$units"/*.service 2>&1) || { echo "$verified" >&2; exit 1; }
[[ -z $verified ]] || { echo "systemd-analyze: $verified" >&2; exit 1; }
echo "lint: scripts, Python, format, include graph, code size, the docker-compose files and the systemd units are clean"
