#!/usr/bin/env bash
# bench_cluster.sh: `make bench-cluster`, and the last part of `make bench`: the purchase path on a
# Redis Cluster of 3 masters and 3 replicas against the same server on one Redis, in one run
# (issue 14, item 8). Writes the table into a copy of docs/SCALING.md (between the bench-cluster
# markers) and bench_cluster.json, both under run/results/; RECORD=1 writes them into docs/SCALING.md
# and loadtest/results/bench_cluster.json, the committed ones; BENCH_DOC=0 writes neither.
#
# Cases, each a wrk run of BENCH_DURATION (10s) with BENCH_CONNECTIONS (256), every request a
# new buyer, stock 10,000,000, a worker draining as in production:
#   single          one server on the single Redis: the baseline of the ratios
#   hot             one server in cluster mode, one item: its one master does all the work
#   hot-2, -4, -8   the same, the one item split into 2, 4, 8 segments (`"segments": K`): its
#                   purchases spread over the masters its segments land on
#   spread          one server in cluster mode, three items, one on each master, bought in turn
#   spread-2        the same through nginx in front of two servers
#   spread-wait     `spread` with the default reserve_wait_replicas = auto (1 here): each batch
#                   waits for its replica
# For each: requests a second, p99, the CPU each process spent a purchase (/proc/<pid>/stat
# before and after; wrk's from bash's time) and each master's share of the reserve calls (INFO
# commandstats before and after). Both cores of this machine are shared by everything, so the
# CPU a purchase and the spread over masters say more than requests a second.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh
# shellcheck source=progress.sh
source scripts/progress.sh
# shellcheck source=cpu_ticks.sh
source scripts/cpu_ticks.sh

duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNECTIONS:-256}
threads=${BENCH_THREADS:-2}
stock=10000000
doc=docs/SCALING.md
results_json=loadtest/results/bench_cluster.json
if [[ ${RECORD:-0} != 1 && ${BENCH_DOC:-1} != 0 ]]; then
    mkdir -p run/results
    cp "$doc" run/results/SCALING.md
    doc=run/results/SCALING.md results_json=run/results/bench_cluster.json
fi
dir=$PWD/run/bench-cluster-$$
token=bench-admin-token

scripts/deps.sh
[[ ${BENCH_DOC:-1} == 0 ]] || scripts/deps.sh jq
scripts/build.sh >/dev/null

