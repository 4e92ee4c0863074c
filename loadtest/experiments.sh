#!/usr/bin/env bash
# experiments.sh: `make experiments`: the oversell laboratory under load, every strategy (or
# STRATEGY=name) against its own Redis, PostgreSQL, server and worker under run/experiments-<pid>;
# writes loadtest/results/experiments.{md,json} and a plot (.png, .svg) of requests/s and oversold
# units per strategy. Exits 1 when a strategy's verdict differs from the documents'.
#
# Each strategy gets two runs on the same item, each after a reset of the item:
#  1. load: REQUESTS requests (default 20000) at CONCURRENCY (200) with ab on a stock of STOCK
#     (5000, as document 003), DELAY_MS (0) of business work: requests/s, latency, oversell;
#  2. race: RACE_BUYERS (50) buyers at once on RACE_STOCK (10) units with RACE_DELAY_MS (100, as
#     document 000's doSomeThing()) of work inside the critical section, which opens the race
#     windows of the documents on purpose: the verdict "oversells" comes from either run.
# REPLAY_000=1 replays document 000's load instead of 1.: ab -c 10000 -n 20000.
#
# SCENARIO=name runs one of the documents' lock failure scenarios instead (its own server settings),
# writes loadtest/results/scenario-<name>.md and exits 0 only when our verdict is the documents':
#  lock_expiry   8 buyers on 2 units, 500 ms of work under a lock of 200 ms: redis_lock lets
#                two holders sell (oversells); redis_lock_fenced (stale writes refused, 409
#                fenced) and redis_lock_reentrant (the watchdog renews the lease) never oversell.
#  wrong_unlock  A works 1.2 s under a lock of 1 s, B takes it when it expires, A unlocks at 1.2 s:
#                redis_lock_setnx_expire's DEL frees B's lock; redis_lock's compare-and-delete not.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=../scripts/services.sh
source scripts/services.sh

STOCK=${STOCK:-5000}
REQUESTS=${REQUESTS:-20000}
CONCURRENCY=${CONCURRENCY:-200}
DELAY_MS=${DELAY_MS:-0}
RACE_STOCK=${RACE_STOCK:-10}
RACE_BUYERS=${RACE_BUYERS:-50}
RACE_DELAY_MS=${RACE_DELAY_MS:-100}
if [[ ${REPLAY_000:-0} == 1 ]]; then
    REQUESTS=20000 CONCURRENCY=10000
fi
token=experiments-admin-token
results=loadtest/results
dir=$PWD/run/experiments-$$

# What the documents found (EXPERIMENTS.md): their verdict and their figure.
declare -A doc_verdict=(
    [local_unsafe]=oversells [local_atomic_check]=oversells [db_read_modify_write]=oversells
    [redis_read_check_decr]=oversells)
declare -A doc_figure=(
    [local_unsafe]="oversells (000 /v3/seckill)"
    [local_atomic_check]="oversells (000 /v2/seckill, LongAdder)"
    [local_mutex]="ReentrantLock 550+/s, synchronized 520+/s; oversells on 2 instances (003)"
    [db_read_modify_write]="2000+/s, oversells (003)"
    [db_single_update]="1950+/s, fastest DB method (003)"
    [db_for_update]="600+/s (003)"
    [db_optimistic]="230+/s, slowest under contention (003)"
    [redis_read_check_decr]="2000+/s, warm 3200+/s, oversells (003)"
    [redis_watch]="370+/s (003)"
    [redis_lock_setnx_expire]="deadlock after a crash between SETNX and EXPIRE (002, 004)"
    [redis_lock_getset]="184 req/s at ab -c 10000 -n 20000; leaves a lock key (000)"
    [redis_lock]="550-620/s (003)"
    [pg_lock_table]="slowest lock (003)"
    [segmented]="600 orders/s as 120 segments x 5/s (001)"
    [lua_reserve]="fastest by far (000, 002)"
    [redis_lock_fenced]="correct; fencing tokens stop a holder whose lock expired (Kleppmann, 004)"
    [redis_lock_reentrant]="600/s; Redisson 870/s; survives a holder slower than the TTL (001, 003)"
    [redlock]="correct while a majority is up (003, 004)"
    [pg_advisory]="(not in the documents: PostgreSQL's advisory lock)")
