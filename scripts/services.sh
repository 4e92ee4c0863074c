#!/usr/bin/env bash
# services.sh: a local Redis and PostgreSQL (and what the tests add: a Redis Cluster, Redlock's
# servers, ZooKeeper, nginx) under a run folder. `services.sh VERB DIR [ARGS]`, one verb a
# service and an action (`services.sh --help` lists them); or source it for its functions.
#
# start writes DIR/env, to be sourced: SECKILL_REDIS_HOST, SECKILL_REDIS_PORT, SECKILL_PG_CONNINFO.
# Ports are random free ones unless SECKILL_RUN_REDIS_PORT / SECKILL_RUN_PG_PORT say otherwise
# (SECKILL_RUN_ZK_PORT: the port zk_start tries first).
# SECKILL_PG_FAST=1 turns fsync off (tests only: a crash of the machine may lose the data).
# Both servers listen on 127.0.0.1 only, without a password: local dev and test data only.
set -euo pipefail

die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

# as_user USER CMD...: runs CMD from / as USER when we are root (PostgreSQL refuses to run as
# root, and Redis has no need of it), as ourselves otherwise. Paths given to it must be absolute.
as_user() {
    local user=$1
    shift
    if ((EUID == 0)); then (cd / && runuser -u "$user" -- "$@"); else (cd / && "$@"); fi
}

# check_reachable USER DIR: USER must be able to enter DIR, so every parent must be searchable.
check_reachable() {
    as_user "$1" test -x "$2" ||
        die "user '$1' (who runs the local Redis and PostgreSQL) cannot enter $2: every parent" \
            "directory of the repository must be searchable by it (a checkout under /root is not)." \
            "Move the checkout (e.g. under /srv or /opt) or run chmod o+x on its parents."
}

# live_pid FILE PATTERN: prints the pid of FILE if that process lives and its command line
# contains PATTERN; a stale file, a reused pid or a zombie does not count. A file without a final
# newline counts too (dockerd writes its so).
live_pid() {
    local pid=
    [[ -r $1 ]] && { read -r pid || [[ -n $pid ]]; } <"$1" && [[ $pid =~ ^[0-9]+$ ]] || return 1
    { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$2" || return 1
    echo "$pid"
}

# pid_alive PID: 0 while the process PID exists and is not a zombie, whatever it runs.
pid_alive() {
    local state
    state=$(cut -d')' -f2- "/proc/$1/stat" 2>/dev/null) && [[ $state != " Z"* ]]
}

# stop_pid FILE PATTERN: SIGTERM to the process of FILE, SIGKILL if it is still there after 15 s.
stop_pid() {
    local pid i
    if pid=$(live_pid "$1" "$2"); then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 150; i++)); do
            live_pid "$1" "$2" >/dev/null || break
            sleep 0.1
        done
        if live_pid "$1" "$2" >/dev/null; then
            echo "${0##*/}: $2 (pid $pid) ignored SIGTERM, killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$1"
}

# wait_ready URL: waits up to 10 s for URL (a seckill /ready, directly or through nginx) to
# answer 2xx; returns 1 if it never did.
wait_ready() {
    for _ in {1..100}; do
        curl -fs "$1" >/dev/null && return 0
        sleep 0.1
    done
    return 1
}

port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port [EXCEPT]: a random port in 10000-65535 that nothing listens on, outside the kernel's
# ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default): a port there
# can be taken at any moment as the local end of some client connection, and the server would
# fail to bind it. The C tests' harness (harness_port_pick) chooses by the same rule.
free_port() {
    local p i k lo=32768 hi=60999 range below above
    range=$(cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || true
    [[ $range =~ ^([0-9]+)[[:space:]]+([0-9]+)$ ]] && lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
    below=$((lo > 10000 ? lo - 10000 : 0))
    above=$((hi < 65535 ? 65535 - (hi > 9999 ? hi : 9999) : 0))
    for ((i = 0; below + above > 0 && i < 100; i++)); do
        k=$(((RANDOM * 32768 + RANDOM) % (below + above)))
        if ((k < below)); then p=$((10000 + k)); else p=$((65535 - (k - below))); fi
        [[ $p != "${1:-}" ]] && port_free "$p" && echo "$p" && return 0
    done
    die "no free TCP port found in 10000-65535 outside the ephemeral range $lo-$hi"
}

pg_bin() {
    local dir
    dir=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -n 1)
    [[ -x $dir/pg_ctl ]] || die "no PostgreSQL server under /usr/lib/postgresql (run scripts/deps.sh)"
    echo "$dir"
}