status=1
# shellcheck disable=SC2317  # only called by the EXIT trap
finish() {
    progress_break
    local f b
    for f in "$dir"/server-*.pid "$dir"/worker-*.pid; do
        b=$(basename "$f")
        [[ ! -e $f ]] || stop_pid "$f" "seckill-${b%%-*}"
    done
    nginx_stop "$dir"
    cluster_stop "$dir"
    services_stop "$dir"
    if ((status == 0)); then rm -rf "$(realpath -m "$dir")" "$dir"; else echo "bench-cluster: logs kept in $dir" >&2; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { progress_note "bench-cluster: $*"; }

services_start "$dir" >/dev/null
dir=$(realpath "$dir")
# shellcheck source=/dev/null
source "$dir/env"
scripts/migrate.sh >/dev/null
seeds=$(cluster_start "$dir")
export SECKILL_ADMIN_TOKEN=$token SECKILL_ALLOW_ANONYMOUS=true SECKILL_LOG_LEVEL=${SECKILL_LOG_LEVEL:-warn}
export SECKILL_LAB=${SECKILL_LAB:-on} # as in `make run` and `make bench`

# The nodes, in cluster_start's order (node-1..6 are the seeds' order): port, pid, role.
IFS=, read -r -a node_addrs <<<"$seeds"
masters=() replicas=()
declare -A node_pid
for n in "${!node_addrs[@]}"; do
    port=${node_addrs[n]##*:}
    read -r "node_pid[$port]" <"$dir/cluster/node-$((n + 1))/redis.pid"
    if [[ $(redis-cli -p "$port" ROLE | head -n 1) == master ]]; then masters+=("$port"); else replicas+=("$port"); fi
done
((${#masters[@]} == 3)) || die "expected 3 masters, found ${#masters[@]}"
read -r single_redis_pid <"$dir/redis.pid"

# ---- the systems -----------------------------------------------------------------------

# start NAME PORT [ENV...]: a server and a worker of their own (the worker id NAME).
start() {
    local name=$1 port=$2
    shift 2
    env SECKILL_PORT="$port" "$@" build/seckill-server >"$dir/server-$name.log" 2>&1 &
    echo $! >"$dir/server-$name.pid"
    env SECKILL_WORKER_ID="bench-$name" "$@" build/seckill-worker >"$dir/worker-$name.log" 2>&1 &
    echo $! >"$dir/worker-$name.pid"
    wait_ready "http://127.0.0.1:$port/ready" || { tail "$dir/server-$name.log" >&2; die "server $name did not start"; }
}
pid_of() { cat "$dir/$1.pid"; }

single_port=$(free_port)
start single "$single_port"
cluster_env=("SECKILL_REDIS_CLUSTER=$seeds")
# `spread` and `second` answer at once (the opt-out, 0); `wait` runs the default, auto, which on
# this cluster (every master has a replica) waits for one: the pair is what the default costs.
spread_port=$(free_port)
start spread "$spread_port" "${cluster_env[@]}" SECKILL_RESERVE_WAIT_REPLICAS=0
second_port=$(free_port)
start second "$second_port" "${cluster_env[@]}" SECKILL_RESERVE_WAIT_REPLICAS=0
wait_port=$(free_port)
start wait "$wait_port" "${cluster_env[@]}" SECKILL_RESERVE_WAIT_REPLICAS=auto
nginx_port=$(free_port)
nginx_start "$dir" "$nginx_port" "$spread_port" "$second_port"

# item_create PORT NAME [SEGMENTS]: a new item of the bench's stock, no payment step; prints its
# id.
item_create() {
    curl -sf -X POST -H "Authorization: Bearer $token" \
        -d "{\"name\":\"$2\",\"stock\":$stock,\"payment_timeout_s\":0,\"listed\":false,\"segments\":${3:-1}}" \
        "http://127.0.0.1:$1/api/v1/items" | sed -E 's/.*"id":([0-9]+).*/\1/'
}
# master_of ITEM: the port of the master holding the item's keys (only it answers TYPE without
# a MOVED).
master_of() {
    local m
    for m in "${masters[@]}"; do
        [[ $(redis-cli -p "$m" TYPE "{item:$1}:state" 2>/dev/null) == hash ]] && echo "$m" && return
    done
    die "item $1 is on no master"
}

single_item=$(item_create "$single_port" bench-single)
# Items are made until each master holds one: the spread cases buy them in turn.
declare -A item_on
for _ in {1..60}; do
    id=$(item_create "$spread_port" bench-spread)
    m=$(master_of "$id")
    [[ -n ${item_on[$m]:-} ]] || item_on[$m]=$id
    ((${#item_on[@]} < 3)) || break
done
((${#item_on[@]} == 3)) || die "60 items and still a master without one"
spread_items=$(
    IFS=,
    echo "${item_on[*]}"
)
hot_item=${item_on[${masters[0]}]}
declare -A segmented
for k in 2 4 8; do segmented[$k]=$(item_create "$spread_port" "bench-hot-$k" "$k"); done
log "cluster $seeds; masters ${masters[*]}; items $spread_items (hot: $hot_item)"

# ---- measuring -------------------------------------------------------------------------

# sum_ticks PID...: their CPU so far.
sum_ticks() {
    local t=0 p
    for p in "$@"; do t=$((t + $(ticks "$p"))); done
    echo "$t"
}
nginx_pids() { cat "$dir/nginx/nginx.pid" "/proc/$(cat "$dir/nginx/nginx.pid")/task/$(cat "$dir/nginx/nginx.pid")/children"; }
master_pids() { for m in "${masters[@]}"; do echo "${node_pid[$m]}"; done; }
replica_pids() { for r in "${replicas[@]}"; do echo "${node_pid[$r]}"; done; }
# cpu_read: NAME=TICKS of each group a purchase is charged to.
cpu_read() {
    local servers workers
    servers=$(for n in single spread second wait; do pid_of "server-$n"; done)
    workers=$(for n in single spread second wait; do pid_of "worker-$n"; done)
    # shellcheck disable=SC2046,SC2086  # lists of pids
    echo "server=$(sum_ticks $servers) redis=$(sum_ticks "$single_redis_pid" $(master_pids))" \
        "replicas=$(sum_ticks $(replica_pids)) worker=$(sum_ticks $workers) pg=$(pg_ticks "$dir")" \
        "nginx=$(sum_ticks $(nginx_pids))"
}
# reserve_calls PORT: the reserve script's calls on a node so far.
reserve_calls() {
    redis-cli -p "$1" INFO commandstats | tr -d '\r' |
        awk -F'[=,:]' '/^cmdstat_(evalsha|eval):/ { s += $3 } END { print s + 0 }'
}

declare -A row
# run NAME PORT ITEMS: one wrk run; fills row[NAME:...].
run() {
    local name=$1 port=$2 items=$3 out=$dir/wrk-$1.txt before after calls_before=() m i n wrk_s kv total=0
    for m in "${masters[@]}"; do calls_before+=("$(reserve_calls "$m")"); done
    before=$(cpu_read)
    local TIMEFORMAT='%U %S'
    { time wrk -t"$threads" -c"$conns" -d"$duration" --latency -s loadtest/purchase.lua \
        "http://127.0.0.1:$port" -- "$items" "$((RANDOM * 100000 + 1))" >"$out"; } 2>"$out.time"
    after=$(cpu_read)
    n=$(awk '/requests in/ { print $1 }' "$out")
    row[$name:rps]=$(awk '/^Requests\/sec/ { printf "%.0f", $2 }' "$out")
    row[$name:p99]=$(awk '$1 == "99%" { v = $2; n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /[0-9]s$/) n *= 1000; printf "%.1f", n }' "$out")
    row[$name:non2xx]=$(awk '/Non-2xx/ { print $NF }' "$out")
    for kv in $after; do
        local k=${kv%%=*} b=${kv#*=} a
        a=$(echo "$before" | tr ' ' '\n' | awk -F= -v k="$k" '$1 == k { print $2 }')
        row[$name:$k]=$(awk -v a="$a" -v b="$b" -v n="$n" -v t="$tick_us" 'BEGIN { printf "%.1f", (n > 0 ? (b - a) * t / n : 0) }')
    done
    wrk_s=$(tail -n 1 "$out.time")
    row[$name:wrk]=$(awk -v u="${wrk_s% *}" -v s="${wrk_s#* }" -v n="$n" 'BEGIN { printf "%.1f", (n > 0 ? (u + s) * 1e6 / n : 0) }')
    local deltas=()
    for i in "${!masters[@]}"; do
        deltas+=($(($(reserve_calls "${masters[i]}") - calls_before[i])))
        total=$((total + deltas[i]))
    done
    row[$name:share]=$(for d in "${deltas[@]}"; do awk -v d="$d" -v t="$total" 'BEGIN { printf "%.0f%% ", (t > 0 ? 100 * d / t : 0) }'; done | sed 's/ $//; s/ / \/ /g')
    # On the single Redis the masters' calls are only the idle workers' chores.
    [[ $name != single ]] || row[$name:share]=-
    log "$name: ${row[$name:rps]} req/s, p99 ${row[$name:p99]} ms, masters ${row[$name:share]}"
}

cases=(single hot hot-2 hot-4 hot-8 spread spread-2 spread-wait)
progress_begin bench-cluster ${#cases[@]}
progress_step "single"
run single "$single_port" "$single_item"
progress_step "hot"
run hot "$spread_port" "$hot_item"
for k in 2 4 8; do
    progress_step "hot-$k"
    run "hot-$k" "$spread_port" "${segmented[$k]}"
done
progress_step "spread"
run spread "$spread_port" "$spread_items"
progress_step "spread-2"
run spread-2 "$nginx_port" "$spread_items"
progress_step "spread-wait"
run spread-wait "$wait_port" "$spread_items"
progress_end

# ---- the table -------------------------------------------------------------------------

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
declare -A what=(
    [single]="one server, single Redis (baseline)"
    [hot]="one server, cluster, one item (one master)"
    [hot-2]="one server, cluster, one item in 2 segments"
    [hot-4]="one server, cluster, one item in 4 segments"
    [hot-8]="one server, cluster, one item in 8 segments"
    [spread]="one server, cluster, 3 items on 3 masters"
    [spread-2]="nginx + two servers, cluster, 3 items"
    [spread-wait]="one server, cluster, 3 items, reserve_wait_replicas = auto (1)"
)
table() {
    echo "| case | req/s | ratio | p99 ms | server | Redis (masters) | replicas | worker | PostgreSQL | nginx | wrk | reserve calls by master |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    local c
    for c in "${cases[@]}"; do
        echo "| $c: ${what[$c]} | ${row[$c:rps]} | $(ratio "${row[$c:rps]}" "${row[single:rps]}") | ${row[$c:p99]} |" \
            "${row[$c:server]} | ${row[$c:redis]} | ${row[$c:replicas]} | ${row[$c:worker]} | ${row[$c:pg]} |" \
            "${row[$c:nginx]} | ${row[$c:wrk]} | ${row[$c:share]} |"
    done
}
when="$(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, wrk -t$threads -c$conns -d$duration"
echo
echo "bench-cluster ($when); CPU in microseconds a purchase"
table

if [[ ${BENCH_DOC:-1} != 0 ]]; then
    {
        echo "<!-- bench-cluster:begin (scripts/bench_cluster.sh writes this table) -->"
        echo "Measured $when. CPU in microseconds a purchase, of each group of processes."
        echo
        table
        echo "<!-- bench-cluster:end -->"
    } >"$dir/table.md"
    if grep -q '<!-- bench-cluster:begin' "$doc"; then
        awk -v f="$dir/table.md" '
            /<!-- bench-cluster:begin/ { while ((getline l < f) > 0) print l; skip = 1; next }
            /<!-- bench-cluster:end/ { skip = 0; next }
            !skip { print }' "$doc" >"$dir/doc.md" && cp "$dir/doc.md" "$doc"
    else
        { echo; cat "$dir/table.md"; } >>"$doc"
    fi
    {
        for c in "${cases[@]}"; do
            jq -n --arg case "$c" --arg what "${what[$c]}" --arg share "${row[$c:share]}" \
                --argjson rps "${row[$c:rps]}" --argjson p99 "${row[$c:p99]}" \
                --argjson server "${row[$c:server]}" --argjson redis "${row[$c:redis]}" \
                --argjson replicas "${row[$c:replicas]}" --argjson worker "${row[$c:worker]}" \
                --argjson pg "${row[$c:pg]}" --argjson nginx "${row[$c:nginx]}" --argjson wrk "${row[$c:wrk]}" \
                '{case: $case, what: $what, rps: $rps, p99_ms: $p99, reserve_calls_by_master: $share,
                  cpu_us_per_purchase: {server: $server, redis_masters: $redis, replicas: $replicas,
                  worker: $worker, postgresql: $pg, nginx: $nginx, wrk: $wrk}}'
        done
    } | jq -s --arg when "$when" '{measured: $when, cases: .}' >"$results_json"
    log "wrote $doc and $results_json"
    [[ ${RECORD:-0} == 1 ]] || log "the committed figures are unchanged: \`make bench-cluster RECORD=1\` records a run"
fi
status=0
