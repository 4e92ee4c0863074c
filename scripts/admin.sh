#!/usr/bin/env bash
# admin.sh: `make admin ARGS='reconcile'`: seckill-admin against the running `make run`, whose
# Redis and PostgreSQL listen on ports of its own (run/dev/env says which), and, when it runs with
# SECKILL_REDIS_CLUSTER=1, on its Redis Cluster (run/dev/cluster/env: redis_cluster, as the server
# and worker have it). Without a run up, the config file and environment decide, as for
# build/seckill-admin itself.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh

dir=$PWD/run/dev
[[ -x build/seckill-admin ]] || scripts/build.sh
if live_pid "$dir/run.pid" run.sh >/dev/null && [[ -r $dir/env ]]; then
    # shellcheck source=/dev/null
    source "$dir/env"
    # The run's cluster, not the seeds a stopped one left behind.
    if live_pid "$dir/cluster/node-1/redis.pid" redis-server >/dev/null && [[ -r $dir/cluster/env ]]; then
        # shellcheck source=/dev/null
        source "$dir/cluster/env"
    fi
else
    echo "admin: no \`make run\` is up: using the config and environment as they are" >&2
fi
exec build/seckill-admin "$@"