pg_user() { if ((EUID == 0)); then echo postgres; else id -un; fi; }
redis_user() { if ((EUID == 0)); then echo redis; else id -un; fi; }

# own_by USER PATH...: creates the files (or directories, when ending in /) USER writes to.
own_by() {
    local user=$1 path
    shift
    for path in "$@"; do
        if [[ $path == */ ]]; then mkdir -p "$path"; else touch "$path"; fi
        ((EUID != 0)) || chown "$user:" "$path"
    done
}

services_running() {
    local dir=$1
    live_pid "$dir/redis.pid" redis-server >/dev/null ||
        { [[ -f $dir/pg/PG_VERSION ]] && as_user "$(pg_user)" "$(pg_bin)/pg_ctl" status -D "$dir/pg" >/dev/null; }
}

# launch_redis DIR PORT [CONF]: starts a Redis on PORT with its files under DIR (CONF: more lines
# of its config, a cluster node's) without waiting for it; wait_redis DIR PORT waits until it
# answers. start_redis DIR PORT [CONF] does both.
launch_redis() {
    local dir=$1 port=$2 extra=${3:-} user
    user=$(redis_user)
    own_by "$user" "$dir/redis/" "$dir/redis.pid" "$dir/redis.log"
    cat >"$dir/redis.conf" <<CONF
# Generated by scripts/services.sh; rewritten at every start.
bind 127.0.0.1
port $port
dir $dir/redis
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
appendonly yes
appendfsync everysec
save ""
$extra
CONF
    as_user "$user" redis-server "$dir/redis.conf"
}

wait_redis() {
    local dir=$1 port=$2
    for _ in {1..100}; do
        [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]] && return 0
        sleep 0.1
    done
    tail -n 20 "$dir/redis.log" >&2
    die "Redis did not start on port $port (log: $dir/redis.log)"
}

start_redis() {
    launch_redis "$@"
    wait_redis "$1" "$2"
}

