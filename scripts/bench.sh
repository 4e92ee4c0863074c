#!/usr/bin/env bash
# bench.sh: `make bench`: the purchase path against the HTTP ceiling of this machine (issue 3).
#
# Starts Redis, PostgreSQL, nginx, seckill-server and seckill-worker on free ports under
# run/bench-<pid>, runs the six measurements, prints a table, writes it into a copy of
# docs/PERFORMANCE.md under run/results/ (between the bench markers: the text around them stays)
# and stops what it started, by pid. RECORD=1 writes into docs/PERFORMANCE.md itself, and the
# JSON and the picture below into loadtest/results/ and docs/: the committed figures.
#   1 ceiling      nginx, 1 worker, a fixed 200 JSON; the same wrk settings as 2 and 3
#   1b health      GET /health: our HTTP layer alone, against the same ceiling
#   2 purchase     stock 10,000,000; every request a new buyer
#   3 sell-out     stock 1000, then purchases for the whole round; exactly 1000 must sell
#   4 drain        1,000,000 queued orders -> PostgreSQL by the worker, against a raw COPY
#   5 ab           ab -c 10000 -n 20000, anonymous buyers, stock 1000 (a per-buyer limit of 1000:
#                  seckill refuses anonymous buyers where the limit is below the stock)
#   6 memory       server RSS with 10,000 idle connections
# 1-3 (1b included) run in alternating rounds (BENCH_ROUNDS, default 3) so that drift on a shared machine hits
# all of them alike; medians are reported. BENCH_DURATION (10s), BENCH_CONNECTIONS (256),
# BENCH_THREADS (2), BENCH_DRAIN_ORDERS (1000000), BENCH_DRAIN_ROUNDS (3) change the sizes;
# BENCH_DOC=0 writes no document. BENCH_ONLY=rounds runs only 1-3 (and the strace) and
# prints their medians; BENCH_ONLY=drain only 4. BENCH_SERVER names another server binary (an older
# build) so that two builds can be compared by runs one right after the other. The worker drains during 1-3, as in production: its share of the cores and
# PostgreSQL's count. For 1b-3 the CPU each process spent a request (/proc/<pid>/stat before and
# after each round; wrk's own from bash's time) is reported, and after the rounds the syscalls a
# request of the server and of nginx (strace -c -f over a short run; BENCH_STRACE=0 skips it).
#
# It says where it is (step k of n, elapsed, about how long is left: scripts/progress.sh) on stderr,
# and besides the document writes the figures to bench.json and draws them (ratios to the
# ceiling, latency percentiles) into performance.svg (scripts/bench_plot.sh), in run/results/ (with
# RECORD=1: loadtest/results/bench.json, docs/performance.svg); BENCH_DOC=0 writes none of the three.
# `scripts/bench.sh --plot-only` redraws docs/performance.svg from the committed JSON without
# running anything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh
# shellcheck source=progress.sh
source scripts/progress.sh
# shellcheck source=cpu_ticks.sh
source scripts/cpu_ticks.sh

results_json=loadtest/results/bench.json
svg=docs/performance.svg
case ${1:-} in
'') ;;
--plot-only) exec scripts/bench_plot.sh "$results_json" "$svg" ;;
*) die "usage: scripts/bench.sh [--plot-only]" ;;
esac

rounds=${BENCH_ROUNDS:-3}
duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNECTIONS:-256}
threads=${BENCH_THREADS:-2}
drain_orders=${BENCH_DRAIN_ORDERS:-1000000}
doc=docs/PERFORMANCE.md
if [[ ${RECORD:-0} != 1 && ${BENCH_DOC:-1} != 0 ]]; then
    mkdir -p run/results
    cp "$doc" run/results/PERFORMANCE.md
    doc=run/results/PERFORMANCE.md results_json=run/results/bench.json svg=run/results/performance.svg
fi
dir=$PWD/run/bench-$$
token=bench-admin-token

scripts/deps.sh
[[ ${BENCH_STRACE:-1} == 0 ]] || scripts/deps.sh strace
[[ ${BENCH_DOC:-1} == 0 ]] || scripts/deps.sh jq gnuplot-nox # bench.json and its plot
scripts/build.sh >/dev/null

status=1
# shellcheck disable=SC2317  # only called by the EXIT trap
finish() {
    progress_break
    [[ -z ${idle_pid:-} ]] || kill -TERM "$idle_pid" 2>/dev/null || true
    stop_pid "$dir/worker.pid" seckill-worker
    stop_pid "$dir/server.pid" seckill-server
    stop_pid "$dir/nginx.pid" nginx
    services_stop "$dir"
    if ((status == 0)); then rm -rf "$(realpath -m "$dir")" "$dir"; else echo "bench: logs kept in $dir" >&2; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Ports below the ephemeral range (32768-60999 here): the 10,000 client connections of this
# bench and of other sessions cannot be sitting on them when a server binds.
low_port() {
    local p
    for _ in {1..100}; do
        p=$((20000 + RANDOM % 12000))
        [[ " $* " != *" $p "* ]] && port_free "$p" && echo "$p" && return 0
    done
    die "no free TCP port found in 20000-32000"
}
SECKILL_RUN_REDIS_PORT=$(low_port)
SECKILL_RUN_PG_PORT=$(low_port "$SECKILL_RUN_REDIS_PORT")
export SECKILL_RUN_REDIS_PORT SECKILL_RUN_PG_PORT
services_start "$dir" >/dev/null
dir=$(realpath "$dir")
# shellcheck source=/dev/null
source "$dir/env"
scripts/migrate.sh >/dev/null
redis=(redis-cli -h "$SECKILL_REDIS_HOST" -p "$SECKILL_REDIS_PORT")
psql=(psql "$SECKILL_PG_CONNINFO" -X -q -v ON_ERROR_STOP=1)

log() { progress_note "bench: $*"; }

# ---- the systems -----------------------------------------------------------------------

nginx_port=$(low_port "$SECKILL_RUN_REDIS_PORT" "$SECKILL_RUN_PG_PORT")
cat >"$dir/nginx.conf" <<CONF
# Generated by scripts/bench.sh: the HTTP ceiling, one worker answering a fixed 200 JSON.
worker_processes 1;
worker_rlimit_nofile 20000;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nginx_port;
        location / {
            default_type application/json;
            return 200 '{"status":"ok"}';
        }
    }
}
CONF
nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/nginx-error.log"
for _ in {1..50}; do [[ -s $dir/nginx.pid ]] && break; sleep 0.1; done
read -r nginx_master <"$dir/nginx.pid"
nginx_pid=$(awk '{ print $1 }' "/proc/$nginx_master/task/$nginx_master/children") # its one worker

