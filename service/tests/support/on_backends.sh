#!/usr/bin/env bash
# on_backends.sh: runs a test that needs the run's Redis and PostgreSQL (its command line follows)
# on the set ctest handed it: scripts/test.sh starts one set of backends per test that may run at
# once, under $SECKILL_TEST_SETS/<id>, and ctest names the test's set in
# CTEST_RESOURCE_GROUP_0_BACKENDS ("id:b1,slots:1"). The test gets that set's environment and
# folder (logs, its Redis Cluster, nginx...). Without a set (ctest run by hand), the environment
# is left as it is and the test waits for the others on the same folder.
set -euo pipefail
if [[ ${CTEST_RESOURCE_GROUP_0_BACKENDS:-} =~ ^id:([a-z0-9]+), && -n ${SECKILL_TEST_SETS:-} ]]; then
    export SECKILL_TEST_DIR=$SECKILL_TEST_SETS/${BASH_REMATCH[1]}
    # shellcheck source=/dev/null
    source "$SECKILL_TEST_DIR/env"
elif [[ -n ${SECKILL_TEST_DIR:-} && -d $SECKILL_TEST_DIR ]]; then
    # No set handed out (ctest -j run by hand, without test.sh's resource spec): tests that share
    # the one set take turns, holding its lock for as long as they run (fd 9 goes to the test).
    exec 9>>"$SECKILL_TEST_DIR/.lock"
    flock 9
fi
exec "$@"
