#!/usr/bin/env bash
# experiments.sh: `make experiments`: the oversell laboratory under load, every strategy (or
# STRATEGY=name) against its own Redis, PostgreSQL, server and worker under run/experiments-<pid>;
# writes experiments.{md,json} and a plot (.png, .svg) of requests/s and oversold units per
# strategy into run/results/; with RECORD=1 into loadtest/results/ instead, the committed results
# that /lab and the docs show (a run never changes a committed file unless asked to). Exits 1 when
# a strategy's verdict differs from the documents'.
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
# writes scenario-<name>.md (run/results/, or loadtest/results/ with RECORD=1) and exits 0 only
# when our verdict is the documents':
#  lock_expiry   8 buyers on 2 units, 500 ms of work under a lock of 200 ms: redis_lock lets
#                two holders sell (oversells); redis_lock_fenced (stale writes refused, 409
#                fenced) and redis_lock_reentrant (the watchdog renews the lease) never oversell.
#  wrong_unlock  A works 1.2 s under a lock of 1 s, B takes it when it expires, A unlocks at 1.2 s:
#                redis_lock_setnx_expire's DEL frees B's lock; redis_lock's compare-and-delete not.
#  cluster       two servers behind nginx (our own config under the run folder, round robin), one
#                Redis and PostgreSQL: 100 buyers at concurrency 20 on 20 units, 20 ms of work:
#                local_mutex sells each instance's own copy of the stock (oversells, as 003's
#                "集群部署, nginx部署两台, 有超卖"); db_single_update, redis_lock, lua_reserve do not.
#  crash_holding_lock  lock TTL 2 s, fault injection on (lab_faults): a second server dies with
#                SIGKILL right after SETNX (?crash=after_setnx): redis_lock_setnx_expire's key has no
#                TTL and the first server's buyers get 429 busy until it is deleted by hand; a second
#                server killed -9 while it holds redis_lock (10 s of work): the key expires and the
#                first server sells about a TTL later. zookeeper_lock too when the server lists it.
#  leftover_key  first the meeting forced (fault injection on a second server, lock expiry 1 s): a
#                holder works three expiries; once its lock has expired two racers meet at the
#                taking command (?race=first, ?race=second): the second read the expired value
#                before the first's GETSET and GETSETs after it, so it loses yet overwrites the
#                winner's value, whose unlock then leaves the key: redis_lock_getset leaves one every
#                time, redis_lock (SET NX, compare-and-delete) none; these decide the verdict. Then,
#                as the documents' statistic beside it, document 000's load (ab -c 10000 -n 20000,
#                100 ms of work, expiry and wait 200 ms, 200 lab threads as Tomcat's): LEFTOVER_RUNS
#                (3) runs of redis_lock_getset and one of redis_lock, reported, not deciding.
#  singleton_job three workers, sweep every 500 ms elected by the Redis lock seckill:sweep; 20000
#                orders queued by lua_reserve, one worker killed -9 while it holds a batch: one
#                sweeper per period (from the workers' logs), the dead worker's batch back on the
#                queue, every accepted order in PostgreSQL exactly once.
#  unpaid_return two items of 20 units, 3 s to pay: 20 buyers each, half pay, half let their orders
#                expire. On the first the field's naive return (loadtest/naive_return.sh: HINCRBY
#                of the stock, then an unguarded mark) is killed -9 between an increment and its
#                mark, then retried on two nodes at once; on the second two of our workers expire
#                the orders (expiry sweep every 1 s), the one elected first killed -9 as soon as
#                elected. Then 60 new buyers on each (on a server started after the
#                returns, without the first one's sold-out flags): the naive return gave units
#                back twice and sells more than exist (oversells); ours never (units held by live
#                orders == stock, remaining 0), audited from PostgreSQL.
#
# Where it is goes to stderr (scripts/progress.sh): step k of n, the time elapsed and about how
# long is left, on one line redrawn on a terminal, one line a step otherwise. A strategy's load
# run and its race run are a step each, the load run as long as the strategy's took in the
# committed results (loadtest/results/experiments.json); a scenario's steps are its strategies or
# phases.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=../scripts/services.sh
source scripts/services.sh
# shellcheck source=../scripts/progress.sh
source scripts/progress.sh

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
recorded=loadtest/results
results=run/results
[[ ${RECORD:-0} != 1 ]] || results=$recorded
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
    [pg_advisory]="(not in the documents: PostgreSQL's advisory lock)"
    [zookeeper_lock]="correct; no TTL, the session's end frees the lock; redis > zk > mysql in speed (003)")
