#!/usr/bin/env bash
# docker_check.sh: `make docker-check`: builds the image on a machine without an image registry and runs it, alone and under docker-compose, against a loopback Redis and PostgreSQL.
#
# 1. A Docker engine: the one DOCKER_HOST (or /var/run/docker.sock) names when it answers, used and
#    left running; else a private dockerd of Debian's docker.io under run/docker (its data-root,
#    exec-root, socket and pid file there; no iptables, no bridge: everything is on the host's
#    network), stopped at the end by its pid file.
# 2. The base image the Dockerfile names (ARG BASE), made from Debian's packages by
#    `debootstrap --variant=minbase bookworm` and `docker import`ed under that tag; kept in the
#    engine for the next run (DOCKER_CHECK_REBUILD_BASE=1 makes it again).
# 3. `docker build --network host`, then the image alone (docker run --network host): its migrate
#    script, a server and a worker against a Redis and a PostgreSQL of scripts/services.sh on
#    127.0.0.1. An item, one unit bought, the order persisted by the worker (in the API and in
#    PostgreSQL), the HEALTHCHECK healthy, /lab served with the laboratory off (404 lab_off).
# 4. The same through docker-compose.yml with docker-compose.host.yml (see there: migrate, two
#    servers and a worker, the servers on ports of their own), against a fresh Redis and
#    PostgreSQL: bought through one server, followed through the other.
#
# Every address is 127.0.0.1; the only other traffic is to the Debian mirror (debootstrap, and apt
# inside the build). Containers are removed by name, services and dockerd stopped by pid file, also
# when the check fails. Needs root for dockerd and debootstrap.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=services.sh
source scripts/services.sh

# Not `dir`: services.sh's functions have a local of that name, which the EXIT trap would see
# when Ctrl-C comes while one of them runs.
readonly docker_dir=$PWD/run/docker
image=seckill:latest # the name docker-compose.yml gives it
mirror=http://deb.debian.org/debian
security_mirror=http://deb.debian.org/debian-security
run_names=(seckill-check-migrate seckill-check-server seckill-check-worker)
compose=(docker-compose -p seckill-check -f docker-compose.yml -f docker-compose.host.yml)
# Docker's legacy builder: Debian's docker.io has no buildx, and --network host works alike in both.
export DOCKER_BUILDKIT=0

step() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
need_root() { ((EUID == 0)) || die "$1 needs root: run make docker-check as root"; }

# --- the Docker engine ---

dockerd_started=0
# Folders the engine makes outside its roots (a shim's sockets, plugin discovery): those that were
# not there before a private dockerd started are removed after it stopped, when empty (each
# listed before its parent).
engine_dirs=(/run/containerd/s /run/containerd /run/docker/plugins /run/docker)
engine_dirs_new=()

engine_start() {
    if [[ -z ${DOCKER_HOST:-} ]] && live_pid "$docker_dir/dockerd.pid" dockerd >/dev/null; then
        # A private dockerd left by a check that was killed: ours, so used and stopped at the end.
        export DOCKER_HOST=unix://$docker_dir/docker.sock
        dockerd_started=1
        docker info >/dev/null 2>&1 || die "the dockerd of $docker_dir/dockerd.pid does not answer"
        step "Docker engine: the private dockerd an earlier check left ($docker_dir)"
        return 0
    fi
    if docker info >/dev/null 2>&1; then
        step "Docker engine: ${DOCKER_HOST:-unix:///var/run/docker.sock}, already running (left so)"
        return 0
    fi
    [[ -z ${DOCKER_HOST:-} ]] || die "DOCKER_HOST=$DOCKER_HOST does not answer"
    need_root "starting dockerd"
    command -v dockerd >/dev/null || scripts/deps.sh docker.io
    local d
    for d in "${engine_dirs[@]}"; do [[ -e $d ]] || engine_dirs_new+=("$d"); done
    echo '{}' >"$docker_dir/daemon.json" # not /etc/docker/daemon.json: this engine is ours alone
    export DOCKER_HOST=unix://$docker_dir/docker.sock
    dockerd_started=1
    setsid dockerd --config-file "$docker_dir/daemon.json" --data-root "$docker_dir/data" \
        --exec-root "$docker_dir/exec" --pidfile "$docker_dir/dockerd.pid" -H "$DOCKER_HOST" \
        --iptables=false --ip6tables=false --bridge=none --ip-forward=false --ip-masq=false \
        --userland-proxy=false </dev/null >"$docker_dir/dockerd.log" 2>&1 &
    # setsid execs dockerd in place (we are not a process group leader): $! is dockerd.
    local pid=$!
    for _ in {1..600}; do
        if [[ $(live_pid "$docker_dir/dockerd.pid" dockerd) == "$pid" ]] &&
            docker info >/dev/null 2>&1; then
            step "Docker engine: a private dockerd (pid $pid, $docker_dir)"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    tail -n 20 "$docker_dir/dockerd.log" >&2
    die "dockerd did not start (log: $docker_dir/dockerd.log)"
}

