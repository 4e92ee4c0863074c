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

tail_pid='' summary_pid=''
# shellcheck disable=SC2317  # only called by the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    echo "stopping..."
    [[ -z $tail_pid ]] || kill "$tail_pid" 2>/dev/null || true
    [[ -z $summary_pid ]] || kill "$summary_pid" 2>/dev/null || true
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
# One line per request goes to access.log, not to the terminal: a load test makes 100,000s.
export SECKILL_PORT=$port SECKILL_ADMIN_TOKEN SECKILL_ALLOW_ANONYMOUS=true SECKILL_ACCESS_LOG=true \
    SECKILL_ACCESS_LOG_FILE=$dir/access.log
: >"$dir/server.log"
: >"$dir/worker.log"
: >"$dir/access.log"

# start NAME: starts seckill-NAME in the background; its pid goes to NAME_pid and
# run/dev/NAME.pid, the time it started (bash's SECONDS) to NAME_since.
start() {
    build/seckill-"$1" >>"$dir/$1.log" 2>&1 &
    printf -v "$1_pid" '%s' $!
    printf -v "$1_since" '%s' "$SECONDS"
    echo $! >"$dir/$1.pid"
}
server_pid='' worker_pid=''
start server
start worker

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

seckill is running at $url (logs: $dir/*.log, one line per request in access.log;
ZooKeeper on 127.0.0.1:$zk_port, Redlock on $SECKILL_REDLOCK_SERVERS)
admin token: $SECKILL_ADMIN_TOKEN

  curl -X POST -H "Authorization: Bearer $SECKILL_ADMIN_TOKEN" -d '{"name":"phone","stock":100}' $url/api/v1/items
  curl -X POST -d '{"user_id":1}' $url/api/v1/items/1/purchase
  curl $url/api/v1/items/1

Ctrl-C here (or 'make stop' from another terminal) stops everything. A server or worker that
dies is started again: kill -9 the worker mid-sale and watch every accepted order arrive.

EOF
tail -n +1 -F "$dir/server.log" "$dir/worker.log" &
tail_pid=$!

# traffic_summary: once a second while requests arrive or accepted orders wait for the worker,
# one line from the server's /metrics (its own scrapes not counted): requests/s, orders accepted
# in that second and in all, and the orders not yet in PostgreSQL.
traffic_summary() {
    local last_t='' last_req=0 last_acc=0 last_pending=0 t m req acc queue pending
    for (( ; ; )); do
        sleep 1
        m=$(curl -fsS --max-time 2 "$url/metrics" 2>/dev/null) || continue
        t=$EPOCHREALTIME
        read -r req acc queue pending < <(awk '
            /^seckill_http_requests_total/ && !/route="metrics"/ { req += $NF }
            /^seckill_purchases_total\{outcome="queued"\}/ { acc = $NF }
            /^seckill_queue_orders / { queue = $NF }
            /^seckill_pending_orders / { pending = $NF }
            END { printf "%d %d %d %d\n", req, acc, queue, pending }' <<<"$m")
        # A restarted server counts from 0 again.
        ((req >= last_req && acc >= last_acc)) || last_req=0 last_acc=0
        if [[ -n $last_t ]] && ((req != last_req || pending != 0 || last_pending != 0)); then
            awk -v dr=$((req - last_req)) -v t="$t" -v lt="$last_t" -v da=$((acc - last_acc)) \
                -v acc="$acc" -v q="$queue" -v p="$pending" 'BEGIN {
                    printf "traffic: %.0f req/s, %d orders accepted (%d in all), queue %d, not yet persisted %d\n",
                        dr / (t - lt), da, acc, q, p }'
        fi
        last_t=$t last_req=$req last_acc=$acc last_pending=$pending
    done
}
traffic_summary &
summary_pid=$!

# Supervision, as systemd's Restart=on-failure does it (deploy/systemd/): a process that exits
# is logged and started again after a back-off of 1 s, doubling up to 30 s, back to 1 s once it
# has lived a minute. The sleep is waited on in the background so that Ctrl-C and 'make stop'
# are handled at once.
declare -A backoff=([server]=1 [worker]=1)
for (( ; ; )); do
    done_pid=
    status=0
    wait -n -p done_pid "$server_pid" "$worker_pid" || status=$?
    [[ -n $done_pid ]] || continue
    name=server
    [[ $done_pid == "$worker_pid" ]] && name=worker
    since=${name}_since
    ((SECONDS - ${!since} < 60)) || backoff[$name]=1
    delay=${backoff[$name]}
    # Into its log, which the terminal follows.
    echo "run.sh: seckill-$name (pid $done_pid) exited with status $status; starting it again in $delay s" \
        >>"$dir/$name.log"
    sleep "$delay" &
    wait $!
    backoff[$name]=$((delay * 2 > 30 ? 30 : delay * 2))
    start "$name"
done