server_port=$(low_port "$SECKILL_RUN_REDIS_PORT" "$SECKILL_RUN_PG_PORT" "$nginx_port")
export SECKILL_PORT=$server_port SECKILL_ADMIN_TOKEN=$token SECKILL_ALLOW_ANONYMOUS=true
export SECKILL_WORKER_ID=bench SECKILL_LOG_LEVEL=${SECKILL_LOG_LEVEL:-info}
# The laboratory on, as in `make run`: the figures are those of the server a developer runs.
export SECKILL_LAB=${SECKILL_LAB:-on}
# BENCH_SERVER: another server binary (an older build, to compare within one machine's hour).
"${BENCH_SERVER:-build/seckill-server}" >"$dir/server.log" 2>&1 &
echo $! >"$dir/server.pid"
server_pid=$!
read -r redis_pid <"$dir/redis.pid"
url=http://127.0.0.1:$server_port
for _ in {1..100}; do
    curl -sf "$url/health" >/dev/null && break
    sleep 0.1
done
curl -sf "$url/health" >/dev/null || { tail "$dir/server.log" >&2; die "the server did not start"; }
for _ in {1..100}; do curl -sf "http://127.0.0.1:$nginx_port/" >/dev/null && break; sleep 0.1; done

start_worker() {
    build/seckill-worker >>"$dir/worker.log" 2>&1 &
    echo $! >"$dir/worker.pid"
}

# item_create NAME STOCK [MEMBERS]: prints the new item's id; MEMBERS are more JSON members. No
# payment step: a load test's orders are final once persisted. Unlisted: never on the sale page.
# The buyers of wrk's rounds are named from 2^62 up (loadtest/purchase.lua), never a shop's.
item_create() {
    curl -sf -X POST -H "Authorization: Bearer $token" \
        -d "{\"name\":\"$1\",\"stock\":$2,\"payment_timeout_s\":0,\"listed\":false${3:+,$3}}" \
        "$url/api/v1/items" | sed -E 's/.*"id":([0-9]+).*/\1/'
}
item_field() { curl -sf "$url/api/v1/items/$1" | sed -E "s/.*\"$2\":(-?[0-9]+).*/\\1/"; }
item_reset() {
    curl -sf -X POST -H "Authorization: Bearer $token" -d "{\"stock\":$2}" \
        "$url/api/v1/items/$1/reset" >/dev/null
}

# ---- numbers ---------------------------------------------------------------------------

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# fmt N: N rounded, with thousands separators: 1,000,000.
fmt() { awk -v v="$1" 'BEGIN { printf "%.0f", v }' | sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta'; }
# wrk prints latencies as 512.00us, 7.60ms or 1.02s: milliseconds.
to_ms() {
    awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /[0-9]s$/) n *= 1000;
        printf "%.2f", n }'
}
now_ns() { date +%s%N; }