case ${SCENARIO:-} in
'') ;;
lock_expiry) export SECKILL_LAB_LOCK_TTL_MS=200 ;;
wrong_unlock) export SECKILL_LAB_LOCK_TTL_MS=1000 ;;
*) die "no scenario '$SCENARIO'; there are: lock_expiry wrong_unlock" ;;
esac

scripts/deps.sh jq gnuplot-nox
scripts/build.sh

server_pid='' worker_pid='' done=0
# The run folder (logs) is removed after a complete run, kept after a broken one.
# shellcheck disable=SC2317  # only called by the EXIT trap
finish() {
    local pid
    for pid in $server_pid $worker_pid; do
        if kill -TERM "$pid" 2>/dev/null; then wait "$pid" || true; fi
    done
    services_stop "$dir"
    if ((done)); then rm -rf "$(realpath -m "$dir")" "$dir"; else echo "experiments: logs kept in $dir" >&2; fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

services_start "$dir"
# shellcheck source=/dev/null
source "$dir/env"
scripts/migrate.sh
port=$(free_port)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
export SECKILL_PORT=$port SECKILL_ADMIN_TOKEN=$token SECKILL_LOG_LEVEL=warn
build/seckill-server >"$dir/server.log" 2>&1 &
server_pid=$!
build/seckill-worker >"$dir/worker.log" 2>&1 &
worker_pid=$!
base=http://127.0.0.1:$port
for _ in {1..100}; do
    curl -fs "$base/ready" >/dev/null && break
    sleep 0.1
done
curl -fs "$base/ready" >/dev/null || die "the server did not start (log: $dir/server.log)"

item=$(curl -fsS -X POST -H "Authorization: Bearer $token" \
    -d "{\"name\":\"experiments\",\"stock\":$STOCK}" "$base/api/v1/items" | jq .id)
strategies=$(curl -fsS "$base/api/v1/experiments" | jq -r '.strategies[] | .name')
if [[ -n ${STRATEGY:-} ]]; then
    grep -qxF -- "$STRATEGY" <<<"$strategies" || die "no strategy '$STRATEGY'; there are: $strategies"
    strategies=$STRATEGY
fi

reset_item() {
    curl -fsS -X POST -H "Authorization: Bearer $token" -d "{\"stock\":$1}" \
        "$base/api/v1/items/$item/reset" >/dev/null
}

# load STRATEGY STOCK REQUESTS CONCURRENCY DELAY: resets the item, runs ab, prints ab's report.
load() {
    reset_item "$2"
    ab -q -r -s 120 -n "$3" -c "$4" \
        "$base/api/v1/experiments/$1/purchase?item=$item&delay_ms=$5" 2>&1 || true
}

# ab_field REPORT PATTERN COLUMN: a number out of ab's report (0 when absent).
ab_field() {
    awk -v p="$2" -v c="$3" 'index($0, p) == 1 { print $c; found = 1; exit } END { if (!found) print 0 }' <<<"$1"
}

# Orders of the item in PostgreSQL, once the worker has drained what Redis accepted.
orders_in_pg() {
    local n pending
    for _ in {1..600}; do
        pending=$(redis-cli -h 127.0.0.1 -p "$SECKILL_REDIS_PORT" HLEN seckill:pending)
        ((pending == 0)) && break
        sleep 0.1
    done
    n=$(psql "$SECKILL_PG_CONNINFO" -XtAc "select count(*) from orders where item_id = $item")
    echo "$n"
}

# buy STRATEGY DELAY: one purchase; prints "<status> <body>".
buy() {
    curl -s -o /dev/stdout -w ' %{http_code}' "$base/api/v1/experiments/$1/purchase?item=$item&delay_ms=$2" |
        awk '{ status = $NF; $NF = ""; print status, $0 }'
}

scenario_lock_expiry() {
    local s out sold fenced oversold verdict expected ok=0 i
    echo "| strategy | buyers | sold / stock | 409 fenced | oversold | ours | documents |"
    echo "|---|---:|---:|---:|---:|---|---|"
    for s in redis_lock redis_lock_fenced redis_lock_reentrant; do
        reset_item 2
        out=$(for i in {1..8}; do buy "$s" 500 & done; wait)
        sold=$(grep -c '^200 ' <<<"$out" || true)
        fenced=$(grep -c '"fenced"' <<<"$out" || true)
        oversold=$(curl -fsS "$base/api/v1/experiments/$s/audit?item=$item" | jq .oversold)
        verdict=safe expected=safe
        ((oversold > 0)) && verdict=oversells
        [[ $s == redis_lock ]] && expected=oversells
        [[ $verdict == "$expected" ]] || ok=1
        echo "| \`$s\` | 8 | $sold / 2 | $fenced | $oversold | $verdict | $expected |"
    done
    return "$ok"
}

scenario_wrong_unlock() {
    local s key exists verdict expected ok=0 a b
    echo "| strategy | B's lock while B works, after A's unlock | ours | documents |"
    echo "|---|---|---|---|"
    for s in redis_lock_setnx_expire redis_lock; do
        reset_item 10
        key="{item:$item}:lab:lock:$s"
        buy "$s" 1200 >/dev/null &
        a=$!
        sleep 0.3
        buy "$s" 1500 >/dev/null &
        b=$!
        # A answers right after its unlock; B's lock (taken at ~1 s) lasts until ~2 s.
        wait "$a"
        exists=$(redis-cli -h 127.0.0.1 -p "$SECKILL_REDIS_PORT" EXISTS "$key")
        wait "$b"
        verdict="kept" expected="kept"
        ((exists == 1)) || verdict="freed by A"
        [[ $s == redis_lock_setnx_expire ]] && expected="freed by A"
        [[ $verdict == "$expected" ]] || ok=1
        echo "| \`$s\` | $verdict | $([[ $verdict == "$expected" ]] && echo agrees || echo DIFFERS) | $expected |"
    done
    return "$ok"
}

mkdir -p "$results"
if [[ -n ${SCENARIO:-} ]]; then
    status=0
    {
        echo "# Scenario $SCENARIO"
        echo
        echo "Generated by \`make experiments SCENARIO=$SCENARIO\` ($(date -u +%Y-%m-%dT%H:%MZ)), lock TTL ${SECKILL_LAB_LOCK_TTL_MS} ms."
        echo
        "scenario_$SCENARIO" || status=$?
    } >"$results/scenario-$SCENARIO.md"
    cat "$results/scenario-$SCENARIO.md"
    done=1
    ((status == 0)) || { echo "experiments: $SCENARIO: our verdict differs from the documents'" >&2; exit 1; }
    echo "experiments: $SCENARIO: our verdict is the documents'"
    exit 0
fi
rows=()
differs=0
for s in $strategies; do
    echo "experiments: $s ..." >&2
    report=$(load "$s" "$STOCK" "$REQUESTS" "$CONCURRENCY" "$DELAY_MS")
    audit=$(curl -fsS "$base/api/v1/experiments/$s/audit?item=$item")
    complete=$(ab_field "$report" "Complete requests:" 3)
    non2xx=$(ab_field "$report" "Non-2xx responses:" 3)
    rps=$(ab_field "$report" "Requests per second:" 4)
    p50=$(ab_field "$report" "  50%" 2)
    p99=$(ab_field "$report" "  99%" 2)
    family=$(jq -r .family <<<"$audit")
    case $s in
    lua_reserve) orders=$(orders_in_pg) ;;
    *) orders=$(jq -r 'if .family == "db" or (.strategy | startswith("pg_")) then .pg_sales else null end' <<<"$audit") ;;
    esac

    race_report=$(load "$s" "$RACE_STOCK" "$RACE_BUYERS" "$RACE_BUYERS" "$RACE_DELAY_MS")
    race=$(curl -fsS "$base/api/v1/experiments/$s/audit?item=$item")
    race_complete=$(ab_field "$race_report" "Complete requests:" 3)
    race_non2xx=$(ab_field "$race_report" "Non-2xx responses:" 3)

    oversold=$(jq .oversold <<<"$audit")
    race_oversold=$(jq .oversold <<<"$race")
    observed=safe
    ((oversold > 0 || race_oversold > 0)) && observed=oversells
    expected=${doc_verdict[$s]:-safe}
    agrees=true
    [[ $observed == "$expected" ]] || { agrees=false; differs=1; }
    rows+=("$(jq -n --arg s "$s" --arg family "$family" --argjson audit "$audit" --argjson race "$race" \
        --argjson requests "$complete" --argjson non2xx "$non2xx" \
        --argjson rps "${rps:-0}" --argjson p50 "$p50" --argjson p99 "$p99" \
        --argjson orders "${orders:-null}" --argjson race_requests "$race_complete" \
        --argjson race_non2xx "$race_non2xx" --arg observed "$observed" --arg expected "$expected" \
        --argjson agrees "$agrees" --arg doc "${doc_figure[$s]}" '{
            strategy: $s, family: $family, requests: $requests, successes: ($requests - $non2xx),
            other_answers: $non2xx, requests_per_s: $rps,
            p50_ms: $p50, p99_ms: $p99, initial_stock: $audit.initial_stock,
            final_stock: $audit.remaining, sold: $audit.sold, oversold: $audit.oversold,
            orders_in_pg: $orders, leftover_lock_keys: $audit.lock_keys,
            race: {buyers: $race_requests, successes: ($race_requests - $race_non2xx),
                   stock: $race.initial_stock, sold: $race.sold, oversold: $race.oversold,
                   leftover_lock_keys: $race.lock_keys},
            verdict: $observed, documents_verdict: $expected, agrees: $agrees, documents: $doc}')")