case ${SCENARIO:-} in
'') ;;
lock_expiry) export SECKILL_LAB_LOCK_TTL_MS=200 ;;
wrong_unlock) export SECKILL_LAB_LOCK_TTL_MS=1000 ;;
cluster) ;;
# A ZooKeeper session as long as the Redis lock's TTL, so that the two are freed alike.
crash_holding_lock) export SECKILL_LAB_LOCK_TTL_MS=2000 SECKILL_LAB_LOCK_WAIT_MS=500 SECKILL_LAB_FAULTS=true SECKILL_ZOOKEEPER_SESSION_MS=2000 ;;
# 000's lock: LOCK_EXPIRE_TIME 200 ms, lockWaitTimeOut 200 ms; Spring Boot's Tomcat: 200 threads.
# The forced meeting runs on a server of its own (scenario_leftover_key).
leftover_key) export SECKILL_LAB_LOCK_TTL_MS=200 SECKILL_LAB_LOCK_WAIT_MS=200 SECKILL_LAB_THREADS=200 ;;
singleton_job) export SECKILL_WORKER_SWEEP_MS=500 SECKILL_WORKER_BATCH_SIZE=200 ;;
# The run's worker persists orders only: the returns are the naive job's, or our two workers'.
unpaid_return) export SECKILL_WORKER_EXPIRY_MS=0 ;;
*) die "no scenario '$SCENARIO'; there are: lock_expiry wrong_unlock cluster crash_holding_lock leftover_key singleton_job unpaid_return" ;;
esac

scripts/deps.sh jq gnuplot-nox
scripts/build.sh

