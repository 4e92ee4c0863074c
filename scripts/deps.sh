#!/usr/bin/env bash
# deps.sh: installs the Debian packages seckill needs (plus any named as arguments), only those missing.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config curl libmicrohttpd-dev libhiredis-dev libjansson-dev
    libpq-dev libssl-dev libcurl4-openssl-dev libcriterion-dev libevent-dev redis-server redis-tools postgresql wrk apache2-utils
    nginx-light valgrind chromium nodejs npm zookeeper libslf4j-java libzookeeper-mt-dev python3 "$@")

# A package whose command is already there from elsewhere counts as present: a nodejs from
# NodeSource carries npm and conflicts with Debian's npm package.
declare -A command_of=([nodejs]=node [npm]=npm)
# One dpkg-query for all (one a package took ~0.1 s each, 3 s a call, and CI calls this six times).
declare -A installed=()
while read -r p status; do
    [[ $status != installed ]] || installed[$p]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
missing=()
for p in "${packages[@]}"; do
    [[ -n ${command_of[$p]:-} ]] && command -v "${command_of[$p]}" >/dev/null && continue
    [[ -n ${installed[$p]:-} ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "deps.sh: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
