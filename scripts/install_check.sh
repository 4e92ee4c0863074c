#!/usr/bin/env bash
# install_check.sh: `make install-check`: docs/PRODUCTION.md tried on a clean Debian 12 root, its
# `check:` blocks run as they stand.
#
# 1. A Debian 12 root from Debian's packages (`debootstrap --variant=minbase bookworm`), made once
#    into run/install-check/base and kept (INSTALL_CHECK_REBUILD_BASE=1 makes it again); each run
#    copies it to run/install-check/root. Services are not started by the packages in it
#    (policy-rc.d).
# 2. In that root (chroot), with the host's network, the only traffic being to Debian's mirror:
#    the blocks check:packages and check:build, on a copy of this checkout's files.
# 3. In a network namespace of its own (only its loopback: no port of the host is taken or
#    reached): PostgreSQL and Redis started as Debian installed them (pg_ctlcluster,
#    redis-server with its own config); check:user, check:database, check:redis, check:configure,
#    check:migrate (twice: the second says "up to date"), check:nginx with a self-signed
#    certificate where Let's Encrypt's would be; seckill-server and seckill-worker started by the
#    ExecStart lines of the installed units, as their User, with the environment file: systemd
#    does not run in a chroot, so the units themselves are not started; nginx. Then an item
#    created and one unit bought through nginx over TLS, the order persisted by the worker, both
#    /metrics on their own addresses, check:backup and check:reconcile (exit 0: the books balance).
#
# Needs root (debootstrap, chroot, mounts, namespaces). On two busy cores: about 6 minutes (5 of them
# apt), and 5 more the first time for debootstrap. Everything started is stopped by pid; the mounts
# are undone on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly dir=$PWD/run/install-check
readonly base=$dir/base root=$dir/root doc=docs/PRODUCTION.md
readonly mirror=http://deb.debian.org/debian security_mirror=http://deb.debian.org/debian-security

step() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
die() {
    echo "install-check: $*" >&2
    exit 1
}
((EUID == 0)) || die "needs root (debootstrap, chroot, mounts): run make install-check as root"