server_pid='' worker_pid='' done=0
# The run folder (logs) is removed after a complete run, kept after a broken one.
# shellcheck disable=SC2317  # only called by the EXIT trap
finish() {
    local pid f
    progress_break
    for pid in $server_pid $worker_pid; do
        if kill -TERM "$pid" 2>/dev/null; then wait "$pid" || true; fi
    done
    # What the scenarios started (extra servers and workers, nginx), by their pid files.
    for f in "$dir"/procs/*.pid; do [[ -e $f ]] && stop_pid "$f" seckill-; done
    nginx_stop "$dir"
    zk_stop "$dir"
    redlock_stop "$dir"
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
SECKILL_ZOOKEEPER_SERVERS=127.0.0.1:$(zk_start "$dir")
read -r redlock_1 redlock_2 < <(redlock_start "$dir")
SECKILL_REDLOCK_SERVERS=127.0.0.1:$SECKILL_REDIS_PORT,127.0.0.1:$redlock_1,127.0.0.1:$redlock_2
export SECKILL_ZOOKEEPER_SERVERS SECKILL_REDLOCK_SERVERS
port=$(free_port)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
export SECKILL_PORT=$port SECKILL_ADMIN_TOKEN=$token SECKILL_LOG_LEVEL=warn SECKILL_LAB=on
build/seckill-server >"$dir/server.log" 2>&1 &
server_pid=$!
if [[ ${SCENARIO:-} != singleton_job ]]; then # that one starts three of its own
    build/seckill-worker >"$dir/worker.log" 2>&1 &
    worker_pid=$!
fi
base=http://127.0.0.1:$port
wait_ready "$base/ready" || die "the server did not start (log: $dir/server.log)"

item=$(curl -fsS -X POST -H "Authorization: Bearer $token" \
    -d "{\"name\":\"experiments\",\"stock\":$STOCK,\"lab\":true}" "$base/api/v1/items" | jq .id)
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
        pending=$(redis-cli -h 127.0.0.1 -p "$SECKILL_REDIS_PORT" HLEN "seckill:{item:$item}:pending")
        ((pending == 0)) && break
        sleep 0.1
    done
    n=$(psql "$SECKILL_PG_CONNINFO" -XtAc "select count(*) from orders where item_id = $item")
    echo "$n"
}

# buy STRATEGY DELAY [BASE [EXTRA]]: one purchase (on BASE, default the first server, with the
# query EXTRA); prints "<status> <body>", status 000 when the server did not answer.
buy() {
    curl -s -o /dev/stdout -w ' %{http_code}' \
        "${3:-$base}/api/v1/experiments/$1/purchase?item=$item&delay_ms=$2${4:-}" |
        awk '{ status = $NF; $NF = ""; print status, $0 }'
}

# audit STRATEGY [BASE]: the audit's JSON (from BASE, default the first server).
audit() {
    curl -fsS "${2:-$base}/api/v1/experiments/$1/audit?item=$item"
}

rcli() { redis-cli -h 127.0.0.1 -p "$SECKILL_REDIS_PORT" "$@"; }

now_ms() { date +%s%3N; }

# start_proc NAME BINARY [KEY=VALUE...]: one more server or worker with the run's settings plus
# the given ones, logging to $dir/NAME.log, its pid in $dir/procs/NAME.pid (the EXIT trap stops
# it). A server gets a free port, in port_of[NAME], and is waited for until ready.
declare -A port_of=()
start_proc() {
    local name=$1 bin=$2 p=''
    shift 2
    mkdir -p "$dir/procs"
    [[ $bin == build/seckill-server ]] && p=$(free_port "$port") && set -- "$@" "SECKILL_PORT=$p"
    env "$@" "$bin" >"$dir/$name.log" 2>&1 &
    echo $! >"$dir/procs/$name.pid"
    [[ -n $p ]] || return 0
    port_of[$name]=$p
    wait_ready "http://127.0.0.1:$p/ready" || die "server $name did not start (log: $dir/$name.log)"
}

# kill_proc NAME SIGNAL: signals what start_proc started as NAME, by its pid file, and waits
# until it is gone.
kill_proc() {
    local pid
    read -r pid <"$dir/procs/$1.pid" || return 0
    # Our child: it cannot be replaced by another process before we reap it here (a zombie keeps
    # its pid), even when it already died by its own hand (?crash=).
    kill "-$2" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$dir/procs/$1.pid"
}

scenario_lock_expiry() {
    local s out sold fenced oversold verdict expected ok=0 i
    echo "| strategy | buyers | sold / stock | 409 fenced | oversold | ours | documents |"
    echo "|---|---:|---:|---:|---:|---|---|"
    for s in redis_lock redis_lock_fenced redis_lock_reentrant; do
        progress_step "lock_expiry: $s"
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
        progress_step "wrong_unlock: $s"
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

scenario_cluster() {
    local s lb report rps sold oversold left_a left_b verdict expected ok=0
    progress_step "cluster: a second server, nginx in front of both"
    start_proc second build/seckill-server
    lb=$(free_port "$port")
    nginx_start "$dir" "$lb" "$port" "${port_of[second]}"
    echo "Two servers (ports $port and ${port_of[second]}) behind nginx on port $lb (round robin), one"
    echo "Redis and one PostgreSQL; 100 buyers at concurrency 20 through nginx on 20 units, 20 ms of"
    echo "work. *left A / B* is each instance's own view of the stock (its audit)."
    echo
    echo "| strategy | req/s | sold / stock | oversold | left A / B | ours | documents |"
    echo "|---|---:|---:|---:|---:|---|---|"
    for s in local_mutex db_single_update redis_lock lua_reserve; do
        progress_step "cluster: $s"
        reset_item 20
        report=$(ab -q -r -s 60 -n 100 -c 20 "http://127.0.0.1:$lb/api/v1/experiments/$s/purchase?item=$item&delay_ms=20" 2>&1 || true)
        rps=$(ab_field "$report" "Requests per second:" 4)
        sold=$(audit "$s" | jq .sold)
        oversold=$(audit "$s" | jq .oversold)
        left_a=$(audit "$s" | jq .remaining)
        left_b=$(audit "$s" "http://127.0.0.1:${port_of[second]}" | jq .remaining)
        verdict=safe expected=safe
        ((oversold > 0)) && verdict=oversells
        [[ $s == local_mutex ]] && expected="oversells (003: 610+/s on 2 instances)"
        [[ $verdict == "${expected%% *}" ]] || ok=1
        echo "| \`$s\` | $rps | $sold / 20 | $oversold | $left_a / $left_b | $verdict | $expected |"
    done
    return "$ok"
}

# lock_freed_after STRATEGY BASE LIMIT_MS SINCE_MS: buys on BASE every 100 ms until a sale or
# LIMIT_MS; prints the ms from SINCE_MS to the sale, or "never".
lock_freed_after() {
    local deadline=$(($(now_ms) + $3))
    while (($(now_ms) < deadline)); do
        if [[ $(buy "$1" 0 "$2") == 200\ * ]]; then
            echo $(($(now_ms) - $4))
            return 0
        fi
        sleep 0.1
    done
    echo never
}

scenario_crash_holding_lock() {
    local s key ttl first after freed verdict expected ok=0 killed victim holder
    local ttl_ms=$SECKILL_LAB_LOCK_TTL_MS
    echo "Lock TTL $ttl_ms ms, lock wait ${SECKILL_LAB_LOCK_WAIT_MS} ms. A second server holds the lock and"
    echo "dies with SIGKILL; the first server's buyers then try. *PTTL* is the lock key's TTL right"
    echo "after the crash (-1: none); *freed* is when the first server sold again after the crash."
    echo
    echo "| strategy | how the holder died | PTTL after the crash | 1st server right after | 1st server after TTL + 1 s | freed | ours | documents |"
    echo "|---|---|---:|---|---|---|---|---|"

    s=redis_lock_setnx_expire
    progress_step "crash_holding_lock: $s"
    reset_item 10
    key="{item:$item}:lab:lock:$s"
    start_proc victim build/seckill-server
    victim=http://127.0.0.1:${port_of[victim]}
    buy "$s" 0 "$victim" "&crash=after_setnx" >/dev/null || true
    kill_proc victim KILL # already dead by its own hand; reaped here
    ttl=$(rcli PTTL "$key")
    first=$(buy "$s" 0 | cut -d' ' -f1)
    sleep $(((ttl_ms + 1000) / 1000))
    after=$(buy "$s" 0 | cut -d' ' -f1)
    rcli DEL "$key" >/dev/null
    freed="only by DEL by hand: then $(buy "$s" 0 | cut -d' ' -f1)"
    verdict="stuck" expected="stuck forever (deadlock, 002/004)"
    [[ $ttl == -1 && $first == 429 && $after == 429 ]] || verdict="freed"
    [[ $verdict == stuck ]] || ok=1
    echo "| \`$s\` | SIGKILL between SETNX and EXPIRE (?crash=after_setnx) | $ttl | $first | $after | $freed | $verdict | $expected |"

    for s in redis_lock zookeeper_lock; do
        progress_step "crash_holding_lock: $s"
        if ! curl -fsS "$base/api/v1/experiments" | jq -e --arg s "$s" '.strategies | any(.name == $s)' >/dev/null; then
            echo "| \`$s\` | - | - | - | - | - | skipped: this server has no $s | freed when the session ends (003) |"
            continue
        fi
        reset_item 10
        key="{item:$item}:lab:lock:$s"
        start_proc victim build/seckill-server
        victim=http://127.0.0.1:${port_of[victim]}
        buy "$s" 10000 "$victim" >/dev/null &
        holder=$!
        for _ in {1..100}; do
            [[ $s != redis_lock ]] && sleep 1 && break # the ZooKeeper lock lives outside Redis
            [[ $(rcli EXISTS "$key") == 1 ]] && break
            sleep 0.05
        done
        kill_proc victim KILL
        killed=$(now_ms)
        wait "$holder" || true
        ttl=-
        [[ $s == redis_lock ]] && ttl=$(rcli PTTL "$key")
        first=$(buy "$s" 0 | cut -d' ' -f1)
        if [[ $first == 503 ]]; then
            echo "| \`$s\` | - | - | - | - | - | skipped: no ZooKeeper configured (503) | freed when the session ends (003) |"
            continue
        fi
        freed=$(lock_freed_after "$s" "$base" 30000 "$killed")
        after=200
        [[ $freed == never ]] && after=429
        verdict="freed after $freed ms"
        expected="freed after the TTL (000, 003, 004)"
        [[ $s == zookeeper_lock ]] && expected="freed when the session ends (003)"
        if [[ $freed == never || $first != 429 ]] || { [[ $s == redis_lock ]] && ((ttl <= 0 || freed > ttl_ms + 1000)); }; then
            ok=1
            verdict="$verdict (DIFFERS)"
        fi
        echo "| \`$s\` | kill -9 while it holds the lock (10 s of work) | $ttl | $first | $after | after $freed ms | $verdict | $expected |"
    done
    return "$ok"
}

# lock_value STRATEGY: "<value> (now <ms>), <PTTL>" of the strategy's lock key, "-" when none.
lock_value() {
    local key="{item:$item}:lab:lock:$1"
    [[ $(rcli EXISTS "$key") == 1 ]] || { echo -; return 0; }
    echo "$(rcli GET "$key") (now $(now_ms)), $(rcli PTTL "$key")"
}

# meet_at_expiry STRATEGY BASE TTL_MS: document 000's story with the meeting forced, on the server
# at BASE (lock expiry TTL_MS, lab_faults on). A holder takes the lock and works three expiries;
# once its lock has expired (it still works), two racers with 100 ms of work meet at the taking
# command: ?race=second has looked at the lock (the GETSET lock: read the expired value) before
# ?race=first takes it, and takes after it. Prints "holder first second keys" (answers, lock keys
# left once all three answered).
meet_at_expiry() {
    local s=$1 b=$2 ttl=$3 key holder first second
    reset_item 10
    key="{item:$item}:lab:lock:$s"
    buy "$s" $((3 * ttl)) "$b" >"$dir/meet-holder.out" &
    holder=$!
    for _ in {1..1000}; do
        [[ $(rcli EXISTS "$key") == 1 ]] && break
        sleep 0.01
    done
    # The expiry counts from before the lock was taken: past it now, whatever the load.
    sleep "$(awk -v t="$ttl" 'BEGIN { print (t + 100) / 1000 }')"
    buy "$s" 100 "$b" "&race=second" >"$dir/meet-second.out" &
    second=$!
    buy "$s" 100 "$b" "&race=first" >"$dir/meet-first.out" &
    first=$!
    wait "$holder" "$first" "$second"
    echo "$(cut -d' ' -f1 "$dir/meet-holder.out") $(cut -d' ' -f1 "$dir/meet-first.out")" \
        "$(cut -d' ' -f1 "$dir/meet-second.out") $(audit "$s" | jq .lock_keys)"
}

scenario_leftover_key() {
    local s run report rps non2xx sold keys value verdict expected ok=0 racer holder first second
    local ttl=1000 runs=${LEFTOVER_RUNS:-3} left=0
    # The meeting's server: fault injection on, and an expiry well past the wait (000's 200 ms), so
    # that the loser gives up before the value it wrote expires and nobody takes it over and
    # deletes it: what stays is what the meeting left.
    start_proc racer build/seckill-server SECKILL_LAB_FAULTS=true "SECKILL_LAB_LOCK_TTL_MS=$ttl"
    racer=http://127.0.0.1:${port_of[racer]}
    echo "**The meeting, forced** (the verdict). A server with fault injection on, lock expiry $ttl ms and"
    echo "wait ${SECKILL_LAB_LOCK_WAIT_MS} ms. A holder takes the lock with $((3 * ttl)) ms of work; once its lock has expired, two"
    echo "racers with 100 ms of work meet at the taking command (\`?race=first\`, \`?race=second\`):"
    echo "the second has read the expired value before the first's GETSET and GETSETs after it, so it"
    echo "loses (429) yet overwrites the winner's value, and the winner's unlock, finding another value,"
    echo "does not delete (000's story of clients C and D). \`redis_lock\` meets the same way before its SET NX."
    echo
    echo "| strategy | holder | first racer | second racer | lock keys left | key's value, PTTL | ours | documents |"
    echo "|---|---:|---:|---:|---:|---|---|---|"
    for s in redis_lock_getset redis_lock; do
        progress_step "leftover_key: $s, the forced meeting"
        read -r holder first second keys < <(meet_at_expiry "$s" "$racer" "$ttl")
        value=$(lock_value "$s")
        verdict="leaves none" expected="leaves none"
        ((keys == 0)) || verdict="leaves a key"
        if [[ $s == redis_lock_getset ]]; then
            expected="leaves a key (000)"
            # The mechanism, not just its result: the winner sold, the loser answered busy.
            [[ $first == 200 && $second == 429 ]] || verdict="$verdict, not in the forced order"
        fi
        [[ $verdict == "${expected%% (*}" ]] || ok=1
        echo "| \`$s\` | $holder | $first | $second | $keys | $value | $verdict | $expected |"
    done
    kill_proc racer TERM
    echo
    echo "**Document 000's load** (the statistic beside it, not the verdict): ab -c 10000 -n 20000 on a"
    echo "stock of 10000, 100 ms of work under the lock, lock expiry ${SECKILL_LAB_LOCK_TTL_MS} ms and wait ${SECKILL_LAB_LOCK_WAIT_MS} ms,"
    echo "${SECKILL_LAB_THREADS} lab threads, no forcing. A lock key left after a run is what 000 saw in RedisDesktopManager;"
    echo "whether one is left depends on who raced last."
    echo
    echo "| strategy | run | req/s | 200 answers | sold | lock keys left | key's value, PTTL | ours | documents |"
    echo "|---|---:|---:|---:|---:|---:|---|---|---|"
    for s in redis_lock_getset redis_lock; do
        for run in $(seq 1 "$runs"); do
            progress_step "leftover_key: $s under 000's load, run $run$([[ $s == redis_lock ]] || echo " of $runs")"
            report=$(load "$s" 10000 20000 10000 100)
            rps=$(ab_field "$report" "Requests per second:" 4)
            non2xx=$(ab_field "$report" "Non-2xx responses:" 3)
            sold=$(audit "$s" | jq .sold)
            keys=$(audit "$s" | jq .lock_keys)
            value=$(lock_value "$s")
            verdict="leaves none" expected="leaves none"
            ((keys == 0)) || verdict="leaves a key"
            [[ $s == redis_lock_getset ]] && expected="leaves a key (000: 184 req/s)"
            [[ $s == redis_lock_getset ]] && ((keys > 0)) && left=$((left + 1))
            echo "| \`$s\` | $run | $rps | $((20000 - non2xx)) | $sold | $keys | $value | $verdict | $expected |"
            [[ $s == redis_lock_getset ]] || break
        done
    done
    echo
    echo "Under load \`redis_lock_getset\` left a key in $left of $runs runs."
    return "$ok"
}

# elections LOG...: "asked answered worker" of every sweep election the workers logged.
elections() {
    local f
    for f in "$@"; do
        sed -n 's/.*sweep: elected for [0-9]* ms (asked at \([0-9]*\), answered at \([0-9]*\)).*/\1 \2/p' "$f" |
            sed "s/\$/ $(basename "$f" .log)/"
    done | sort -n
}

