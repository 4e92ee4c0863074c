#!/usr/bin/env bash
# promtool.sh: runs Prometheus' promtool (arguments passed through). Installing Debian's prometheus
# package would also start a Prometheus server from its init script; this takes only promtool out
# of the package, once, into run/tools/ (apt-get download + dpkg-deb -x), and changes nothing else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools=$PWD/run/tools
promtool=$tools/usr/bin/promtool
if [[ ! -x $promtool ]]; then
    mkdir -p "$tools/deb"
    (cd "$tools/deb" && apt-get download -qq prometheus 2>/dev/null) ||
        { apt-get update -qq && (cd "$tools/deb" && apt-get download -qq prometheus); }
    dpkg-deb -x "$tools"/deb/prometheus_*.deb "$tools"
    rm -rf "$tools/deb"
fi
exec "$promtool" "$@"