# The block `check:NAME` of PRODUCTION.md, as it stands.
block() {
    local text
    text=$(awk -v name="check:$1" '
        $0 ~ "^ *```sh " name "$" { inside = 1; next }
        inside && /^ *```$/ { exit }
        inside { sub(/^  /, ""); print }' "$doc")
    [[ -n $text ]] || die "$doc has no block check:$1"
    printf '%s\n' "$text"
}

# --- the base root ---

if [[ ${INSTALL_CHECK_REBUILD_BASE:-0} == 1 || ! -f $base/.install-check-base ]]; then
    command -v debootstrap >/dev/null || scripts/deps.sh debootstrap
    rm -rf "$base"
    mkdir -p "$dir"
    step "base: debootstrap --variant=minbase bookworm (log: $dir/debootstrap.log)"
    debootstrap --variant=minbase bookworm "$base" "$mirror" >"$dir/debootstrap.log" 2>&1 || {
        tail -n 20 "$dir/debootstrap.log" >&2
        die "debootstrap failed (log: $dir/debootstrap.log)"
    }
    touch "$base/.install-check-base"
else
    step "base: $base, kept from an earlier run (INSTALL_CHECK_REBUILD_BASE=1 makes it again)"
fi

# --- this run's root ---

mounts=("$root/proc" "$root/dev/shm")
pids_dir=$root/run/install-check # pid files of what the check starts in the root

# Stops what the check started in the root, by pid file, then undoes the mounts.
cleanup() {
    # Left only when the steps failed; /run, never var/run: that is a link to the host's /run.
    local f pid sig
    for f in "$pids_dir"/*.pid "$root"/run/nginx.pid "$root"/run/redis/redis-server.pid \
        "$root"/run/postgresql/15-main.pid; do
        [[ -f $f ]] || continue
        pid=$(head -n 1 "$f" 2>/dev/null) || continue
        sig=TERM
        [[ $f == */15-main.pid ]] && sig=INT # PostgreSQL's fast shutdown
        if [[ $pid =~ ^[0-9]+$ ]]; then kill -"$sig" "$pid" 2>/dev/null || true; fi
    done
    sleep 1
    local m
    for m in "${mounts[@]}"; do ! mountpoint -q "$m" || umount "$m" || umount -l "$m" || true; done
}

for m in "${mounts[@]}"; do ! mountpoint -q "$m" || umount "$m"; done
rm -rf "$root"
step "root: a copy of the base in $root"
cp -a "$base" "$root"
trap cleanup EXIT
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
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
# No package starts its service here: the check starts them, in its own network namespace.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
mkdir -p "$pids_dir"

# This checkout's files (tracked and new, not ignored), as a source tarball would hold them.
src=/usr/src/seckill
mkdir -p "$root$src"
git ls-files -z --cached --others --exclude-standard |
    tar --null -T - --ignore-failed-read -c 2>/dev/null | tar -x -C "$root$src"

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 /bin/bash -euo pipefail "$@"; }

# --- packages and build: the host's network, for Debian's mirror ---

step "check:packages (apt, from $mirror; log: $dir/packages.log)"
block packages | in_root -s >"$dir/packages.log" 2>&1 || {
    tail -n 20 "$dir/packages.log" >&2
    die "check:packages failed (log: $dir/packages.log)"
}
step "check:build in $src (log: $dir/build.log)"
{ echo "cd $src"; block build; } | in_root -s >"$dir/build.log" 2>&1 || {
    tail -n 30 "$dir/build.log" >&2
    die "check:build failed (log: $dir/build.log)"
}
grep -E '^-- Installing: ' "$dir/build.log" | sed 's/^-- Installing: /  installed /'

# --- the rest: a network namespace of its own, only loopback ---

# What the check does around the blocks (starting what systemd would) and its checks.
cat >"$root/run/install-check/steps.sh" <<'STEPS'
step() { printf '        %s\n' "$*"; }
fail() { echo "install-check: $*" >&2; exit 1; }
pids=/run/install-check

step "PostgreSQL 15 and Redis, as Debian installed them"
pg_ctlcluster 15 main start
install -d -o redis -g redis /run/redis /var/log/redis
redis_start() {
    runuser -u redis -- redis-server /etc/redis/redis.conf --daemonize yes \
        --pidfile /run/redis/redis-server.pid
    for _ in $(seq 50); do redis-cli ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
    fail "redis did not start"
}
redis_start

step "check:user"; check_user
step "check:database"; check_database
step "check:redis"; check_redis
redis-cli shutdown nosave >/dev/null 2>&1 || true
sleep 0.5
redis_start
[[ $(redis-cli config get appendonly | tail -n 1) == yes ]] || fail "appendonly is not on"
step "check:configure"; check_configure
[[ $(stat -c %a /etc/seckill/seckill.env) == 600 ]] || fail "seckill.env is not mode 0600"

step "check:migrate, twice"
out=$(check_migrate 2>&1) || fail "migrate: $out"
printf '%s\n' "$out" | sed 's/^/          /'
grep -q 'applied .*/001_init.sql' <<<"$out" || fail "migrate applied nothing"
grep -q 'schema version .* migrated' <<<"$out" || fail "migrate did not say the version"
out=$(check_migrate 2>&1) || fail "migrate again: $out"
printf '%s\n' "$out" | sed 's/^/          /'
grep -q 'schema version .* up to date' <<<"$out" || fail "a second migrate was not up to date"

step "check:nginx (a self-signed certificate where Let's Encrypt's would be)"
live=/etc/letsencrypt/live/shop.example
install -d "$live"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=shop.example \
    -keyout "$live/privkey.pem" -out "$live/fullchain.pem" 2>/dev/null
check_nginx 2>&1 | sed 's/^/          /'

# systemd does not run in a chroot: the units' own ExecStart lines, as their User, with their
# environment file.
unit_dir=/usr/local/lib/systemd/system
start_unit() { # unit name, pid file, extra environment
    local unit=$1 name=$2 exec user
    exec=$(sed -n 's/^ExecStart=//p' "$unit_dir/$unit")
    user=$(sed -n 's/^User=//p' "$unit_dir/$unit")
    [[ -x ${exec%% *} ]] || fail "$unit: ExecStart names ${exec%% *}, which is not installed"
    step "$unit: $exec (as $user)"
    # shellcheck disable=SC2086 # the ExecStart line is words
    (set -a; . /etc/seckill/seckill.env; if (($# > 2)); then export "${@:3}"; fi
     exec setpriv --reuid="$user" --regid="$user" --init-groups $exec) >"/var/log/$name.log" 2>&1 &
    echo $! >"$pids/$name.pid"
}
start_unit seckill-server.service seckill-server
start_unit seckill-worker@.service seckill-worker SECKILL_WORKER_ID=check-1
for _ in $(seq 100); do curl -fs http://127.0.0.1:8080/ready >/dev/null && break; sleep 0.1; done
curl -fs http://127.0.0.1:8080/ready >/dev/null || { cat /var/log/seckill-server.log; fail "the server is not ready"; }
nginx
step "nginx started"

url=https://shop.example
tls=(curl -sS --resolve shop.example:443:127.0.0.1 --cacert /etc/letsencrypt/live/shop.example/fullchain.pem)
token=$(set -a; . /etc/seckill/seckill.env; echo "$SECKILL_ADMIN_TOKEN")
[[ $(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1/health -H 'Host: shop.example') == 301 ]] ||
    fail "port 80 does not send to https"
item=$("${tls[@]}" -X POST -H "Authorization: Bearer $token" -d '{"name":"check","stock":5}' \
    "$url/api/v1/items" | sed -E 's/.*"id":([0-9]+).*/\1/')
[[ $item =~ ^[0-9]+$ ]] || fail "no item created through nginx: $item"
answer=$("${tls[@]}" -w ' %{http_code}' -X POST -d '{"user_id":"7"}' "$url/api/v1/items/$item/purchase")
step "bought through nginx over TLS: $answer"
[[ $answer == *' 202' ]] || fail "the purchase was not accepted"
order=$(sed -E 's/.*"order_id":"([0-9]+)".*/\1/' <<<"$answer")
for _ in $(seq 100); do
    state=$("${tls[@]}" -H "Authorization: Bearer $token" "$url/api/v1/orders/$order")
    [[ $state == *'"status":"persisted"'* ]] && break
    sleep 0.1
done
[[ $state == *'"status":"persisted"'* ]] || fail "the order was not persisted: $state"
step "the order persisted by the worker: $state"
metric() { curl -fsS "http://$1/metrics" | grep -E "^$2" | head -n 1; }
m=$(metric 127.0.0.1:9100 'seckill_purchases_total\{outcome="queued"\}') || fail "no /metrics on metrics_listen"
[[ $m == *' 1' ]] || fail "metrics_listen: $m"
step "server's metrics_listen: $m"
m=$(metric 127.0.0.1:9101 'seckill_worker_') || fail "no /metrics on worker_metrics_port"
step "worker's metrics: $m"
[[ $(curl -s -o /dev/null -w '%{http_code}' --resolve shop.example:443:127.0.0.1 -k "$url/metrics") == 404 ]] ||
    fail "/metrics is served through nginx"

step "check:backup"; check_backup
pg_restore --list /var/backups/seckill/seckill.dump | grep -q 'TABLE DATA public orders' ||
    fail "the dump holds no orders"
step "check:reconcile"
out=$(check_reconcile 2>&1) || fail "reconcile (exit $?): $out"
printf '%s\n' "$out" | sed 's/^/          /'

kill "$(cat "$pids/seckill-server.pid")" "$(cat "$pids/seckill-worker.pid")"
wait
rm -f "$pids"/*.pid
step "server and worker stopped by SIGTERM"
nginx -s stop 2>/dev/null
redis-cli shutdown >/dev/null 2>&1 || true
pg_ctlcluster 15 main stop
STEPS

# Each block a function of the steps' shell, so that its variables reach the next block.
{
    for name in user database redis configure migrate nginx backup reconcile; do
        printf 'check_%s() {\n%s\n}\n' "$name" "$(block "$name")"
    done
} >"$root/run/install-check/blocks.sh"

step "in a network namespace of its own: the database, configuration, migrations, nginx, a purchase"
unshare --net /bin/bash -c "ip link set lo up && exec chroot '$root' /usr/bin/env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    /bin/bash -euo pipefail -c '. /run/install-check/blocks.sh; . /run/install-check/steps.sh'" ||
    die "failed (logs under $root/var/log: seckill-server.log, seckill-worker.log, postgresql/, nginx/)"
step "install-check: PRODUCTION.md's steps passed on a clean Debian 12 root"