engine_stop() {
    ((dockerd_started)) || return 0
    stop_pid "$docker_dir/dockerd.pid" dockerd
    # dockerd stops the containerd it started; should that one outlive it, its own pid file.
    stop_pid "$docker_dir/exec/containerd/containerd.pid" containerd
    # What dockerd may leave mounted in its roots, each named: never a search of the mount table.
    local m
    for m in "$docker_dir/exec/netns/default" "$docker_dir/data"; do
        ! mountpoint -q "$m" || umount "$m" || true
    done
    for m in "${engine_dirs_new[@]}"; do rmdir "$m" 2>/dev/null || true; done
}

# --- the base image ---

base_image() {
    local base rootfs
    base=$(sed -n 's/^ARG BASE=//p' Dockerfile)
    [[ -n $base ]] || die "the Dockerfile names no base image (ARG BASE=...)"
    if [[ ${DOCKER_CHECK_REBUILD_BASE:-0} != 1 ]] && docker image inspect "$base" >/dev/null 2>&1; then
        step "base image $base: already there (DOCKER_CHECK_REBUILD_BASE=1 makes it again)"
        return 0
    fi
    need_root debootstrap
    command -v debootstrap >/dev/null || scripts/deps.sh debootstrap
    rootfs=$docker_dir/base/rootfs
    rm -rf "$rootfs"
    mkdir -p "$docker_dir/base"
    step "base image $base: debootstrap --variant=minbase bookworm (log: $docker_dir/base/debootstrap.log)"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$docker_dir/base/debootstrap.log" 2>&1 || {
        tail -n 20 "$docker_dir/base/debootstrap.log" >&2
        die "debootstrap failed (log: $docker_dir/base/debootstrap.log)"
    }
    # The official image's sources: the release, its updates and its security fixes.
    rm -f "$rootfs/etc/apt/sources.list"
    cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar --numeric-owner -C "$rootfs" -c . |
        docker import --message "debootstrap --variant=minbase bookworm $mirror" \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'CMD ["bash"]' - "$base" >/dev/null
    rm -rf "$rootfs"
    step "base image $base: imported"
}

# --- HTTP ---

# call METHOD URL [BODY] [admin]: the answer's body in $body, its status in $status.
call() {
    local args=(-sS -o "$docker_dir/answer" -w '%{http_code}' -X "$1")
    [[ -z ${3:-} ]] || args+=(-H 'Content-Type: application/json' -d "$3")
    [[ ${4:-} != admin ]] || args+=(-H "Authorization: Bearer $SECKILL_ADMIN_TOKEN")
    status=$(curl "${args[@]}" "$2" 2>/dev/null) || status=000
    body=$(cat "$docker_dir/answer" 2>/dev/null || true)
}

expect() {
    [[ $status == "$1" ]] || die "$2: expected HTTP $1, got $status: $body"
}

