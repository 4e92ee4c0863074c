#!/usr/bin/env bash
# on_backends.sh: runs a test that needs the run's Redis and PostgreSQL (its command line follows)
# on the set ctest handed it: scripts/test.sh starts one set of backends per test that may run at
# once, under $SECKILL_TEST_SETS/<id>, and ctest names the test's set in
# CTEST_RESOURCE_GROUP_0_BACKENDS ("id:b1,slots:1"). The test gets that set's environment and
# folder (logs, its Redis Cluster, nginx...). Without a set (ctest run by hand), the environment
# is left as it is.
set -euo pipefail
if [[ ${CTEST_RESOURCE_GROUP_0_BACKENDS:-} =~ ^id:([a-z0-9]+), && -n ${SECKILL_TEST_SETS:-} ]]; then
    export SECKILL_TEST_DIR=$SECKILL_TEST_SETS/${BASH_REMATCH[1]}
    # shellcheck source=/dev/null
    source "$SECKILL_TEST_DIR/env"
fi
exec "$@"