# pg_procs: "PID TICKS NAME" of the postmaster, each of its children, and "reaped" (cutime +
# cstime: children gone), for the drain's breakdown of PostgreSQL's CPU.
pg_procs() {
    local pm p
    read -r pm <"$dir/pg/postmaster.pid"
    awk '{ print "reaped", $16 + $17, "reaped" }' "/proc/$pm/stat"
    for p in $pm $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
        echo "$p $(ticks "$p") $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | awk '{ print $2 }')"
    done
}
# The processes whose CPU a round is charged: NAME=PID (pg: the PostgreSQL cluster).
cpu_procs() { echo "server=$server_pid redis=$redis_pid worker=$(cat "$dir/worker.pid") nginx=$nginx_pid pg=pg"; }
cpu_read() {
    local kv
    for kv in $(cpu_procs); do
        if [[ ${kv#*=} == pg ]]; then echo "${kv%%=*}=$(pg_ticks "$dir")"; else echo "${kv%%=*}=$(ticks "${kv#*=}")"; fi
    done
}

# fire DURATION URL [ITEM SEED]: wrk with the bench's settings. With an item, every
# request is a purchase of a new buyer; without, a plain GET of URL.
fire() {
    local d=$1 url=$2
    shift 2
    if (($# > 0)); then
        wrk -t"$threads" -c"$conns" -d"$d" --latency -s loadtest/purchase.lua "$url" -- "$@"
    else
        wrk -t"$threads" -c"$conns" -d"$d" --latency "$url"
    fi
}

# run_wrk NAME URL [ITEM SEED]: one round; appends rps, p50 and p99 to NAME's lists,
# and the CPU microseconds a request of each process to cpu[NAME:PROC].
declare -A rps p50 p99 errs cpu
run_wrk() {
    local name=$1 out=$dir/wrk-$1-$round.txt before after kv proc n wrk_s
    before=$(cpu_read)
    local TIMEFORMAT='%U %S'
    { time fire "$duration" "${@:2}" >"$out"; } 2>"$out.time"
    after=$(cpu_read)
    rps[$name]+="$(awk '/^Requests\/sec/ { print $2 }' "$out") "
    p50[$name]+="$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")") "
    p99[$name]+="$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")") "
    errs[$name]+="$(awk '/Socket errors/ { gsub(",", ""); s += $4 + $6 + $8 + $10 } END { print s + 0 }' "$out") "
    n=$(awk '/requests in/ { print $1 }' "$out")
    for kv in $after; do
        proc=${kv%%=*}
        cpu[$name:$proc]+="$(awk -v a="$(echo "$before" | awk -F= -v p="$proc" '$1 == p { print $2 }')" \
            -v b="${kv#*=}" -v n="$n" -v t="$tick_us" 'BEGIN { printf "%.1f", (n > 0 ? (b - a) * t / n : 0) }') "
    done
    wrk_s=$(tail -n 1 "$out.time")
    cpu[$name:wrk]+="$(awk -v u="${wrk_s% *}" -v s="${wrk_s#* }" -v n="$n" 'BEGIN { printf "%.1f", (n > 0 ? (u + s) * 1e6 / n : 0) }') "
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
log "server $url (pid $server_pid), nginx :$nginx_port, load average $load"

# ---- 4: worker drain against a raw COPY (the functions; run after 5, or alone) ----------

# The drain item's queue, pending hash and the worker's processing list for it: one slot's keys
# (service/common/keys.h); the item is created below, through the API, which registers it.
drain_keys() {
    queue="seckill:{item:$drainitem}:queue"
    pending="seckill:{item:$drainitem}:pending"
    processing="seckill:{item:$drainitem}:processing:$SECKILL_WORKER_ID"
}
base=1000000000000
# Orders in the queue format of service/common/order.h (what lua/reserve.lua writes), queued
# and recorded as pending like the reserve script does, 1000 per LPUSH (Lua's unpack limit).
fill_lua='local q, p, first, n = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
local batch, fields = {}, {}
for i = first, first + n - 1 do
  local o = string.format("{\"order_id\":\"%d\",\"item_id\":%s,\"user_id\":%d,\"round\":%s,\"created_ms\":%s}",
    i, ARGV[3], i, ARGV[4], ARGV[5])
  batch[#batch + 1] = o
  fields[#fields + 1] = tostring(i); fields[#fields + 1] = o
  if #batch == 1000 or i == first + n - 1 then
    redis.call("LPUSH", q, unpack(batch)); redis.call("HSET", p, unpack(fields))
    batch, fields = {}, {}
  end
end
return n'

# drain_fill: an empty orders table and empty queues, a checkpoint (neither the drain nor the
# COPY pays for the writes of what ran before it), then drain_orders orders queued. The orders
# the rounds and ab left in their items' queues go too: the worker drains every registered item,
# and the drain counts only its own.
drain_fill() {
    local i n queued id
    progress_step "4 drain: queueing $(fmt "$drain_orders") orders"
    for id in $("${redis[@]}" smembers seckill:items); do
        "${redis[@]}" del "seckill:{item:$id}:queue" "seckill:{item:$id}:pending" \
            "seckill:{item:$id}:processing:$SECKILL_WORKER_ID" >/dev/null
    done
    drain_keys
    "${redis[@]}" del "$queue" "$pending" "$processing" >/dev/null
    "${psql[@]}" -c "truncate orders" -c "checkpoint"
    for ((i = 0; i < drain_orders; i += 100000)); do
        n=$((drain_orders - i < 100000 ? drain_orders - i : 100000))
        "${redis[@]}" eval "$fill_lua" 2 "$queue" "$pending" $((base + i + 1)) "$n" \
            "$drainitem" "$drainround" "$created_ms" >/dev/null
    done
    queued=$("${redis[@]}" llen "$queue")
    [[ $queued == "$drain_orders" ]] || die "queued $queued orders instead of $drain_orders"
}

# drain_once K: one drain of a full queue by the K-th worker command of BENCH_WORKERS; appends its
# orders/s, the CPU microseconds an order of the worker, Redis and PostgreSQL, and the Redis
# commands a batch the worker sent (from INFO commandstats) to the drain_* lists of K.
declare -A drain_rates drain_cpu drain_calls
per_order() { awk -v c="$1" -v t="$tick_us" -v n="$drained" 'BEGIN { printf "%.2f", (n > 0 ? c * t / n : 0) }'; }
drain_once() {
    local k=$1 t0 t1 wpid w r0 r p0 p left s batches
    drain_fill
    if ((${#drain_workers[@]} > 1)); then
        progress_step "4 drain: worker $((k + 1)) of ${#drain_workers[@]}"
    else
        progress_step "4 drain: the worker"
    fi
    "${redis[@]}" config resetstat >/dev/null
    r0=$(ticks "$redis_pid") p0=$(pg_ticks "$dir")
    pg_procs >"$dir/pg-procs-before"
    t0=$(now_ns)
    # shellcheck disable=SC2086  # a command line: env assignments, then the binary
    env ${drain_workers[$k]} >>"$dir/worker.log" 2>&1 &
    wpid=$!
    echo "$wpid" >"$dir/worker.pid"
    # One redis-cli a tenth of a second: starting processes costs CPU the drain needs.
    while :; do
        left=$("${redis[@]}" eval "return redis.call('llen', KEYS[1]) + redis.call('llen', KEYS[2])" 2 "$queue" "$processing")
        ((left == 0)) && break
        sleep 0.1
    done
    t1=$(now_ns)
    w=$(ticks "$wpid") r=$(($(ticks "$redis_pid") - r0)) p=$(($(pg_ticks "$dir") - p0))
    # PostgreSQL's share by process: the worker's backend, the writers, autovacuum (reaped).
    pg_procs | awk -v t="$tick_us" -v n="$drain_orders" 'NR == FNR { b[$1] = $2; next }
        { d = $2 - b[$1]; if (d > 0) printf "%s %.2f, ", $3, d * t / n }' "$dir/pg-procs-before" - >"$dir/pg-procs"
    stop_pid "$dir/worker.pid" seckill-worker
    drained=$("${psql[@]}" -tAc "select count(*) from orders")
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    drain_rates[$k]+="$(awk -v n="$drained" -v s="$s" 'BEGIN { printf "%.0f", n / s }') "
    w=$(per_order "$w") r=$(per_order "$r") p=$(per_order "$p")
    drain_cpu[$k:worker]+="$w " drain_cpu[$k:redis]+="$r " drain_cpu[$k:pg]+="$p "
    batches=$(awk '/ stopped: / { for (i = 2; i <= NF; i++) if ($i == "batches,") b = $(i - 1) } END { print b + 0 }' "$dir/worker.log")
    drain_calls[$k]=$("${redis[@]}" info commandstats | awk -F'[_:=,]' -v b="$batches" '
        $1 == "cmdstat" && $2 ~ /^(blmove|lmove|evalsha|multi|lrange|set|del)$/ && b > 0 {
            printf "%s%s %.2f", (n++ ? ", " : ""), $2, $4 / b }')
    log "drain by '${drain_workers[$k]}': $drained orders in $s s, $batches batches; CPU us an order:" \
        "worker $w, Redis $r, PostgreSQL $p;" \
        "Redis calls a batch: ${drain_calls[$k]}; PostgreSQL by process: $(cat "$dir/pg-procs")"
    ((drained == drain_orders)) || die "drained $drained orders instead of $drain_orders"
}

# copy_once: the same rows, straight into the same table with COPY; appends its rows/s.
copy_rates=
copy_once() {
    local t0 t1 s p0 p
    progress_step "4 drain: raw COPY"
    "${psql[@]}" -c "truncate orders" -c "checkpoint"
    p0=$(pg_ticks "$dir")
    t0=$(now_ns)
    "${psql[@]}" -c "\\copy orders (id, item_id, user_id, round, created_at) from '$dir/orders.csv' with (format csv)"
    t1=$(now_ns)
    p=$(($(pg_ticks "$dir") - p0))
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    copy_rates+="$(awk -v n="$drain_orders" -v s="$s" 'BEGIN { printf "%.0f", n / s }') "
    log "COPY: $drain_orders rows in $s s; PostgreSQL CPU us a row: $(drained=$drain_orders per_order "$p")"
}

# drain_all: BENCH_DRAIN_ROUNDS rounds (default 3: a single drain is at the mercy of the noise;
# one run here said 0.44 of COPY where the median of three says 0.55), each a drain by every
# worker command of BENCH_WORKERS (comma-separated command lines, env assignments allowed; default
# the build's worker) and a COPY; the first worker's medians are row 4's figures.
drain_all() {
    local round k ts
    drainitem=$(item_create bench-drain 0)
    drainround=$("${psql[@]}" -tAc "select round from items where id = $drainitem")
    created_ms=$(($(date +%s) * 1000))
    ts=$(date -u -d "@$((created_ms / 1000))" '+%Y-%m-%d %H:%M:%S+00')
    awk -v b="$base" -v n="$drain_orders" -v item="$drainitem" -v r="$drainround" -v ts="$ts" \
        'BEGIN { for (i = 1; i <= n; i++) printf "%.0f,%d,%.0f,%d,%s\n", b + i, item, b + i, r, ts }' >"$dir/orders.csv"
    for ((round = 1; round <= drain_rounds; round++)); do
        for k in "${!drain_workers[@]}"; do drain_once "$k"; done
        copy_once
    done
    # shellcheck disable=SC2086
    copy_rate=$(median $copy_rates)
    copy_s=$(awk -v n="$drain_orders" -v r="$copy_rate" 'BEGIN { printf "%.2f", n / r }')
    for k in "${!drain_workers[@]}"; do
        # shellcheck disable=SC2086
        log "drain '${drain_workers[$k]}': orders/s ${drain_rates[$k]% } (median $(median ${drain_rates[$k]}):" \
            "$(ratio "$(median ${drain_rates[$k]})" "$copy_rate") of COPY's median $copy_rate; COPY rows/s ${copy_rates% });" \
            "CPU us an order, medians: worker $(median ${drain_cpu[$k:worker]}), Redis $(median ${drain_cpu[$k:redis]})," \
            "PostgreSQL $(median ${drain_cpu[$k:pg]})"
    done
    # shellcheck disable=SC2086
    drain_rate=$(median ${drain_rates[0]})
    drain_s=$(awk -v n="$drain_orders" -v r="$drain_rate" 'BEGIN { printf "%.2f", n / r }')
}


# ---- the steps, counted up front for the progress line -------------------------------------

# Each step's nominal seconds: a wrk round lasts its duration plus about two seconds of
# bookkeeping; the others as long as they took on this 2-core machine, the drain's scaled to
# BENCH_DRAIN_ORDERS. The estimate of what is left scales them by how the finished steps compared
# with theirs.
dur_s=$(awk -v v="$duration" 'BEGIN { n = v + 0; if (v ~ /m$/) n *= 60; else if (v ~ /h$/) n *= 3600
    printf "%d", (n < 1 ? 1 : n + 0.5) }')
per_million() { awk -v s="$1" -v n="$drain_orders" 'BEGIN { v = s * n / 1e6; printf "%d", (v < 1 ? 1 : v + 0.5) }'; }
steps=(6) # memory
for ((round = 1; round <= rounds; round++)); do steps+=($((dur_s + 2)) $((dur_s + 2)) $((dur_s + 2)) $((dur_s + 2)) $((dur_s + 2))); done
[[ ${BENCH_STRACE:-1} != 1 ]] || steps+=(4 4 4)
IFS=, read -r -a drain_workers <<<"${BENCH_WORKERS:-build/seckill-worker}"
drain_rounds=${BENCH_DRAIN_ROUNDS:-3}
drain_steps=()
for ((round = 1; round <= drain_rounds; round++)); do
    for _ in "${drain_workers[@]}"; do drain_steps+=("$(per_million 20)" "$(per_million 27)"); done # queue, drain
    drain_steps+=("$(per_million 10)")                                                               # COPY
done
case ${BENCH_ONLY:-} in
'') steps+=(5 "${drain_steps[@]}") ;; # ab, then the drain
rounds) ;;
drain)
    progress_begin_timed bench "${drain_steps[@]}"
    drain_all
    progress_end
    status=0
    exit 0
    ;;
*) die "BENCH_ONLY: '$BENCH_ONLY' is neither drain nor rounds" ;;
esac
progress_begin_timed bench "${steps[@]}"

# ---- 6: memory with 10,000 idle connections (first: the server is fresh) --------------

progress_step "memory: 10,000 idle connections"
cc -O2 -std=c11 -D_GNU_SOURCE -o "$dir/idle_conns" loadtest/idle_conns.c
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$server_pid/status"; }
established() { ss -Htn state established "( sport = :$server_port )" | wc -l; }
rss_idle=$(rss_kib)
(ulimit -n 20000 && exec "$dir/idle_conns" 127.0.0.1 "$server_port" 10000) >"$dir/idle.out" 2>"$dir/idle.err" &
idle_pid=$!
for _ in {1..300}; do [[ -s $dir/idle.out ]] && break; sleep 0.1; done
sleep 1
mem_conns=$(established)
rss_conns=$(rss_kib)
kill -TERM "$idle_pid" 2>/dev/null || true
wait "$idle_pid" 2>/dev/null || true
idle_pid=
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
log "memory: RSS $(mib "$rss_idle") MiB idle, $(mib "$rss_conns") MiB with $mem_conns connections open"
sleep 1 # let the server close them

# ---- 1-3: ceiling, purchase, sell-out and pre-start storms in alternating rounds -------

big=$(item_create bench-big 10000000)
storm=$(item_create bench-storm 1000)
# A sale that opens in an hour: every buyer of the pre-start storm is early.
upcoming=$(item_create bench-upcoming 1000 "\"starts_at\":\"$(date -u -d '+1 hour' '+%Y-%m-%dT%H:%M:%SZ')\"")
storm_sold=()
start_worker # draining what the rounds sell, as in production
for ((round = 1; round <= rounds; round++)); do
    progress_step "round $round of $rounds: 1 ceiling (nginx)"
    run_wrk ceiling "http://127.0.0.1:$nginx_port" "$big" 1
    progress_step "round $round of $rounds: 1b GET /health"
    run_wrk health "$url/health"
    progress_step "round $round of $rounds: 2 purchase"
    run_wrk purchase "$url" "$big" $((round * 100000000 + 1))
    progress_step "round $round of $rounds: 3 sell-out storm"
    item_reset "$storm" 1000
    sleep 0.2 # the reset's announcement clears the sold-out flag
    run_wrk storm "$url" "$storm" $((round * 100000000 + 1))
    storm_sold+=("$(item_field "$storm" sold)")
    progress_step "round $round of $rounds: 3b pre-start storm"
    run_wrk prestart "$url" "$upcoming" $((round * 100000000 + 1))
    log "round $round: ceiling $(echo "${rps[ceiling]}" | awk "{ print \$NF }"), health $(echo "${rps[health]}" | awk '{ print $NF }'), purchase $(echo "${rps[purchase]}" | awk '{ print $NF }')," \
        "sell-out $(echo "${rps[storm]}" | awk '{ print $NF }'), sold ${storm_sold[-1]}," \
        "pre-start $(echo "${rps[prestart]}" | awk '{ print $NF }')"
done
declare -A med_rps med_p50 med_p99 med_cpu
for n in ceiling health purchase storm prestart; do
    # shellcheck disable=SC2086
    med_rps[$n]=$(median ${rps[$n]}) med_p50[$n]=$(median ${p50[$n]}) med_p99[$n]=$(median ${p99[$n]})
    for p in server redis worker pg nginx wrk; do
        # shellcheck disable=SC2086
        med_cpu[$n:$p]=$(median ${cpu[$n:$p]})
    done
done
stop_pid "$dir/worker.pid" seckill-worker

# ---- syscalls a request: strace -c -f over a short run of each ---------------------------

# strace_run NAME PID URL [ITEM SEED]: prints the syscalls a request of PID.
strace_run() {
    local name=$1 pid=$2 out=$dir/strace-$1.txt n
    strace -c -f -q -p "$pid" -o "$out" &
    local spid=$!
    sleep 0.5
    fire 3s "${@:3}" >"$dir/wrk-strace-$name.txt"
    kill -INT "$spid"
    wait "$spid" 2>/dev/null || true
    n=$(awk '/requests in/ { print $1 }' "$dir/wrk-strace-$name.txt")
    awk -v n="$n" '$NF == "total" { printf "%.1f", (n > 0 ? $4 / n : 0) }' "$out"
}
declare -A sys
if [[ ${BENCH_STRACE:-1} == 1 ]]; then
    progress_step "syscalls a request: strace of nginx"
    sys[ceiling]=$(strace_run ceiling "$nginx_pid" "http://127.0.0.1:$nginx_port")
    progress_step "syscalls a request: strace of the server, GET /health"
    sys[health]=$(strace_run health "$server_pid" "$url/health")
    progress_step "syscalls a request: strace of the server, purchase"
    sys[purchase]=$(strace_run purchase "$server_pid" "$url" "$big" 900000001)
    log "syscalls a request: nginx ${sys[ceiling]}, /health ${sys[health]}, purchase ${sys[purchase]}"
fi
sold_ok=yes
for s in "${storm_sold[@]}"; do [[ $s == 1000 ]] || sold_ok=no; done
early_sold=$(item_field "$upcoming" sold)
if [[ ${BENCH_ONLY:-} == rounds ]]; then
    for n in ceiling health purchase storm prestart; do
        log "$n: req/s ${med_rps[$n]} ($(ratio "${med_rps[$n]}" "${med_rps[ceiling]}") of the ceiling)," \
            "p50 ${med_p50[$n]} ms, p99 ${med_p99[$n]} ms; CPU us a request: server ${med_cpu[$n:server]}," \
            "Redis ${med_cpu[$n:redis]}, worker ${med_cpu[$n:worker]}, PostgreSQL ${med_cpu[$n:pg]}, wrk ${med_cpu[$n:wrk]}"
    done
    log "sell-out storms sold: ${storm_sold[*]}; sold before the start: $early_sold"
    progress_end
    status=0
    exit 0
fi

# ---- 5: the documents' ab run --------------------------------------------------------

progress_step "5 ab -c 10000 -n 20000"
ab_stock=1000
abitem=$(item_create bench-ab $ab_stock "\"per_buyer_limit\":$ab_stock")
: >"$dir/empty"
(ulimit -n 20000 && exec ab -q -r -c 10000 -n 20000 -s 30 -p "$dir/empty" -T application/json \
    "$url/api/v1/items/$abitem/purchase") >"$dir/ab.txt" 2>&1 || true
ab_time=$(awk '/^Time taken for tests/ { print $5 }' "$dir/ab.txt")
# ab counts as "failed" every response whose length differs from the first one's (Length):
# order ids and remaining counts make ours differ. Connect, Receive and Exceptions are the
# real failures.
ab_failed=$(awk -F'[:,)]' '/\(Connect:/ { print $2 + $4 + $8 }' "$dir/ab.txt")
ab_failed=${ab_failed:-$(awk '/^Failed requests/ { print $3 }' "$dir/ab.txt")}
ab_non2xx=$(awk '/^Non-2xx/ { print $3 }' "$dir/ab.txt")
ab_complete=$(awk '/^Complete requests/ { print $3 }' "$dir/ab.txt")
ab_sold=$(item_field "$abitem" sold)
ab_oversold=$((ab_sold - ab_stock))
log "ab: ${ab_time:-?} s, ${ab_complete:-?} complete, ${ab_failed:-?} failed, sold $ab_sold (oversold $ab_oversold)"

# ---- 4: worker drain against a raw COPY ------------------------------------------------

drain_all
progress_end

# ---- the table -------------------------------------------------------------------------

pass() { if awk "BEGIN { exit !($1) }"; then echo yes; else echo "**no**"; fi; }
r_health=$(ratio "${med_rps[health]}" "${med_rps[ceiling]}")
r_purchase=$(ratio "${med_rps[purchase]}" "${med_rps[ceiling]}")
r_storm=$(ratio "${med_rps[storm]}" "${med_rps[ceiling]}")
r_prestart=$(ratio "${med_rps[prestart]}" "${med_rps[ceiling]}")
r_copy=$(ratio "$drain_rate" "$copy_rate")
table=$(
    cat <<TABLE
| # | measurement | result | target | met |
|---|---|---|---|---|
| 1 | ceiling: nginx, 1 worker, fixed 200 JSON | $(fmt "${med_rps[ceiling]}") req/s, p50 ${med_p50[ceiling]} ms, p99 ${med_p99[ceiling]} ms | - | - |
| 1b | GET /health: our HTTP layer alone | $(fmt "${med_rps[health]}") req/s (**$r_health** of the ceiling), p50 ${med_p50[health]} ms, p99 ${med_p99[health]} ms | >= 0.8 | $(pass "$r_health >= 0.8") |
| 2 | purchase, stock 10,000,000, $conns connections, the worker draining | $(fmt "${med_rps[purchase]}") req/s (**$r_purchase** of the ceiling), p50 ${med_p50[purchase]} ms, p99 ${med_p99[purchase]} ms | >= 0.5, p99 <= 10 ms | $(pass "$r_purchase >= 0.5 && ${med_p99[purchase]} <= 10") |
| 3 | sell-out storm, stock 1000 | $(fmt "${med_rps[storm]}") req/s (**$r_storm** of the ceiling), p99 ${med_p99[storm]} ms; sold per round: ${storm_sold[*]} | >= 0.9, exactly 1000 sold | $(pass "$r_storm >= 0.9 && \"$sold_ok\" == \"yes\"") |
| 3b | pre-start storm: every buyer before the start | $(fmt "${med_rps[prestart]}") req/s (**$r_prestart** of the ceiling), p99 ${med_p99[prestart]} ms; sold before the start: $early_sold | >= 0.9, nothing sold | $(pass "$r_prestart >= 0.9 && $early_sold == 0") |
| 4 | worker drain, $(fmt "$drain_orders") orders | $(fmt "$drain_rate") orders/s ($drain_s s, $drained rows); raw COPY $(fmt "$copy_rate") rows/s ($copy_s s): **$r_copy** | >= 100,000/s, >= 0.5 of COPY | $(pass "$drain_rate >= 100000 && $r_copy >= 0.5 && $drained == $drain_orders") |
| 5 | ab -c 10000 -n 20000, stock $ab_stock | ${ab_time:-?} s, ${ab_failed:-?} failed, ${ab_complete:-?} complete (${ab_non2xx:-0} answered 409 sold_out), sold $ab_sold, oversold $ab_oversold | < 3 s, 0 failed, 0 oversold | $(pass "${ab_time:-999} < 3 && ${ab_failed:-1} == 0 && $ab_oversold == 0 && ${ab_complete:-0} == 20000") |
| 6 | server RSS, 10,000 idle connections | $(mib "$rss_conns") MiB with $mem_conns open ($(mib "$rss_idle") MiB before) | <= 64 MiB | $(pass "$rss_conns <= 65536 && $mem_conns >= 10000") |
TABLE
)
cpu_row() {
    local n=$1 p all=0 row="| $2 |"
    for p in server redis worker pg nginx wrk; do
        row+=" ${med_cpu[$n:$p]} |"
        all=$(awk -v a="$all" -v b="${med_cpu[$n:$p]}" 'BEGIN { print a + b }')
    done
    echo "$row **$all** | ${sys[$n]:--} |"
}
cpu_table=$(
    cat <<TABLE
| round (CPU microseconds a request, medians) | server | Redis | worker | PostgreSQL | nginx | wrk | all | syscalls a request (server; nginx for 1) |
|---|---|---|---|---|---|---|---|---|
$(cpu_row ceiling "1 ceiling (nginx)")
$(cpu_row health "1b GET /health")
$(cpu_row purchase "2 purchase")
$(cpu_row storm "3 sell-out storm")
$(cpu_row prestart "3b pre-start storm")
TABLE
)
rounds_detail=$(
    for n in ceiling health purchase storm prestart; do
        echo "- $n: req/s ${rps[$n]% }; p50 ms ${p50[$n]% }; p99 ms ${p99[$n]% }; socket errors ${errs[$n]% }"
    done
)
echo
echo "$table"
echo
echo "$cpu_table"
echo
echo "$rounds_detail"

# ---- loadtest/results/bench.json, docs/performance.svg ------------------------------------

# num V: V as a JSON number, null when it is none (a figure the run could not read).
num() { if [[ $1 =~ ^-?[0-9]+([.][0-9]+)?$ ]]; then echo "$1"; else echo null; fi; }
# round_list "A B C ": the rounds' values as a JSON array.
round_list() { jq -cn --arg s "$1" '$s | split(" ") | map(select(. != "") | tonumber)'; }
# wrk_case NAME LABEL TARGET: one wrk measurement (TARGET: the ratio to the ceiling it should reach).
wrk_case() {
    local n=$1 p cpu_json='{}'
    for p in server redis worker pg nginx wrk; do
        cpu_json=$(jq -c --arg p "$p" --argjson v "$(num "${med_cpu[$n:$p]}")" '. + {($p): $v}' <<<"$cpu_json")
    done
    jq -cn --arg name "$n" --arg what "$2" --argjson target "$3" \
        --argjson rps "$(num "${med_rps[$n]}")" --argjson p50 "$(num "${med_p50[$n]}")" \
        --argjson p99 "$(num "${med_p99[$n]}")" --argjson ratio "$(num "$(ratio "${med_rps[$n]}" "${med_rps[ceiling]}")")" \
        --argjson r_rps "$(round_list "${rps[$n]}")" --argjson r_p50 "$(round_list "${p50[$n]}")" \
        --argjson r_p99 "$(round_list "${p99[$n]}")" --argjson r_errs "$(round_list "${errs[$n]}")" \
        --argjson cpu "$cpu_json" --argjson sys "$(num "${sys[$n]:-}")" '{
            name: $name, label: $what, requests_per_s: $rps, p50_ms: $p50, p99_ms: $p99,
            ratio_to_ceiling: $ratio, target_ratio: $target,
            rounds: {requests_per_s: $r_rps, p50_ms: $r_p50, p99_ms: $r_p99, socket_errors: $r_errs},
            cpu_us_a_request: $cpu, syscalls_a_request: $sys}'
}

if [[ ${BENCH_DOC:-1} == 1 ]]; then
    cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
    mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
    os=$(. /etc/os-release && echo "$PRETTY_NAME")
    when=$(date -u '+%Y-%m-%d %H:%M UTC')
    # Changes to what this run writes do not count as local changes of the code measured.
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
    local_changes=false
    git diff --quiet -- . ":!$doc" ":!$svg" ":!$results_json" 2>/dev/null || local_changes=true
    mkdir -p "$(dirname "$results_json")"
    {
        for c in "ceiling|1 ceiling (nginx)|null" "health|1b GET /health|0.8" "purchase|2 purchase|0.5" \
            "storm|3 sell-out storm|0.9" "prestart|3b pre-start storm|0.9"; do
            IFS='|' read -r n label target <<<"$c"
            wrk_case "$n" "$label" "$target"
        done
    } | jq -s --arg date "$when" --arg commit "$commit" --argjson local_changes "$local_changes" \
        --argjson cpus "$(nproc)" --arg cpu "$cpu_model" --arg mem "$mem" --arg os "$os" --arg kernel "$(uname -r)" \
        --arg load "$load" --argjson rounds "$rounds" --arg duration "$duration" --argjson conns "$conns" \
        --argjson threads "$threads" --argjson drain_orders "$drain_orders" --argjson drain_rounds "$drain_rounds" \
        --argjson r_drain "$(round_list "${drain_rates[0]}")" --argjson r_copy_rates "$(round_list "$copy_rates")" \
        --argjson drain_rate "$(num "$drain_rate")" --argjson drain_s "$(num "$drain_s")" \
        --argjson drained "$(num "$drained")" --argjson copy_rate "$(num "$copy_rate")" \
        --argjson copy_s "$(num "$copy_s")" --argjson r_copy "$(num "$r_copy")" \
        --argjson ab_s "$(num "${ab_time:-}")" --argjson ab_failed "$(num "${ab_failed:-}")" \
        --argjson ab_complete "$(num "${ab_complete:-}")" --argjson ab_non2xx "$(num "${ab_non2xx:-0}")" \
        --argjson ab_sold "$(num "$ab_sold")" --argjson ab_oversold "$(num "$ab_oversold")" \
        --argjson ab_stock "$ab_stock" \
        --argjson rss_idle "$(num "$rss_idle")" --argjson rss_conns "$(num "$rss_conns")" \
        --argjson mem_conns "$(num "$mem_conns")" '{
            date: $date, commit: $commit, local_changes: $local_changes,
            machine: {cpus: $cpus, cpu: $cpu, memory: $mem, os: $os, kernel: $kernel, load_average: $load},
            settings: {rounds: $rounds, duration: $duration, connections: $conns, threads: $threads,
                       drain_orders: $drain_orders, drain_rounds: $drain_rounds},
            wrk: .,
            drain: {orders: $drain_orders, rows: $drained, orders_per_s: $drain_rate, seconds: $drain_s,
                    copy_rows_per_s: $copy_rate, copy_seconds: $copy_s, ratio_to_copy: $r_copy,
                    target_ratio: 0.5, target_orders_per_s: 100000,
                    rounds: {orders_per_s: $r_drain, copy_rows_per_s: $r_copy_rates}},
            ab: {concurrency: 10000, requests: 20000, stock: $ab_stock, seconds: $ab_s, failed: $ab_failed,
                 complete: $ab_complete, sold_out_answers: $ab_non2xx, sold: $ab_sold, oversold: $ab_oversold},
            memory: {connections: $mem_conns, rss_kib: $rss_conns, rss_idle_kib: $rss_idle, target_kib: 65536}}' \
        >"$results_json"
    log "wrote $results_json"
    scripts/bench_plot.sh "$results_json" "$svg"
    section=$(
        cat <<DOC
<!-- bench:begin (written by scripts/bench.sh; edit outside the markers) -->
## Latest run

$when, commit $commit$([[ $local_changes == false ]] || echo ' + local changes');
machine: $(nproc) cores ($cpu_model), $mem, $os, kernel $(uname -r);
load average at the start: $load. Medians of $rounds alternating rounds of $duration each.

$table

![The same run drawn: each measurement's ratio to the ceiling beside its target, and the latency percentiles of every wrk measurement](performance.svg)

The figures of the run, rounds and CPU included: [loadtest/results/bench.json](../loadtest/results/bench.json)
(\`scripts/bench.sh --plot-only\` redraws the picture from it).

Where the CPU goes (every process of the machine that takes part; the worker drains meanwhile):

$cpu_table

Rounds:
$rounds_detail

Commands (ports are free ones chosen per run; every wrk request is a new buyer):

\`\`\`sh
make bench                          # = scripts/bench.sh
wrk -t$threads -c$conns -d$duration --latency -s loadtest/purchase.lua http://127.0.0.1:NGINX -- ITEM SEED
wrk -t$threads -c$conns -d$duration --latency http://127.0.0.1:SERVER/health
wrk -t$threads -c$conns -d$duration --latency -s loadtest/purchase.lua http://127.0.0.1:SERVER -- BIG_ITEM SEED
wrk -t$threads -c$conns -d$duration --latency -s loadtest/purchase.lua http://127.0.0.1:SERVER -- STORM_ITEM SEED  # after reset to 1000
ab -q -r -c 10000 -n 20000 -s 30 -p EMPTY_FILE -T application/json http://127.0.0.1:SERVER/api/v1/items/ITEM/purchase
idle_conns 127.0.0.1 SERVER 10000   # loadtest/idle_conns.c; then VmRSS of /proc/<server>/status
strace -c -f -p SERVER_PID & wrk -t$threads -c$conns -d3s ...   # syscalls a request: strace's total / wrk's requests
redis-cli EVAL <LPUSH of $drain_orders orders in the queue format> ...; seckill-worker; until LLEN queue + processing = 0
psql -c "\\copy orders (id, item_id, user_id, round, created_at) from 'orders.csv' with (format csv)"
\`\`\`
<!-- bench:end -->
DOC
    )
    mkdir -p docs
    if [[ -f $doc ]] && grep -q '^<!-- bench:begin' "$doc"; then
        SECTION=$section awk '
            /^<!-- bench:begin/ { print ENVIRON["SECTION"]; skip = 1; next }
            /^<!-- bench:end/ { skip = 0; next }
            !skip { print }' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
    else
        {
            if [[ -f $doc ]]; then cat "$doc"; else echo "# Performance"; fi
            printf '\n%s\n' "$section"; } >"$doc.tmp" && mv "$doc.tmp" "$doc"
    fi
    log "wrote $doc"
    [[ ${RECORD:-0} == 1 ]] || log "the committed figures are unchanged: \`make bench RECORD=1\` records a run"
fi
status=0
