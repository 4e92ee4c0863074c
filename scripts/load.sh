#!/usr/bin/env bash
# load.sh: `make load`: fires a load test at a running seckill (`make run`, or URL=...) the way the
# documents did, then audits the item: what sold, what reached PostgreSQL, what was oversold.
#
#   make load ITEM=3                      ab -n 20000 -c 1000, every request a new anonymous buyer
#   make load ITEM=3 TOOL=wrk C=256 D=10s wrk with loadtest/purchase.lua, every request a new buyer
#
# ITEM   the item to buy (required; POST /api/v1/items made it)
# N      requests of ab (20000); C: concurrent connections (1000 for ab, 256 for wrk)
# D      duration of wrk (10s); TOOL: ab or wrk (ab)
# URL    the server (http://127.0.0.1:$SECKILL_PORT, port 8080 by default, as make run)
#
# ab counts every answer whose length differs from the first one's as "Failed requests
# (Length)". seckill's answers differ by design (each 202 carries its own order id and the stock
# left; 409 sold_out is shorter), so those are not failures: this script reports the failures
# that are (Connect, Receive, Exceptions) and the answers by status instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
    echo "load: $*" >&2
    exit 1
}

item=${ITEM:-}
tool=${TOOL:-ab}
url=${URL:-http://127.0.0.1:${SECKILL_PORT:-8080}}
[[ $item =~ ^[1-9][0-9]*$ ]] || die "ITEM=<id> is required (the id POST /api/v1/items answered)"
case $tool in
ab) conns=${C:-1000} ;;
wrk) conns=${C:-256} ;;
*) die "TOOL is ab or wrk, not '$tool'" ;;
esac
requests=${N:-20000}
duration=${D:-10s}
# ab comes with apache2-utils, wrk with wrk (both in deps.sh's list); jq reads the answers.
if ! command -v "$tool" >/dev/null || ! command -v jq >/dev/null; then
    scripts/deps.sh jq
fi

# item: the item's detail as JSON, or a clear stop.
item() {
    curl -fsS "$url/api/v1/items/$item" 2>/dev/null ||
        die "no item $item at $url (is \`make run\` up? is the id right?)"
}
before=$(item)
purchase="$url/api/v1/items/$item/purchase"
out=$(mktemp)
body=$(mktemp)
trap 'rm -f "$out" "$body"' EXIT

# ab and wrk keep one socket a connection: the soft limit of open files must hold them.
if (($(ulimit -n) < conns + 100)); then
    ulimit -n $((conns + 100)) 2>/dev/null || die "ulimit -n is $(ulimit -n): too low for C=$conns"
fi

echo "load: $tool, $([[ $tool == ab ]] && echo "$requests requests" || echo "$duration"), $conns connections -> $purchase"
if [[ $tool == ab ]]; then
    # POST with an empty body: each request an anonymous buyer (make run allows them). A GET
    # would be 405: the purchase is a POST.
    ab -q -r -n "$requests" -c "$conns" -s 30 -p "$body" -T application/json "$purchase" >"$out" 2>&1 ||
        { cat "$out" >&2; die "ab failed"; }
    rps=$(awk '/^Requests per second/ { print $4 }' "$out")
    p50=$(awk '/^ +50%/ { print $2 " ms" }' "$out")
    p99=$(awk '/^ +99%/ { print $2 " ms" }' "$out")
    complete=$(awk '/^Complete requests/ { print $3 }' "$out")
    # "(Connect: 0, Receive: 0, Length: 19100, Exceptions: 0)": Length is by design (above).
    failed=$(awk -F'[(,:)]' '/^ +\(Connect/ { gsub(/ /, ""); print $3 + $5 + $9 }' "$out")
    non2xx=$(awk '/^Non-2xx responses/ { print $3 }' "$out")
    answers="$complete complete, ${non2xx:-0} not 2xx (409 sold_out once the stock is gone), ${failed:-0} failed"
else
    wrk -t2 -c "$conns" -d "$duration" --latency -s loadtest/purchase.lua "$url" -- "$item" \
        "$(date +%s)000" >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed"; }
    rps=$(awk '/^Requests\/sec/ { print $2 }' "$out")
    p50=$(awk '$1 == "50%" { print $2 }' "$out")
    p99=$(awk '$1 == "99%" { print $2 }' "$out")
    complete=$(awk '/requests in/ { print $1 }' "$out")
    errors=$(awk '/Socket errors/ { print }' "$out")
    non2xx=$(awk '/Non-2xx or 3xx responses/ { print $5 }' "$out")
    answers="$complete complete, ${non2xx:-0} not 2xx (409 sold_out once the stock is gone)${errors:+; $errors}"
fi

# The audit, once the worker has persisted what was accepted (queued back to 0).
for _ in {1..300}; do
    after=$(item)
    [[ $(jq .queued <<<"$after") == 0 ]] && break
    sleep 0.1
done
jq -r --argjson b "$before" --arg rps "$rps" --arg p50 "$p50" --arg p99 "$p99" --arg answers "$answers" '
    (.initial_stock + .restocked) as $units
    | ($b.remaining - .remaining) as $sold_now
    | "answers      \($answers)",
      "speed        \($rps) requests/s, p50 \($p50), p99 \($p99)",
      "sold now     \($sold_now) units (remaining \($b.remaining) -> \(.remaining))",
      "the item     \($units) units: sold \(.sold), queued \(.queued), persisted \(.persisted), paid \(.paid), cancelled \(.cancelled), expired \(.expired)",
      "oversold     \(if .remaining < 0 then -.remaining else 0 end)",
      (if .queued > 0 then "note         \(.queued) units still queued: the worker is behind (is it running?)" else empty end)
' <<<"$after"