# wait_ready URL CONTAINER: until URL/ready answers 200 (up to 60 s), or the container stopped.
wait_ready() {
    for _ in {1..600}; do
        call GET "$1/ready"
        [[ $status == 200 ]] && return 0
        [[ $(docker inspect -f '{{.State.Running}}' "$2" 2>/dev/null) == true ]] || break
        sleep 0.1
    done
    docker logs --tail 20 "$2" >&2 || true
    die "$2 is not ready on $1 (last answer: $status $body)"
}

# wait_healthy CONTAINER: the image's HEALTHCHECK (curl inside the image, every 5 s) says healthy.
wait_healthy() {
    local health
    for _ in {1..300}; do
        health=$(docker inspect -f '{{.State.Health.Status}}' "$1")
        [[ $health == healthy ]] && return 0
        sleep 0.2
    done
    die "$1: HEALTHCHECK says $health after 60 s"
}

# sale BUY_URL READ_URL CONNINFO: an item of one unit made and bought through BUY_URL, the order
# followed through READ_URL until the worker persisted it, then counted in PostgreSQL; /lab served
# by READ_URL with the laboratory off (the image's default).
sale() {
    local buy=$1 read=$2 conninfo=$3 item order rows
    call POST "$buy/api/v1/items" '{"name":"docker-check","stock":1,"payment_timeout_s":0}' admin
    expect 201 "create an item"
    item=$(jq -r .id <<<"$body")
    call POST "$buy/api/v1/items/$item/purchase" '{"user_id":1}'
    expect 202 "buy one unit of item $item"
    order=$(jq -r .order_id <<<"$body")
    for _ in {1..300}; do
        call GET "$read/api/v1/orders/$order"
        expect 200 "read order $order"
        [[ $(jq -r .status <<<"$body") == persisted ]] && break
        sleep 0.1
    done
    [[ $(jq -r .status <<<"$body") == persisted ]] || die "order $order not persisted after 30 s: $body"
    rows=$("$(pg_bin)/psql" "$conninfo" -X -tAc "select count(*) from orders where id = $order and item_id = $item")
    [[ $rows == 1 ]] || die "order $order: $rows rows in PostgreSQL, expected 1"
    step "  item $item: one unit bought, order $order persisted (1 row in PostgreSQL)"
    call GET "$read/lab"
    expect 200 "GET /lab"
    call GET "$read/lab/results.json"
    expect 404 "GET /lab/results.json (the image's laboratory is off)"
    [[ $(jq -r .error <<<"$body") == lab_off ]] || die "/lab/results.json: not lab_off: $body"
    call GET "$read/api/v1/experiments/local_unsafe/purchase?item=$item&user_id=5"
    expect 404 "a laboratory purchase (the image's laboratory is off)"
    step "  /lab serves; the laboratory is off (404 lab_off)"
}

# --- the two stacks ---

check_run() {
    local port url
    services_start "$docker_dir/services-run" >/dev/null
    # shellcheck source=/dev/null
    source "$docker_dir/services-run/env"
    port=$(free_port)
    url=http://127.0.0.1:$port
    step "docker run: migrate, server on $url, worker (Redis $SECKILL_REDIS_PORT, PostgreSQL on loopback)"
    local run=(docker run --network host -e SECKILL_REDIS_HOST -e SECKILL_REDIS_PORT -e SECKILL_PG_CONNINFO
        -e SECKILL_ADMIN_TOKEN)
    "${run[@]}" --rm --name seckill-check-migrate "$image" /usr/local/share/seckill/scripts/migrate.sh |
        sed 's/^/  /'
    "${run[@]}" -d --name seckill-check-server -e SECKILL_HOST=127.0.0.1 -e SECKILL_PORT="$port" \
        "$image" >/dev/null
    "${run[@]}" -d --name seckill-check-worker "$image" seckill-worker >/dev/null
    wait_ready "$url" seckill-check-server
    sale "$url" "$url" "$SECKILL_PG_CONNINFO"
    wait_healthy seckill-check-server
    step "  HEALTHCHECK: healthy"
    # The next stack's worker must be the one that persists its order.
    docker rm -f "${run_names[@]}" >/dev/null 2>&1 || true
}

