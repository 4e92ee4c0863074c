#!/usr/bin/env bash
# run.sh: `make run` (the whole system under run/dev, in the foreground until Ctrl-C) and `make stop`.
# SECKILL_INSTANCES=N (1-16, default 1) runs N servers on free ports behind nginx on SECKILL_PORT
# (8080), as a shop would run several: they share the one Redis, PostgreSQL and worker.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh
# shellcheck source=supervise.sh
source scripts/supervise.sh

dir=$PWD/run/dev
port=${SECKILL_PORT:-8080}
instances=${SECKILL_INSTANCES:-1}

stop_all() {
    local f
    # nginx first, so that no request reaches a server while it stops.
    nginx_stop "$dir"
    stop_pid "$dir/rebuild.pid" seckill-admin
    for f in "$dir"/server.pid "$dir"/server-*.pid; do stop_pid "$f" seckill-server; done
    stop_pid "$dir/worker.pid" seckill-worker
    stop_pid "$dir/webhooks.pid" seckill-webhooks
    daemons_stop "$dir"
}

tail_pid='' summary_pid='' rebuild_pid=''
# shellcheck disable=SC2317  # only called by the EXIT trap
cleanup() {
    trap - EXIT INT TERM
    echo "stopping..."
    [[ -z $tail_pid ]] || kill "$tail_pid" 2>/dev/null || true
    [[ -z $summary_pid ]] || kill "$summary_pid" 2>/dev/null || true
    [[ -z $rebuild_pid ]] || kill "$rebuild_pid" 2>/dev/null || true
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
if ! [[ $instances =~ ^[0-9]+$ ]] || ((instances < 1 || instances > 16)); then
    die "SECKILL_INSTANCES: '$instances' is not a number of servers from 1 to 16"
fi

for f in run.pid:run.sh server.pid:seckill-server worker.pid:seckill-worker redis.pid:redis-server \
    zookeeper/zookeeper.pid:ZooKeeperServerMain nginx/nginx.pid:nginx; do
    if live_pid "$dir/${f%%:*}" "${f#*:}" >/dev/null; then
        die "a run is already active in $dir (${f#*:} is up): stop it with 'make stop'"
    fi
done
for f in "$dir"/server-*.pid; do
    ! live_pid "$f" seckill-server >/dev/null ||
        die "a run is already active in $dir (seckill-server is up): stop it with 'make stop'"
done

port_free "$port" || die "port $port is taken: choose another with SECKILL_PORT=..."
scripts/deps.sh
((instances == 1)) || scripts/deps.sh nginx-light # the load balancer in front of them
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
# SECKILL_REDIS_CLUSTER=1: a Redis Cluster of 3 masters and 3 replicas too, under run/dev/cluster.
# Its seeds replace the 1: the variable is the config key redis_cluster of the server and worker
# started below (their config is this environment), and `make admin` reads it from
# run/dev/cluster/env. The laboratory runs on the cluster too; the single Redis keeps running as
# one of Redlock's three servers, which are plain Redis servers by design.
if [[ ${SECKILL_REDIS_CLUSTER:-} == 1 ]]; then
    SECKILL_REDIS_CLUSTER=$(cluster_start "$dir")
    export SECKILL_REDIS_CLUSTER
fi
# PostgreSQL keeps the items of earlier runs, and Redis may not agree with it: a cluster is new at
# every run, and the single Redis missed what a run on a cluster sold. Without their keys the
# items would answer 404 to every buyer; with stale ones they would sell units twice. So the items
# that could sell twice are taken off sale at once (their buyers get 404), and the servers start
# selling the sound ones while a rebuild in the background sets the others back from PostgreSQL,
# in pieces, its progress on the terminal (run/dev/rebuild.log), as an operator mends a Redis that
# lost its data. An item whose rebuild fails stays off sale, and the terminal says what to run.
held=0
build/seckill-admin reconcile --hold >"$dir/rebuild.log" 2>&1 || held=$?
if ((held > 1)); then
    cat "$dir/rebuild.log" >&2
    die "seckill-admin reconcile --hold could not read the items of earlier runs (above); when" \
        "Redis and PostgreSQL answer, run 'make run' again"
fi
if ((held == 1)); then
    echo "reconcile: items of earlier runs are rebuilt in Redis from PostgreSQL in the background;" \
        "$(sed -n 's/^held \([0-9]*\) item.*/\1/p' "$dir/rebuild.log") of them off sale (404) until" \
        "then, the others sell meanwhile (progress in $dir/rebuild.log)"
    (
        build/seckill-admin reconcile --rebuild >>"$dir/rebuild.log" 2>&1 &
        echo $! >"$dir/rebuild.pid"
        if wait $!; then
            echo "run.sh: every item of earlier runs is back on sale" >>"$dir/rebuild.log"
        else
            echo "run.sh: the rebuild failed (above); its items stay off sale (404) while the others" \
                "sell: mend them with 'make admin ARGS=\"reconcile --rebuild\"'" >>"$dir/rebuild.log"
        fi
        rm -f "$dir/rebuild.pid"
    ) &
    rebuild_pid=$!
fi

# One credential of each scope (README "Credentials"), unless the environment brings its own.
random_token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
: "${SECKILL_ADMIN_TOKEN:=$(random_token)}"
: "${SECKILL_PAYMENTS_TOKENS:=$(random_token)}"
: "${SECKILL_ORDERS_READ_TOKENS:=$(random_token)}"
# One line per request goes to access.log, not to the terminal: a load test makes 100,000s.
export SECKILL_ADMIN_TOKEN SECKILL_PAYMENTS_TOKENS SECKILL_ORDERS_READ_TOKENS
export SECKILL_ALLOW_ANONYMOUS=true SECKILL_ACCESS_LOG=true
# A development run has the laboratory on (/lab, /api/v1/experiments); the binaries' default is off.
export SECKILL_LAB=${SECKILL_LAB:-on}
rm -f "$dir"/server-*.log "$dir"/access-*.log

# The processes run.sh starts and watches, by name: "server" (or "server-1".."server-N" behind
# nginx) and "worker"; each server's own port and access log.
names=(worker)
# seckill-webhooks too when endpoints are set (docs/WEBHOOKS.md): it has nothing to do otherwise.
[[ -z ${SECKILL_WEBHOOK_ENDPOINTS:-} ]] || names+=(webhooks)
declare -A port_of access_of
if ((instances == 1)); then
    names+=(server) port_of[server]=$port access_of[server]=$dir/access.log
else
    for ((k = 1; k <= instances; k++)); do
        p=$(free_port "$port")
        while [[ " ${port_of[*]} " == *" $p "* ]]; do p=$(free_port "$port"); done
        names+=("server-$k") port_of[server-$k]=$p access_of[server-$k]=$dir/access-$k.log
    done
fi
for name in "${names[@]}"; do : >"$dir/$name.log"; done
for name in "${!access_of[@]}"; do : >"${access_of[$name]}"; done

# start NAME: starts seckill-server or seckill-worker as NAME in the background (logging to
# run/dev/NAME.log); its pid goes to pid_of[NAME] and run/dev/NAME.pid, the time it started
# (bash's SECONDS) to since[NAME].
declare -A pid_of since
start() {
    if [[ $1 == server* ]]; then
        SECKILL_PORT=${port_of[$1]} SECKILL_ACCESS_LOG_FILE=${access_of[$1]} build/seckill-server >>"$dir/$1.log" 2>&1 &
    else
        build/seckill-"$1" >>"$dir/$1.log" 2>&1 &
    fi
    pid_of[$1]=$!
    since[$1]=$SECONDS
    echo $! >"$dir/$1.pid"
}
for name in "${names[@]}"; do start "$name"; done

# Up to 60 s: a start on a loaded machine is slower, never a failure (child_alive: supervise.sh).
urls=()
for name in "${names[@]}"; do
    [[ $name == server* ]] || continue
    u=http://127.0.0.1:${port_of[$name]}
    urls+=("$u")
    for _ in {1..600}; do
        curl -fsS -o /dev/null "$u/health" 2>/dev/null && break
        child_alive "${pid_of[$name]}" || break
        sleep 0.1
    done
    if ! curl -fsS -o /dev/null "$u/health"; then
        tail -n 20 "$dir/$name.log" >&2
        die "$name does not answer on $u/health (log: $dir/$name.log)"
    fi
done
url=http://127.0.0.1:$port
((instances == 1)) || nginx_start "$dir" "$port" "${port_of[@]}"

behind=''
((instances == 1)) || behind="
nginx in front of $instances servers: ${urls[*]} (one access-K.log each)"
cat <<EOF

seckill is running at $url (logs: $dir/*.log, one line per request in access.log;
ZooKeeper on 127.0.0.1:$zk_port, Redlock on $SECKILL_REDLOCK_SERVERS)${SECKILL_REDIS_CLUSTER:+
Redis Cluster on $SECKILL_REDIS_CLUSTER
(redis_cluster of the server, worker, laboratory and make admin; the single Redis serves Redlock)}$behind
admin token: $SECKILL_ADMIN_TOKEN
payments token: $SECKILL_PAYMENTS_TOKENS (pays orders, reads them)
orders:read token: $SECKILL_ORDERS_READ_TOKENS (reads orders and /metrics)

  curl -X POST -H "Authorization: Bearer $SECKILL_ADMIN_TOKEN" -d '{"name":"phone","stock":100}' $url/api/v1/items
  curl -X POST -d '{"user_id":1}' $url/api/v1/items/1/purchase
  curl $url/api/v1/items/1

Ctrl-C here (or 'make stop' from another terminal) stops everything. A server or worker that
dies is started again: kill -9 the worker mid-sale and watch every accepted order arrive.

EOF
logs=()
for name in "${names[@]}"; do logs+=("$dir/$name.log"); done
[[ -z $rebuild_pid ]] || logs+=("$dir/rebuild.log")
tail -n +1 -F "${logs[@]}" &
tail_pid=$!

# traffic_summary: once a second while requests arrive or accepted orders wait for the worker,
# one line from the servers' /metrics (their own scrapes not counted; several instances summed):
# requests/s, orders accepted in that second and in all, and the orders not yet in PostgreSQL
# (one figure of Redis's, which every instance reports alike).
traffic_summary() {
    local last_t='' last_req=0 last_acc=0 last_pending=0 t m u req acc queue pending
    for (( ; ; )); do
        sleep 1
        m=
        for u in "${urls[@]}"; do m+=$(curl -fsS --max-time 2 -H "Authorization: Bearer $SECKILL_ADMIN_TOKEN" "$u/metrics" 2>/dev/null)$'\n' || continue 2; done
        t=$EPOCHREALTIME
        read -r req acc queue pending < <(awk '
            /^seckill_http_requests_total/ && !/route="metrics"/ { req += $NF }
            /^seckill_purchases_total\{outcome="queued"\}/ { acc += $NF }
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

# Supervision (supervise.sh): a process that dies is started again after its back-off.
supervise "$dir" "${names[@]}"