done

settings=$(jq -n --argjson stock "$STOCK" --argjson requests "$REQUESTS" \
    --argjson concurrency "$CONCURRENCY" --argjson delay "$DELAY_MS" --argjson rs "$RACE_STOCK" \
    --argjson rb "$RACE_BUYERS" --argjson rd "$RACE_DELAY_MS" --arg cpus "$(nproc)" \
    '{stock: $stock, requests: $requests, concurrency: $concurrency, delay_ms: $delay,
      race: {stock: $rs, buyers: $rb, delay_ms: $rd}, cpus: ($cpus | tonumber), tool: "ab"}')
printf '%s\n' "${rows[@]}" | jq -s --argjson settings "$settings" \
    '{settings: $settings, strategies: .}' >"$results/experiments.json"

{
    echo "# The oversell experiments"
    echo
    echo "Generated by \`make experiments\` ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, ab)."
    echo "Load: $REQUESTS requests at concurrency $CONCURRENCY on a stock of $STOCK, business work"
    echo "${DELAY_MS} ms. Race: $RACE_BUYERS buyers at once on $RACE_STOCK units with ${RACE_DELAY_MS} ms"
    echo "of work inside the critical section. Every run starts from a reset of the item."
    echo
    echo "How to read it: *sold* is what the strategy answered 200 for (counted by the server in"
    echo "Redis, PostgreSQL rows for the DB strategies); *oversold* = sold - stock, never above 0 in a"
    echo "correct run; *final stock* is the strategy's own counter (below 0, or not matching the sales,"
    echo "is the oversell seen from inside); *orders in PG* are the rows the strategy wrote (lab_sales,"
    echo "or the worker's orders for lua_reserve); *lock keys* are locks left behind after the run."
    echo "The verdict is ours (oversells in either run) against the documents' (EXPERIMENTS.md)."
    echo
    echo "| strategy | req/s | p50 ms | p99 ms | sold / stock | oversold | final stock | orders in PG | lock keys | race: sold / stock | verdict | documents |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    jq -r '.strategies[] | "| `\(.strategy)` | \(.requests_per_s) | \(.p50_ms) | \(.p99_ms) | \(.sold) / \(.initial_stock) | \(.oversold) | \(.final_stock) | \(.orders_in_pg // "-") | \(.leftover_lock_keys) | \(.race.sold) / \(.race.stock) | \(.verdict)\(if .agrees then " as the documents say" else " (DIFFERS: documents say \(.documents_verdict))" end) | \(.documents) |"' \
        "$results/experiments.json"
} >"$results/experiments.md"

jq -r '.strategies[] | "\(.strategy) \(.requests_per_s) \([.oversold, .race.oversold] | max)"' \
    "$results/experiments.json" >"$dir/plot.dat"
for term in "pngcairo size 1200,700" "svg size 1200,700"; do
    ext=${term%% *}
    ext=${ext%cairo}
    gnuplot <<GNUPLOT
set terminal $term noenhanced
set output "$results/experiments.$ext"
set multiplot layout 2,1 title "Oversell experiments: $REQUESTS requests, concurrency $CONCURRENCY, stock $STOCK"
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set xtics rotate by -35 font ",9"
set grid ytics
set key off
set ylabel "requests/s (log scale)"
set logscale y
plot "$dir/plot.dat" using 2:xtic(1) linecolor rgb "#3b75af"
unset logscale y
set ylabel "oversold units (max of both runs)"
plot "$dir/plot.dat" using 3:xtic(1) linecolor rgb "#c03d3e"
unset multiplot
GNUPLOT
done

cat "$results/experiments.md"
done=1
((differs == 0)) || { echo "experiments: a verdict differs from the documents" >&2; exit 1; }
