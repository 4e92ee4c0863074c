#!/usr/bin/env bash
# run.sh: `make run` (the whole system under run/dev, in the foreground until Ctrl-C) and `make stop`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh

dir=$PWD/run/dev
port=${SECKILL_PORT:-8080}

stop_all() {
    stop_pid "$dir/server.pid" seckill-server
    stop_pid "$dir/worker.pid" seckill-worker
    zk_stop "$dir"
    redlock_stop "$dir"
    services_stop "$dir"
}

tail_pid=
# shellcheck disable=SC2317  # only called by the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    echo "stopping..."
    [[ -z $tail_pid ]] || kill "$tail_pid" 2>/dev/null || true
    stop_all
    rm -f "$dir/run.pid"
}

if [[ ${1:-} == stop ]]; then
    # A foreground run.sh cleans up after itself; otherwise stop by the pid files.
    if pid=$(live_pid "$dir/run.pid" run.sh); then
        kill -TERM "$pid"
        for _ in {1..300}; do
            live_pid "$dir/run.pid" run.sh >/dev/null || break
            sleep 0.1
        done
    fi
    stop_all
    rm -f "$dir/run.pid"
    echo "stopped"
    exit 0
fi
[[ $# == 0 ]] || die "usage: $0 [stop]"

for f in run.pid:run.sh server.pid:seckill-server worker.pid:seckill-worker redis.pid:redis-server \
    zookeeper/zookeeper.pid:ZooKeeperServerMain; do
    if live_pid "$dir/${f%%:*}" "${f#*:}" >/dev/null; then
        die "a run is already active in $dir (${f#*:} is up): stop it with 'make stop'"
    fi
done

port_free "$port" || die "port $port is taken: choose another with SECKILL_PORT=..."
scripts/deps.sh
scripts/build.sh

mkdir -p "$dir"
echo $$ >"$dir/run.pid"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 0' TERM

services_start "$dir"
# shellcheck source=/dev/null
source "$dir/env"
scripts/migrate.sh
# The ZooKeeper of the lab's zookeeper_lock, and two more Redis servers for its redlock (the
# run's own Redis is the third).
zk_port=$(zk_start "$dir")
export SECKILL_ZOOKEEPER_SERVERS=127.0.0.1:$zk_port
read -r redlock_1 redlock_2 < <(redlock_start "$dir")
export SECKILL_REDLOCK_SERVERS=127.0.0.1:$SECKILL_REDIS_PORT,127.0.0.1:$redlock_1,127.0.0.1:$redlock_2

if [[ -z ${SECKILL_ADMIN_TOKEN:-} ]]; then
    SECKILL_ADMIN_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
fi
export SECKILL_PORT=$port SECKILL_ADMIN_TOKEN SECKILL_ALLOW_ANONYMOUS=true SECKILL_ACCESS_LOG=true
build/seckill-server >"$dir/server.log" 2>&1 &
server_pid=$!
echo "$server_pid" >"$dir/server.pid"
build/seckill-worker >"$dir/worker.log" 2>&1 &
worker_pid=$!
echo "$worker_pid" >"$dir/worker.pid"

url=http://127.0.0.1:$port
# Up to 60 s: a start on a loaded machine is slower, never a failure. Alive is asked of the
# process itself (its pid from $!, not a zombie): right after the fork its command line is still
# this script's, so a check by name could take a starting server for a dead one.
child_alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
for _ in {1..600}; do
    curl -fsS -o /dev/null "$url/health" 2>/dev/null && break
    child_alive "$server_pid" || break
    sleep 0.1
done
if ! curl -fsS -o /dev/null "$url/health"; then
    tail -n 20 "$dir/server.log" >&2
    die "the server does not answer on $url/health (log: $dir/server.log)"
fi

cat <<EOF

seckill is running at $url (logs: $dir/*.log; ZooKeeper on 127.0.0.1:$zk_port,
Redlock on $SECKILL_REDLOCK_SERVERS)
admin token: $SECKILL_ADMIN_TOKEN

  curl -X POST -H "Authorization: Bearer $SECKILL_ADMIN_TOKEN" -d '{"name":"phone","stock":100}' $url/api/v1/items
  curl -X POST -d '{"user_id":1}' $url/api/v1/items/1/purchase
  curl $url/api/v1/items/1

Ctrl-C here (or 'make stop' from another terminal) stops everything.

EOF
tail -n +1 -F "$dir/server.log" "$dir/worker.log" &
tail_pid=$!
# Returns when the server or the worker exits, or when a signal arrives.
wait -n "$server_pid" "$worker_pid" || true
die "the server or the worker exited (logs: $dir/server.log, $dir/worker.log)"