scenario_singleton_job() {
    local period=$SECKILL_WORKER_SWEEP_MS w victim=scen-w2 in_hand=0 sold pg distinct dead recovered
    local pid deadline e n overlaps per verdict expected ok=0
    progress_step "singleton_job: 20000 orders queued by lua_reserve"
    reset_item 20000
    # The orders wait on the queue first, so the workers start with a backlog to be killed in.
    ab -q -r -s 60 -n 20000 -c 100 "$base/api/v1/experiments/lua_reserve/purchase?item=$item" >/dev/null 2>&1 || true
    sold=$(audit lua_reserve | jq .sold)
    progress_step "singleton_job: three workers, $victim killed -9 while it holds a batch"
    for w in scen-w1 scen-w2 scen-w3; do
        start_proc "$w" build/seckill-worker "SECKILL_WORKER_ID=$w" SECKILL_LOG_LEVEL=debug
    done
    # Kill the victim while it holds a batch: frozen first, so that it cannot acknowledge the
    # batch between the look and the kill.
    pid=$(cat "$dir/procs/$victim.pid")
    deadline=$(($(now_ms) + 60000))
    while ((in_hand == 0 && $(now_ms) < deadline)); do
        [[ $(rcli LLEN "seckill:{item:$item}:processing:$victim") != 0 ]] || continue
        kill -STOP "$pid"
        in_hand=$(rcli LLEN "seckill:{item:$item}:processing:$victim")
        ((in_hand > 0)) || kill -CONT "$pid"
    done
    kill_proc "$victim" KILL
    progress_step "singleton_job: the rest drained, a few more periods of elections"
    while (($(now_ms) < deadline)); do
        [[ $(rcli LLEN "seckill:{item:$item}:queue") == 0 && $(rcli HLEN "seckill:{item:$item}:pending") == 0 &&
            $(rcli EXISTS "seckill:{item:$item}:processing:$victim") == 0 ]] && break
        sleep 0.2
    done
    sleep $((4 * period / 1000 + 1)) # a few more periods of elections
    for w in scen-w1 scen-w3; do kill_proc "$w" TERM; done
    pg=$(psql "$SECKILL_PG_CONNINFO" -XtAc "select count(*) from orders where item_id = $item")
    distinct=$(psql "$SECKILL_PG_CONNINFO" -XtAc "select count(distinct id) from orders where item_id = $item")
    dead=$(rcli LLEN "seckill:{item:$item}:dead")
    recovered=$(grep -ho "worker $victim has no heartbeat: [0-9]*" "$dir"/scen-w*.log |
        awk '{ n += $NF } END { print n + 0 }')
    e=$(elections "$dir"/scen-w*.log)
    n=$(grep -c . <<<"$e" || true)
    per=$(awk '{ c[$3]++ } END { for (w in c) printf "%s%s: %d", (s++ ? ", " : ""), w, c[w] }' <<<"$e")
    # Two elections share a period when neither's answer comes a period after the other's asking.
    overlaps=$(awk -v p="$period" '{ a[NR] = $1; b[NR] = $2 }
        END { for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) {
                  g1 = b[j] - a[i]; g2 = b[i] - a[j]; if ((g1 > g2 ? g1 : g2) < p) n++ }
              print n + 0 }' <<<"$e")
    echo "Three workers (scen-w1..3), sweep period $period ms (lock seckill:sweep, SET NX PX $period),"
    echo "heartbeat TTL 3 periods; $sold orders accepted by lua_reserve before the workers started;"
    echo "$victim killed -9 while it held a batch. Elections and recoveries from the workers' logs."
    echo
    echo "| sweeps elected (by worker) | two sweeps in one period | victim's batch at the kill | recovered by a sweep | accepted / in PostgreSQL (distinct) | dead letters | ours | documents |"
    echo "|---|---:|---:|---:|---:|---:|---|---|"
    verdict="one sweeper per period, nothing lost or doubled"
    expected="one node runs the job at a time (002)"
    if ((n < 2 || overlaps > 0 || in_hand == 0 || recovered != in_hand || pg != sold ||
        distinct != sold || dead != 0)); then
        verdict="DIFFERS"
        ok=1
    fi
    echo "| $n ($per) | $overlaps | $in_hand | $recovered | $sold / $pg ($distinct) | $dead | $verdict | $expected |"
    return "$ok"
}

