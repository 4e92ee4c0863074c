#!/usr/bin/env bash
# test.sh: `make test`: builds, starts Redis and PostgreSQL on free ports under run/test-<pid>, runs ctest.
# Extra arguments go to ctest (make test ARGS='-L unit'); SECKILL_SANITIZE=1 tests an ASan/UBSan build,
# SECKILL_LAB=OFF a build without the laboratory (its tests are not in that build).
# SECKILL_TEST_BACKENDS=N (default: as many as ctest runs tests at once, at most 2) starts N sets of
# them, run/test-<pid>/b0.., so that N tests that need them run side by side, each on a set of its own.
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
# Only what the chosen tests run is built when the build folder is Ninja's (make builds the targets
# named one after another): `make test ARGS='-R e2e_purchase'` builds that test and the binaries
# it starts, not the other hundred tests. A C test runs the program of its name; any other test
# (the pages in Chromium, the records, Python's) builds it all.
scripts/build.sh --configure
names=()
if [[ -f $build/build.ninja ]]; then
    mapfile -t names < <(ctest --test-dir "$build" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p')
    programs=$(ninja -C "$build" -t targets all | sed -n 's/: C_EXECUTABLE_LINKER.*//p')
    for name in "${names[@]}"; do
        grep -qxF -- "$name" <<<"$programs" || { names=(); break; }
    done
fi
targets=()
# seckill-admin too: this script migrates each set of servers with it.
((${#names[@]} == 0)) || targets=(--target seckill-admin "${names[@]}")
cmake --build "$build" -j "$(nproc)" "${targets[@]}"

# Tests side by side, as many as there are cores: the unit tests beside each other and beside
# the tests that hold a set of the run's servers (CMakeLists.txt's RESOURCE_GROUPS backends).
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}
sets=${SECKILL_TEST_BACKENDS:-$((CTEST_PARALLEL_LEVEL < 2 ? CTEST_PARALLEL_LEVEL : 2))}

# The run folder is removed after a green run and kept, with its logs, after a red one.
status=1
starting=()
# shellcheck disable=SC2317  # only called by the EXIT trap
finish() {
    local k pid
    # A set still starting when another failed: let it end before its servers are stopped, or
    # they would start after the stop and be left running.
    for pid in "${starting[@]}"; do wait "$pid" 2>/dev/null || true; done
    local stopping=()
    for ((k = 0; k < sets; k++)); do
        # What a test suite killed midway left behind there (by its pid files): the seckill
        # processes die with their test (harness_launch), the daemons services.sh starts do not.
        # The sets side by side (each PostgreSQL takes a second or so to stop).
        daemons_stop "$dir/b$k" &
        stopping+=($!)
    done
    for pid in "${stopping[@]}"; do wait "$pid" || true; done
    # realpath: the folder may be a link to one under /tmp (see reachable_dir).
    if ((status == 0)); then
        for ((k = 0; k < sets; k++)); do rm -rf "$(realpath -m "$dir/b$k")"; done
        rm -rf "$dir"
    else
        echo "test: logs kept in $dir" >&2
    fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One set: its Redis and PostgreSQL, migrated, in $dir/b<k> (its env file says where).
start_set() (
    SECKILL_PG_FAST=1 services_start "$dir/b$1"
    # shellcheck source=/dev/null
    source "$dir/b$1/env"
    SECKILL_ADMIN_BIN=$build/seckill-admin scripts/migrate.sh
)
for ((k = 0; k < sets; k++)); do
    start_set "$k" &
    starting+=($!)
done
for pid in "${starting[@]}"; do wait "$pid"; done
# ctest hands each test that needs backends one set, by its id (CTEST_RESOURCE_GROUP_0_BACKENDS);
# service/tests/support/on_backends.sh points the test at it.
spec=$dir/backends.json
ids=()
for ((k = 0; k < sets; k++)); do ids+=("{\"id\": \"b$k\", \"slots\": 1}"); done
(IFS=,; printf '{"version": {"major": 1, "minor": 0}, "local": [{"backends": [%s]}]}\n' "${ids[*]}") >"$spec"
# Set 0 is also the environment of a test run without a set (a plain ctest of one test).
# shellcheck source=/dev/null
source "$dir/b0/env"
export SECKILL_ADMIN_TOKEN=test-admin-token SECKILL_TEST_DIR=$dir/b0 SECKILL_TEST_SETS=$dir
# The servers the tests start run the laboratory (the key lab; SECKILL_LAB=OFF above chose the
# build without it, whose servers answer 404 lab_off all the same); a test of the default takes
# it out of its server's environment.
export SECKILL_LAB=on

# failure_digest: each failed test's assertions (Criterion's [----] and [FAIL] lines), or the end
# of its output when it has none (a crash, a timeout), from ctest's log: printed last, where a
# log cut in its middle (CI keeps the start and the end) still shows why. Only a log this run
# wrote: ctest that stops before any test leaves an older one.
failure_digest() {
    [[ $build/Testing/Temporary/LastTest.log -nt $dir/backends.json ]] || return 0
    awk '
        !out && / Testing: / { name = $3; n = 0; m = 0; next }
        /^Output:$/ { out = 1; next }
        /^<end of output>$/ { out = 0; next }
        out && !/^-+$/ { tail[n++ % 20] = $0; if (/^\[(----|FAIL)\]/ && m < 40) hit[m++] = $0 }
        !out && /^Test (Failed\.|Timeout)/ {
            print "---- " name " failed:"
            if (m) for (i = 0; i < m; i++) print hit[i]
            else for (i = (n > 20 ? n - 20 : 0); i < n; i++) print tail[i % 20]
        }' "$build/Testing/Temporary/LastTest.log" >&2
}

ctest --test-dir "$build" --output-on-failure --resource-spec-file "$spec" "$@" && status=0 || status=$?
((status == 0)) || failure_digest || true
exit "$status"