compose_up=0
check_compose() {
    local url1 url2
    services_start "$docker_dir/services-compose" >/dev/null
    # shellcheck source=/dev/null
    source "$docker_dir/services-compose/env"
    export SECKILL_PG_PASSWORD=unused SECKILL_HOST_REDIS_PORT=$SECKILL_REDIS_PORT
    export SECKILL_HOST_PG_CONNINFO=$SECKILL_PG_CONNINFO
    SECKILL_HOST_PORT_1=$(free_port)
    SECKILL_HOST_PORT_2=$(free_port "$SECKILL_HOST_PORT_1")
    export SECKILL_HOST_PORT_1 SECKILL_HOST_PORT_2
    url1=http://127.0.0.1:$SECKILL_HOST_PORT_1
    url2=http://127.0.0.1:$SECKILL_HOST_PORT_2
    step "docker-compose: build (log: $docker_dir/compose.log)"
    "${compose[@]}" build >"$docker_dir/compose.log" 2>&1 ||
        { tail -n 20 "$docker_dir/compose.log" >&2; die "docker-compose build failed"; }
    step "docker-compose: migrate, server-1 on $url1, server-2 on $url2, worker"
    compose_up=1
    "${compose[@]}" run -T --rm --no-deps migrate 2>>"$docker_dir/compose.log" | sed 's/^/  /'
    "${compose[@]}" up -d --no-deps --no-build server-1 server-2 worker >>"$docker_dir/compose.log" 2>&1 ||
        { tail -n 20 "$docker_dir/compose.log" >&2; die "docker-compose up failed"; }
    wait_ready "$url1" seckill-check_server-1_1
    wait_ready "$url2" seckill-check_server-2_1
    sale "$url1" "$url2" "$SECKILL_PG_CONNINFO"
}

# --- the run ---

# shellcheck disable=SC2317  # only called by the EXIT trap
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if docker info >/dev/null 2>&1; then
        if ((status != 0)); then
            local c
            for c in $(docker ps -aq --filter name=seckill-check); do
                echo "--- the last lines of $(docker inspect -f '{{.Name}}' "$c"):" >&2
                docker logs --tail 15 "$c" >&2 2>&1 || true
            done
        fi
        docker rm -f "${run_names[@]}" >/dev/null 2>&1 || true
        ((compose_up == 0)) || "${compose[@]}" down -v --remove-orphans >>"$docker_dir/compose.log" 2>&1 || true
    fi
    services_stop "$docker_dir/services-compose"
    services_stop "$docker_dir/services-run"
    engine_stop
    rm -f "$docker_dir/check.pid"
    if ((status == 0)); then
        step "docker-check: passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
    else
        step "docker-check: FAILED (logs under $docker_dir)" >&2
    fi
}

mkdir -p "$docker_dir"
! live_pid "$docker_dir/check.pid" docker_check.sh >/dev/null || die "a docker-check is already running ($docker_dir/check.pid)"
echo $$ >"$docker_dir/check.pid"
SECONDS=0
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Fresh backends at every run; those of a check that was killed are stopped first (ours: the
# check.pid above says no other check runs here).
for services in "$docker_dir/services-run" "$docker_dir/services-compose"; do
    services_stop "$services"
    rm -rf "$services"
done
scripts/deps.sh docker-compose jq
command -v docker >/dev/null || scripts/deps.sh docker.io
engine_start
base_image
step "docker build --network host -t $image . (log: $docker_dir/build.log)"
docker build --network host -t "$image" . >"$docker_dir/build.log" 2>&1 ||
    { tail -n 30 "$docker_dir/build.log" >&2; die "docker build failed"; }
step "built $image"
SECKILL_ADMIN_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
export SECKILL_ADMIN_TOKEN SECKILL_PG_FAST=1
check_run
check_compose