RETURN_STOCK=20 RETURN_TIMEOUT_S=3 RETURN_BUYERS=60

# sell ITEM FIRST_USER BUYERS PAY [BASE]: BUYERS buyers (users FIRST_USER..) buy a unit each through
# the production path (on BASE, default the first server), 10 at a time; the first PAY orders
# accepted are paid at once. Prints the sales.
sell() {
    local ids
    ids=$(seq "$2" $(($2 + $3 - 1)) | xargs -P 10 -I{} curl -s -w '\n' -X POST \
        -H "Authorization: Bearer $token" -d '{"user_id":{}}' "${5:-$base}/api/v1/items/$1/purchase" |
        jq -r 'select(.order_id != null) | .order_id')
    head -n "$4" <<<"$ids" | grep . | xargs -r -P 10 -I{} curl -sS -w "\n" -X POST \
        -H "Authorization: Bearer $token" "$base/api/v1/orders/{}/pay" >/dev/null
    grep -c . <<<"$ids" || true
}

sql() { psql "$SECKILL_PG_CONNINFO" -XqtA -F ' ' -c "$1"; }

# wait_sql SQL: until SQL answers t, up to 30 s; returns 1 after that.
wait_sql() {
    local deadline=$(($(now_ms) + 30000))
    until [[ $(sql "$1") == t ]]; do
        (($(now_ms) < deadline)) || return 1
        sleep 0.1
    done
}

