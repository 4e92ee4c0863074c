#!/usr/bin/env bash
# test.sh: `make test`: builds, starts Redis and PostgreSQL on free ports under run/test-<pid>, runs ctest.
# Extra arguments go to ctest (make test ARGS='-L unit'); SECKILL_SANITIZE=1 tests an ASan/UBSan build,
# SECKILL_LAB=OFF a build without the laboratory (its tests are not in that build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh

build=build
if [[ ${SECKILL_SANITIZE:-0} == 1 ]]; then
    build="build-asan"
elif [[ ${SECKILL_LAB:-ON} == OFF ]]; then
    build="build-nolab"
fi
dir=$PWD/run/test-$$

scripts/deps.sh
scripts/build.sh

# The run folder is removed after a green run and kept, with its logs, after a red one.
status=1
# shellcheck disable=SC2317  # only called by the EXIT trap
finish() {
    cluster_stop "$dir" # a Redis Cluster a test suite left behind (by its pid files)
    services_stop "$dir"
    # realpath: the folder may be a link to one under /tmp (see reachable_dir).
    if ((status == 0)); then rm -rf "$(realpath -m "$dir")" "$dir"; else echo "test: logs kept in $dir" >&2; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

SECKILL_PG_FAST=1 services_start "$dir"
# shellcheck source=/dev/null
source "$dir/env"
SECKILL_ADMIN_BIN=$build/seckill-admin scripts/migrate.sh
export SECKILL_ADMIN_TOKEN=test-admin-token SECKILL_TEST_DIR=$dir
# The servers the tests start run the laboratory (the key lab; SECKILL_LAB=OFF above chose the
# build without it, whose servers answer 404 lab_off all the same); a test of the default takes
# it out of its server's environment.
export SECKILL_LAB=on

# Tests side by side, as many as there are cores: the unit tests beside each other and beside
# the one test at a time that holds the run's servers (CMakeLists.txt's RESOURCE_LOCK backends).
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}
ctest --test-dir "$build" --output-on-failure "$@" && status=0 || status=$?
exit "$status"