start_postgres() {
    local dir=$1 port=$2 bin user opts
    bin=$(pg_bin)
    user=$(pg_user)
    if [[ ! -f $dir/pg/PG_VERSION ]]; then
        rm -rf "$dir/pg"
        own_by "$user" "$dir/pg/"
        chmod 700 "$dir/pg"
        # Trust authentication: the server listens on 127.0.0.1 only and holds dev/test data.
        as_user "$user" "$bin/initdb" -D "$dir/pg" -U seckill --auth=trust --encoding=UTF8 \
            --locale=C --no-sync >"$dir/initdb.log" ||
            die "initdb failed (log: $dir/initdb.log)"
    fi
    own_by "$user" "$dir/postgres.log"
    # max_connections: the lab pool of each server opens up to lab_threads (64) connections.
    opts="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='' -c max_connections=300"
    [[ ${SECKILL_PG_FAST:-0} != 1 ]] || opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    as_user "$user" "$bin/pg_ctl" start -w -s -t 60 -D "$dir/pg" -l "$dir/postgres.log" -o "$opts" || {
        tail -n 20 "$dir/postgres.log" >&2
        die "PostgreSQL did not start on port $port (log: $dir/postgres.log)"
    }
    local psql=("$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U seckill)
    if [[ -z $("${psql[@]}" -d postgres -tAc "select 1 from pg_database where datname = 'seckill'") ]]; then
        "${psql[@]}" -d postgres -c "create database seckill"
    fi
}

# reachable_dir DIR: DIR itself when the service users can enter it; when they cannot (a checkout
# under /root, say), DIR becomes a link to a folder of its own under /tmp that they can enter, so
# the pid files and logs are still found under DIR.
reachable_dir() {
    local dir=$1 real
    mkdir -p "$(dirname "$dir")"
    if [[ ! -e $dir ]] && ((EUID == 0)) &&
        ! { as_user "$(redis_user)" test -x "$(dirname "$dir")" &&
            as_user "$(pg_user)" test -x "$(dirname "$dir")"; }; then
        real=$(mktemp -d /tmp/seckill-run.XXXXXX)
        chmod 755 "$real"
        ln -s "$real" "$dir"
    fi
    mkdir -p "$dir"
    realpath "$dir"
}

# services_start DIR: starts Redis and PostgreSQL under DIR and writes DIR/env.
services_start() {
    local dir redis_port pg_port
    dir=$(reachable_dir "$(realpath -m "$1")")
    ! services_running "$dir" || die "services already running in $dir (stop them: scripts/services.sh stop $dir)"
    redis_port=${SECKILL_RUN_REDIS_PORT:-$(free_port)}
    pg_port=${SECKILL_RUN_PG_PORT:-$(free_port "$redis_port")}
    port_free "$redis_port" || die "port $redis_port (Redis) is taken"
    port_free "$pg_port" || die "port $pg_port (PostgreSQL) is taken"
    check_reachable "$(redis_user)" "$dir"
    check_reachable "$(pg_user)" "$dir"
    start_redis "$dir" "$redis_port"
    start_postgres "$dir" "$pg_port"
    cat >"$dir/env" <<ENV
# Generated by scripts/services.sh: the backends of this run folder.
export SECKILL_REDIS_HOST=127.0.0.1 SECKILL_REDIS_PORT=$redis_port
export SECKILL_PG_CONNINFO='host=127.0.0.1 port=$pg_port dbname=seckill user=seckill'
ENV
    echo "services: redis 127.0.0.1:$redis_port, postgresql 127.0.0.1:$pg_port (source $dir/env)"
}

# services_stop DIR: stops what services_start started there, by its pid files only.
services_stop() {
    local dir bin
    dir=$(realpath -m "$1")
    if [[ -f $dir/pg/postmaster.pid ]]; then
        bin=$(pg_bin)
        if as_user "$(pg_user)" "$bin/pg_ctl" status -D "$dir/pg" >/dev/null; then
            as_user "$(pg_user)" "$bin/pg_ctl" stop -w -s -m fast -D "$dir/pg"
        fi
    fi
    stop_pid "$dir/redis.pid" redis-server
}

# redis_kill DIR: SIGKILL to the Redis of DIR, by its pid file: a crash, for the chaos tests.
redis_kill() {
    local dir pid
    dir=$(realpath -m "$1")
    pid=$(live_pid "$dir/redis.pid" redis-server) || return 0
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$dir/redis.pid"
}

# redis_restart DIR: starts the Redis of DIR again on its port, from its own data (AOF).
redis_restart() {
    local dir port
    dir=$(realpath -m "$1")
    port=$(sed -n 's/^port //p' "$dir/redis.conf")
    [[ -n $port ]] || die "no Redis was started in $dir"
    start_redis "$dir" "$port"
}

# pg_kill DIR: stops the PostgreSQL of DIR in immediate mode (no checkpoint, clients cut off, crash
# recovery at the next start): a crash, for the chaos tests.
pg_kill() {
    local dir bin
    dir=$(realpath -m "$1")
    bin=$(pg_bin)
    [[ -f $dir/pg/postmaster.pid ]] || return 0
    if as_user "$(pg_user)" "$bin/pg_ctl" status -D "$dir/pg" >/dev/null; then
        as_user "$(pg_user)" "$bin/pg_ctl" stop -w -s -m immediate -D "$dir/pg"
    fi
}

# pg_restart DIR: starts the PostgreSQL of DIR again on its port (from DIR/env), with the options
# of its last start (fsync off when it was).
pg_restart() {
    local dir port fast=0
    dir=$(realpath -m "$1")
    port=$(sed -n "s/.*SECKILL_PG_CONNINFO='host=[^ ]* port=\([0-9]*\) .*/\1/p" "$dir/env" 2>/dev/null)
    [[ -n $port ]] || die "no PostgreSQL was started in $dir"
    ! grep -qs 'fsync=off' "$dir/pg/postmaster.opts" || fast=1
    SECKILL_PG_FAST=$fast start_postgres "$dir" "$port"
}

# redlock_start DIR: two more Redis servers, under DIR/redlock-1 and DIR/redlock-2, for the Redlock
# strategy (the run's own Redis is the third); prints their two ports.
redlock_start() {
    local dir n port ports=()
    dir=$(realpath -m "$1")
    for n in 1 2; do
        mkdir -p "$dir/redlock-$n"
        port=$(free_port "${ports[0]:-}")
        start_redis "$dir/redlock-$n" "$port"
        ports+=("$port")
    done
    echo "${ports[*]}"
}

# redlock_stop DIR: stops what redlock_start started, by its pid files.
redlock_stop() {
    local dir n
    dir=$(realpath -m "$1")
    for n in 1 2; do stop_pid "$dir/redlock-$n/redis.pid" redis-server; done
}

# redis_auth_start DIR PASSWORD: one more Redis, under DIR/redis-auth, empty at every start, that
# asks for PASSWORD (requirepass), for the tests of the connections' AUTH; prints its port.
redis_auth_start() {
    local dir port
    # The password goes into redis.conf as it is: a plain word only.
    [[ $2 =~ ^[A-Za-z0-9._-]+$ ]] || { echo "redis-auth-start: a password of [A-Za-z0-9._-] only" >&2; return 2; }
    dir=$(realpath -m "$1")/redis-auth
    rm -rf "$dir/redis"
    mkdir -p "$dir"
    port=$(free_port)
    launch_redis "$dir" "$port" "requirepass $2"
    REDISCLI_AUTH=$2 wait_redis "$dir" "$port"
    echo "$port"
}

# redis_auth_stop DIR: stops what redis_auth_start started, by its pid file.
redis_auth_stop() {
    stop_pid "$(realpath -m "$1")/redis-auth/redis.pid" redis-server
}

# cluster_start DIR: a Redis Cluster of 3 masters, each with a replica (Debian's redis-server and
# `redis-cli --cluster create`), under DIR/cluster: node-1 .. node-6, each with its own folder,
# config, pid file and log, fresh at every start, on free ports (client ports and cluster bus
# ports, all outside the ephemeral range: see free_port). Returns once every node says
# cluster_state:ok with all 16384 slots assigned and all six nodes known, and every replica is in sync with its master; prints the
# seeds (all six nodes, "127.0.0.1:<port>,...") and writes them to DIR/cluster/env
# (SECKILL_REDIS_CLUSTER). SECKILL_CLUSTER_NODE_TIMEOUT_MS sets cluster-node-timeout (default
# 2000: how long a master may be unreachable before its replica takes over; it also bounds the
# delay before a new master says cluster_state:ok, up to 5 s: the cluster is ready in about 4 s).
cluster_start() {
    local dir c n p node ports=() taken=' ' addrs=() launched=() seeds='' info i ready
    dir=$(realpath -m "$1")
    c=$dir/cluster
    for n in {1..6}; do
        ! live_pid "$c/node-$n/redis.pid" redis-server >/dev/null ||
            die "a Redis Cluster already runs in $c (stop it: services.sh cluster-stop $dir)"
    done
    mkdir -p "$c"
    check_reachable "$(redis_user)" "$c"
    rm -rf "$c"/node-* "$c/env" "$c/create.log"
    # Twelve distinct ports: the bus port is named, not the default port + 10000, which could
    # fall in the kernel's ephemeral range.
    while ((${#ports[@]} < 12)); do
        p=$(free_port)
        [[ $taken == *" $p "* ]] || { ports+=("$p") && taken+="$p "; }
    done
    # The six start side by side: one after the other costs seconds.
    for n in {1..6}; do
        node=$c/node-$n
        mkdir -p "$node"
        # Diskless replication without delay: a replica is in sync in milliseconds, not after
        # the default 5 s wait for more replicas.
        launch_redis "$node" "${ports[n - 1]}" "cluster-enabled yes
cluster-config-file nodes.conf
cluster-port ${ports[n + 5]}
cluster-node-timeout ${SECKILL_CLUSTER_NODE_TIMEOUT_MS:-2000}
repl-diskless-sync yes
repl-diskless-sync-delay 0" &
        launched+=($!)
        addrs+=("127.0.0.1:${ports[n - 1]}")
        seeds+=${seeds:+,}127.0.0.1:${ports[n - 1]}
    done
    # By pid: a caller's own background jobs (run.sh's) are none of our business.
    wait "${launched[@]}" || true
    for n in {1..6}; do wait_redis "$c/node-$n" "${ports[n - 1]}"; done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$c/create.log" 2>&1 || {
        tail -n 20 "$c/create.log" >&2
        cluster_stop "$dir"
        die "redis-cli --cluster create failed (log: $c/create.log)"
    }
    for ((i = 0; i < 300; i++)); do
        ready=1
        for n in {1..6}; do
            info=$(printf 'CLUSTER INFO\nINFO replication\n' |
                redis-cli -h 127.0.0.1 -p "${ports[n - 1]}" 2>/dev/null) || true
            if [[ $info != *cluster_state:ok* || $info != *cluster_slots_assigned:16384* ||
                $info != *cluster_known_nodes:6* ]] ||
                [[ $info == *role:slave* && $info != *master_link_status:up* ]]; then
                ready=0
                break
            fi
        done
        ((ready == 0)) || break
        sleep 0.1
    done
    if ((ready == 0)); then
        redis-cli -h 127.0.0.1 -p "${ports[0]}" cluster nodes >&2 || true
        cluster_stop "$dir"
        die "the Redis Cluster in $c did not become ready in 30 s (logs: $c/node-*/redis.log)"
    fi
    cat >"$c/env" <<ENV
# Generated by scripts/services.sh: the seeds of the Redis Cluster of this run folder.
export SECKILL_REDIS_CLUSTER=$seeds
ENV
    echo "$seeds"
}

# cluster_stop DIR: stops what cluster_start started there, by its pid files, all nodes at once.
cluster_stop() {
    local dir n stopping=()
    dir=$(realpath -m "$1")
    for n in {1..6}; do
        stop_pid "$dir/cluster/node-$n/redis.pid" redis-server &
        stopping+=($!)
    done
    wait "${stopping[@]}"
}

# cluster_node_restart DIR PORT: starts again the node of DIR's cluster that listened on PORT (killed
# by a test), from its own config and data: it rejoins the cluster, as a replica when its slots
# went to another master meanwhile.
cluster_node_restart() {
    local dir node
    dir=$(realpath -m "$1")
    for node in "$dir"/cluster/node-*; do
        if grep -qx "port $2" "$node/redis.conf" 2>/dev/null; then
            ! live_pid "$node/redis.pid" redis-server >/dev/null || die "the node on port $2 runs"
            as_user "$(redis_user)" redis-server "$node/redis.conf"
            wait_redis "$node" "$2"
            return 0
        fi
    done
    die "no node of the cluster in $dir listened on port $2"
}

# ZooKeeper runs as its package's user when we are root (as Redis runs as redis).
zk_user() {
    if ((EUID != 0)); then
        id -un
    elif id -u zookeeper >/dev/null 2>&1; then
        echo zookeeper
    else
        redis_user
    fi
}

# zk_ruok PORT: 0 when the ZooKeeper on PORT answers its four-letter "ruok" with "imok".
zk_ruok() {
    # shellcheck disable=SC2016  # $0 is the inner shell's
    [[ $(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf ruok >&3 && cat <&3' "$1" 2>/dev/null) == imok ]]
}

# zk_launch ZK PORT USER: writes ZK/zoo.cfg for PORT and starts ZooKeeper in the background as
# USER, its pid in ZK/zookeeper.pid and its output in ZK/zookeeper.log. Its logging goes through
# SLF4J: with slf4j-simple on the class path (from libslf4j-java, which Debian's ZooKeeper depends
# on) its warnings and errors reach the log; without it ZooKeeper exits on an error in silence.
zk_launch() {
    local zk=$1 port=$2 user=$3 sync=yes cp=/usr/share/java/zookeeper.jar
    [[ ${SECKILL_PG_FAST:-0} != 1 ]] || sync=no
    [[ ! -r /usr/share/java/slf4j-simple.jar ]] || cp+=:/usr/share/java/slf4j-simple.jar
    cat >"$zk/zoo.cfg" <<CONF
# Generated by scripts/services.sh; rewritten at every start.
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$zk/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
forceSync=$sync
CONF
    # The shell writes its own pid, then becomes the JVM: the pid file names ZooKeeper itself.
    # shellcheck disable=SC2016  # $$, $0, $1 and $2 are the inner shell's
    as_user "$user" setsid bash -c 'echo $$ >"$0" && exec java -Xmx128m -Xss512k -XX:+UseSerialGC \
        -XX:TieredStopAtLevel=1 -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$2" org.apache.zookeeper.server.ZooKeeperServerMain "$1"' \
        "$zk/zookeeper.pid" "$zk/zoo.cfg" "$cp" </dev/null >"$zk/zookeeper.log" 2>&1 &
}

# zk_start DIR: a standalone ZooKeeper for the strategy zookeeper_lock under DIR/zookeeper (its
# zoo.cfg, a fresh data folder, its log, its pid file), on 127.0.0.1 and a free port; prints the
# port. tickTime 500 ms lets clients ask for sessions as short as 1 s (2 ticks), so that a crashed
# holder's lock goes within seconds in the tests. The JVM is kept small (a 2-core machine).
# SECKILL_PG_FAST=1 (tests) turns its fsync off too. The JVM takes seconds to bind the port that
# free_port found free, and another program may take it meanwhile (the tests start servers on
# free ports side by side): a start that fails for its port is tried again on another, twice.
zk_start() {
    local dir zk user port try pid
    dir=$(realpath -m "$1")
    zk=$dir/zookeeper
    [[ -r /usr/share/java/zookeeper.jar ]] || die "no ZooKeeper in /usr/share/java (run scripts/deps.sh)"
    ! live_pid "$zk/zookeeper.pid" ZooKeeperServerMain >/dev/null ||
        die "ZooKeeper already running in $zk (stop it: zk_stop $dir)"
    user=$(zk_user)
    mkdir -p "$zk"
    check_reachable "$user" "$zk"
    for try in 1 2 3; do
        rm -rf "$zk/data" "$zk/zookeeper.pid"
        own_by "$user" "$zk/data/" "$zk/zookeeper.pid" "$zk/zookeeper.log"
        port=$(free_port)
        ((try > 1)) || port=${SECKILL_RUN_ZK_PORT:-$port}
        zk_launch "$zk" "$port" "$user"
        for _ in {1..300}; do
            zk_ruok "$port" && echo "$port" && return 0
            # Gone, not merely unmatched: between the shell's echo and its exec, and inside an
            # exec, the command line read from /proc may not name ZooKeeper yet.
            read -r pid <"$zk/zookeeper.pid" 2>/dev/null || pid=
            [[ -z $pid ]] || pid_alive "$pid" || break
            sleep 0.1
        done
        stop_pid "$zk/zookeeper.pid" ZooKeeperServerMain
        grep -q 'Address already in use' "$zk/zookeeper.log" || break
        echo "${0##*/}: ZooKeeper's port $port was taken before it bound it (try $try of 3)" >&2
    done
    tail -n 20 "$zk/zookeeper.log" >&2
    die "ZooKeeper did not start on port $port (log: $zk/zookeeper.log)"
}

# zk_stop DIR: stops what zk_start started there, by its pid file.
zk_stop() {
    stop_pid "$(realpath -m "$1")/zookeeper/zookeeper.pid" ZooKeeperServerMain
}

# nginx_start DIR PORT UPSTREAM...: nginx on 127.0.0.1:PORT in front of the seckill servers on the
# UPSTREAM ports (round robin, nginx's default; keep-alive to the upstreams), from our own config
# under DIR/nginx, in the foreground of a background job with the pid file DIR/nginx/nginx.pid.
# Returns once /ready answers through it.
nginx_start() {
    local dir listen=$2 up conf
    dir=$(realpath -m "$1")/nginx
    conf=$dir/nginx.conf
    shift 2
    mkdir -p "$dir/tmp"
    {
        echo "# Generated by scripts/services.sh (nginx_start); rewritten at every start."
        echo "daemon off;"
        echo "worker_processes 1;"
        echo "pid $dir/nginx.pid;"
        echo "error_log $dir/error.log warn;"
        echo "events { worker_connections 4096; }"
        echo "http {"
        echo "    access_log off;"
        for up in client_body proxy fastcgi uwsgi scgi; do echo "    ${up}_temp_path $dir/tmp/$up;"; done
        echo "    upstream seckill {"
        for up in "$@"; do echo "        server 127.0.0.1:$up;"; done
        # Idle connections to the servers kept open: as many as the busiest clients use, or
        # nginx opens (and the servers accept) a connection a request beyond them.
        echo "        keepalive 1024;"
        echo "    }"
        echo "    server {"
        echo "        listen 127.0.0.1:$listen;"
        echo "        location / {"
        echo "            proxy_pass http://seckill;"
        echo "            proxy_http_version 1.1;"
        echo "            proxy_set_header Connection \"\";"
        echo "        }"
        echo "    }"
        echo "}"
    } >"$conf"
    # Its output (none but a failure to start) apart: a caller may read ours to its end.
    nginx -p "$dir" -e "$dir/error.log" -c "$conf" </dev/null >/dev/null 2>>"$dir/start.log" &
    wait_ready "http://127.0.0.1:$listen/ready" || die "nginx did not start (logs: $dir/start.log, $dir/error.log)"
}

# nginx_stop DIR: stops what nginx_start started there, by its pid file.
nginx_stop() {
    stop_pid "$(realpath -m "$1")/nginx/nginx.pid" nginx
}

# daemons_stop DIR: stops every daemon this file starts under DIR, by their pid files (what does
# not run is passed over): the one list of them, for the cleanups of run.sh and test.sh.
daemons_stop() {
    nginx_stop "$1"
    zk_stop "$1"
    redlock_stop "$1"
    redis_auth_stop "$1"
    cluster_stop "$1"
    services_stop "$1"
}

# The verbs of the command line: "verb|function|arguments after DIR|what it does", one a line.
# The C tests' harness calls them (service/tests/support/harness.c), so a verb's name, arguments
# and output are an interface: what it prints is the only thing it prints on stdout.
SERVICES_VERBS='start|services_start||Redis and PostgreSQL under DIR; writes DIR/env
stop|services_stop||stops what start started there, by its pid files
redis-kill|redis_kill||SIGKILL to the Redis of DIR (a crash)
redis-restart|redis_restart||the Redis of DIR again on its port, from its AOF
pg-kill|pg_kill||PostgreSQL of DIR stopped in immediate mode (a crash)
pg-restart|pg_restart||the PostgreSQL of DIR again on its port, with its last options
redlock-start|redlock_start||two more Redis servers under DIR/redlock-1, -2; prints their ports
redlock-stop|redlock_stop||stops them
redis-auth-start|redis_auth_start|PASSWORD|one more Redis under DIR/redis-auth that asks for PASSWORD; prints its port
redis-auth-stop|redis_auth_stop||stops it
cluster-start|cluster_start||a Redis Cluster of 3 masters and 3 replicas under DIR/cluster; prints its seeds
cluster-stop|cluster_stop||stops it
cluster-node-restart|cluster_node_restart|PORT|its node that listened on PORT, again from its own data
zk-start|zk_start||a ZooKeeper under DIR/zookeeper; prints its port
zk-stop|zk_stop||stops it
nginx-start|nginx_start|PORT UPSTREAM...|nginx on PORT in front of the servers on the UPSTREAM ports
nginx-stop|nginx_stop||stops it
stop-all|daemons_stop||stops every daemon above that runs under DIR, by their pid files'

services_usage() {
    local verb function args what
    echo "usage: ${0##*/} VERB DIR [ARGS], VERB one of:"
    while IFS='|' read -r verb function args what; do
        printf '  %-38s %s\n' "$verb DIR${args:+ $args}" "$what"
    done <<<"$SERVICES_VERBS"
}

# services_main VERB DIR [ARGS]: runs the verb's function with DIR and ARGS; a verb that takes
# arguments needs at least one, the others none.
services_main() {
    local verb function args what
    case ${1:-} in -h | --help)
        services_usage
        return 0
        ;;
    esac
    while IFS='|' read -r verb function args what; do
        [[ $verb == "${1:-}" ]] || continue
        local wanted=2
        [[ -z $args ]] || wanted=3
        if [[ -n ${2:-} ]] && { (($# == wanted)) || { ((wanted == 3)) && (($# > 3)); }; }; then
            shift
            "$function" "$@"
            return
        fi
        echo "${0##*/}: $1 takes DIR${args:+ $args}" >&2
        exit 2
    done <<<"$SERVICES_VERBS"
    [[ -z ${1:-} ]] || echo "${0##*/}: no verb '$1'" >&2
    services_usage >&2
    exit 2
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    services_main "$@"
fi