remaining() { curl -fsS "$base/api/v1/items/$1" | jq .remaining; }

# books ITEM: "held stock remaining oversold" from PostgreSQL (units of live orders, persisted or
# paid; initial stock + restocked) and Redis (remaining); oversold = held - stock.
books() {
    local held stock
    read -r held stock < <(sql "SELECT coalesce(sum(o.quantity) FILTER (WHERE o.status IN ('persisted', 'paid')), 0),
                                       i.initial_stock + i.restocked
                                FROM items i LEFT JOIN orders o ON o.item_id = i.id
                                WHERE i.id = $1 GROUP BY i.id")
    echo "$held $stock $(remaining "$1") $((held - stock))"
}

scenario_unpaid_return() {
    local naive ours i before crashed a b n1 n2 w holder victim='' owed=- ret sold
    local -A returned=() storm=()
    local half=$((RETURN_STOCK / 2))
    progress_step "unpaid_return: the first storm, $RETURN_STOCK buyers on each item"
    for i in naive ours; do
        local id
        id=$(curl -fsS -X POST -H "Authorization: Bearer $token" \
            -d "{\"name\":\"unpaid-$i\",\"stock\":$RETURN_STOCK,\"payment_timeout_s\":$RETURN_TIMEOUT_S}" \
            "$base/api/v1/items" | jq .id)
        [[ $i == naive ]] && naive=$id || ours=$id
        # Exactly as many buyers as units: nobody hears "sold out", no server flags the item.
        sold=$(sell "$id" 1 "$RETURN_STOCK" "$half")
        ((sold == RETURN_STOCK)) || die "unpaid_return: the first storm sold $sold of $RETURN_STOCK"
    done
    wait_sql "SELECT count(*) = $((2 * RETURN_STOCK)) FROM orders WHERE item_id IN ($naive, $ours)" ||
        die "unpaid_return: the first storm's orders did not reach PostgreSQL"
    progress_step "unpaid_return: the unpaid orders fall due"
    sleep $((RETURN_TIMEOUT_S + 1)) # the unpaid half is overdue now

    # The naive return: a run killed -9 after its 3rd increment, then retried on two nodes at once.
    progress_step "unpaid_return: the naive return, killed -9, retried on two nodes"
    before=$(remaining "$naive")
    crashed=$(loadtest/naive_return.sh "$naive" 3 || true)
    loadtest/naive_return.sh "$naive" >"$dir/naive-a.out" &
    a=$!
    loadtest/naive_return.sh "$naive" >"$dir/naive-b.out" &
    b=$!
    wait "$a" "$b"
    read -r n1 <"$dir/naive-a.out"
    read -r n2 <"$dir/naive-b.out"
    returned[naive]=$(($(remaining "$naive") - before))

    # Ours: two workers, the one elected first killed -9 while it holds the expiry lock.
    progress_step "unpaid_return: our expiry sweep, two workers, the elected one killed -9"
    before=$(remaining "$ours")
    for w in ret-w1 ret-w2; do
        start_proc "$w" build/seckill-worker "SECKILL_WORKER_ID=$w" SECKILL_WORKER_EXPIRY_MS=1000
    done
    local deadline=$(($(now_ms) + 10000))
    while [[ -z $victim ]] && (($(now_ms) < deadline)); do
        holder=$(rcli GET seckill:expiry)
        [[ $holder == ret-w[12]:* ]] && victim=${holder%%:*} && kill_proc "$victim" KILL
        sleep 0.01
    done
    # What the dead worker left: expired in PostgreSQL, not yet confirmed given back.
    owed=$(sql "SELECT count(*) FROM orders WHERE item_id = $ours AND status = 'expired' AND returned_at IS NULL")
    wait_sql "SELECT count(*) = $half FROM orders
              WHERE item_id = $ours AND status = 'expired' AND returned_at IS NOT NULL" ||
        die "unpaid_return: our workers did not expire and return the $half unpaid orders"
    for w in ret-w1 ret-w2; do [[ -e $dir/procs/$w.pid ]] && kill_proc "$w" TERM; done
    returned[ours]=$(($(remaining "$ours") - before))

    # The second storm: new buyers, three times the stock, each paying at once, on a server started
    # now. The first server saw both items sell out and keeps them flagged in memory until it hears
    # of a new stock version, which the naive return never announces: there its units would sell
    # one a second (GATE_PROBE_MS), on a server started since (or restarted) all at once. The
    # field's copies clear their flag with the return (localOverMap.put(id, false)).
    progress_step "unpaid_return: the second storm, $RETURN_BUYERS new buyers on each item"
    start_proc ret-shop build/seckill-server
    for i in naive ours; do
        [[ $i == naive ]] && ret=$naive || ret=$ours
        storm[$i]=$(sell "$ret" 1001 "$RETURN_BUYERS" "$RETURN_BUYERS" "http://127.0.0.1:${port_of[ret-shop]}")
    done
    wait_sql "SELECT count(*) = $((2 * RETURN_STOCK + storm[naive] + storm[ours])) FROM orders
              WHERE item_id IN ($naive, $ours)" ||
        die "unpaid_return: the second storm's orders did not reach PostgreSQL"

    local held stock left oversold verdict expected ok=0
    echo "Two items of $RETURN_STOCK units, ${RETURN_TIMEOUT_S} s to pay; $RETURN_STOCK buyers each, $half pay at once, the"
    echo "other $half orders expire. *returned* is the stock Redis got back; the second storm is"
    echo "$RETURN_BUYERS new buyers per item, each paying at once; *held* is the units of live orders"
    echo "(persisted or paid) in PostgreSQL, *oversold* = held - stock."
    echo
    echo "| return | how it ran | unpaid units | returned | second storm sold / buyers | held / stock | remaining | oversold | ours | expected |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---|---|"
    for i in naive ours; do
        [[ $i == naive ]] && ret=$naive || ret=$ours
        read -r held stock left oversold < <(books "$ret")
        verdict=safe expected=safe
        ((oversold > 0 || held + left > stock)) && verdict=oversells
        if [[ $i == naive ]]; then
            expected=oversells
            echo -n "| naive (\`loadtest/naive_return.sh\`) | killed -9 after its 3rd increment (gave $crashed), retried on two nodes at once (gave $n1 and $n2)"
        else
            [[ $held == "$stock" && $left == 0 ]] || verdict=oversells
            echo -n "| ours (worker expiry sweep) | two workers, ${victim:-neither} killed -9 as soon as elected ($owed returns left owed)"
        fi
        [[ $verdict == "$expected" ]] || ok=1
        echo " | $half | ${returned[$i]} | ${storm[$i]} / $RETURN_BUYERS | $held / $stock | $left | $oversold | $verdict | $expected |"
    done
    return "$ok"
}

mkdir -p "$results"
if [[ -n ${SCENARIO:-} ]]; then
    # The steps of each scenario (its progress_step calls), counted up front.
    declare -A scenario_steps=([lock_expiry]=3 [wrong_unlock]=2 [cluster]=5 [crash_holding_lock]=3
        [leftover_key]=$((2 + ${LEFTOVER_RUNS:-3} + (${LEFTOVER_RUNS:-3} > 0))) [singleton_job]=3 [unpaid_return]=5)
    progress_begin experiments "${scenario_steps[$SCENARIO]}"
    status=0
    {
        echo "# Scenario $SCENARIO"
        echo
        echo "Generated by \`make experiments SCENARIO=$SCENARIO\` ($(date -u +%Y-%m-%dT%H:%MZ)), lock TTL ${SECKILL_LAB_LOCK_TTL_MS:-10000} ms."
        echo
        "scenario_$SCENARIO" || status=$?
    } >"$results/scenario-$SCENARIO.md"
    progress_end
    cat "$results/scenario-$SCENARIO.md"
    [[ $results == "$recorded" ]] || echo "experiments: written to $results/scenario-$SCENARIO.md (RECORD=1 writes $recorded/)" >&2
    done=1
    ((status == 0)) || { echo "experiments: $SCENARIO: our verdict differs from the documents'" >&2; exit 1; }
    echo "experiments: $SCENARIO: our verdict is the documents'"
    exit 0
fi
# Two steps a strategy. Their nominal seconds: the load run as long as the strategy's took in the
# last results (REQUESTS at its requests/s there; 10 s for one not in them), the race run 2 s.
declare -A last_rps=()
if [[ -f $recorded/experiments.json ]]; then
    while read -r s r; do last_rps[$s]=$r; done < <(jq -r '.strategies[] | "\(.strategy) \(.requests_per_s)"' "$recorded/experiments.json")
fi
steps=()
for s in $strategies; do
    steps+=("$(awk -v n="$REQUESTS" -v r="${last_rps[$s]:-0}" 'BEGIN { v = (r > 0 ? n / r : 10); printf "%d", (v < 1 ? 1 : v + 0.5) }')" 2)
done
progress_begin_timed experiments "${steps[@]}"
rows=()
differs=0
findings=()
for s in $strategies; do
    progress_step "load: $s"
    report=$(load "$s" "$STOCK" "$REQUESTS" "$CONCURRENCY" "$DELAY_MS")
    audit=$(curl -fsS "$base/api/v1/experiments/$s/audit?item=$item")
    complete=$(ab_field "$report" "Complete requests:" 3)
    non2xx=$(ab_field "$report" "Non-2xx responses:" 3)
    rps=$(ab_field "$report" "Requests per second:" 4)
    p50=$(ab_field "$report" "  50%" 2)
    p99=$(ab_field "$report" "  99%" 2)
    family=$(jq -r .family <<<"$audit")
    case $s in
    lua_reserve)
        # The product's order locks go once the worker persisted their orders: audited after the
        # drain, any lock left is the audit's finding (and fails the run).
        orders=$(orders_in_pg)
        audit=$(audit "$s")
        ;;
    *) orders=$(jq -r 'if .family == "db" or (.strategy | startswith("pg_")) then .pg_sales else null end' <<<"$audit") ;;
    esac

    progress_step "race: $s"
    race_report=$(load "$s" "$RACE_STOCK" "$RACE_BUYERS" "$RACE_BUYERS" "$RACE_DELAY_MS")
    [[ $s != lua_reserve ]] || orders_in_pg >/dev/null
    race=$(curl -fsS "$base/api/v1/experiments/$s/audit?item=$item")
    found=$(jq -rs --arg s "$s" '[.[].findings // [] | .[]] | unique | .[] | "\($s): \(.)"' <<<"$audit$race")
    if [[ -n $found ]]; then
        echo "experiments: $found" >&2
        findings+=("$found")
    fi
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
            orders_in_pg: $orders, leftover_lock_keys: ($audit.lock_keys + ($audit.order_locks // 0)),
            race: {buyers: $race_requests, successes: ($race_requests - $race_non2xx),
                   stock: $race.initial_stock, sold: $race.sold, oversold: $race.oversold,
                   leftover_lock_keys: ($race.lock_keys + ($race.order_locks // 0))},
            verdict: $observed, documents_verdict: $expected, agrees: $agrees, documents: $doc}')")
done

progress_end

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
[[ $results == "$recorded" ]] || echo "experiments: written to $results/ (RECORD=1 writes $recorded/, the committed results)" >&2
done=1
((${#findings[@]} == 0)) || { printf 'experiments: audit finding: %s\n' "${findings[@]}" >&2; exit 1; }
((differs == 0)) || { echo "experiments: a verdict differs from the documents" >&2; exit 1; }
