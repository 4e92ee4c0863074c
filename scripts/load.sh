#!/usr/bin/env bash
# load.sh: `make load`: fires a load test at a running seckill (`make run`, or URL=...) the way the
# documents did, then audits the item: what sold, what reached PostgreSQL, what was oversold.
#
#   make load TOKEN=...                   an item of its own, ab -n 20000 -c 1000, anonymous buyers
#   make load ITEM=3                      ab at item 3 (its per_buyer_limit must cover its stock)
#   make load TOKEN=... TOOL=wrk C=256 D=10s  wrk with loadtest/purchase.lua, every request a buyer
#
# ITEM   the item to buy; without it, TOKEN (the admin token `make run` printed) lets load make its
#        own: "listed": false (never on the sale page), no payment step, STOCK units (1000), a
#        per-buyer limit of STOCK for ab (whose buyers are anonymous: seckill refuses them where
#        the limit is below the stock) and 1 for wrk; archived after the audit (KEEP=1 keeps it)
# N      requests of ab (20000); C: concurrent connections (1000 for ab, 256 for wrk)
# D      duration of wrk (10s); TOOL: ab or wrk (ab)
# URL    the server (http://127.0.0.1:$SECKILL_PORT, port 8080 by default, as make run)
#
# wrk's buyers are named from 2^62 up (loadtest/purchase.lua): no real shop's buyer is one of them.
# The answers are counted by HTTP status and code (ab -v 2 prints each one; purchase.lua tallies
# wrk's). ab's own "Failed requests (Length)" counts answers whose length differs from the
# first one's, which seckill's do by design: only Connect, Receive and Exceptions are failures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
    echo "load: $*" >&2
    exit 1
}

item=${ITEM:-}
token=${TOKEN:-${SECKILL_ADMIN_TOKEN:-}}
tool=${TOOL:-ab}
url=${URL:-http://127.0.0.1:${SECKILL_PORT:-8080}}
stock=${STOCK:-1000}
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

made=0
if [[ -z $item ]]; then
    [[ -n $token ]] || die "ITEM=<id> (an item to buy), or TOKEN=<the admin token make run printed> to let load make its own"
    [[ $stock =~ ^[1-9][0-9]*$ ]] || die "STOCK is a number of units, not '$stock'"
    limit=1
    if [[ $tool == ab ]]; then
        # ab cannot name a buyer per request: its buyers are anonymous, which seckill accepts only
        # where the per-buyer limit covers the stock (at most 1000).
        ((stock <= 1000)) || die "STOCK=$stock: ab's buyers are anonymous, so its item's per-buyer limit must cover the stock, and a limit is at most 1000; take STOCK <= 1000 or TOOL=wrk"
        limit=$stock
    fi
    created=$(curl -sS -X POST -H "Authorization: Bearer $token" \
        -d "{\"name\":\"load\",\"stock\":$stock,\"per_buyer_limit\":$limit,\"payment_timeout_s\":0,\"listed\":false}" \
        "$url/api/v1/items") || die "no server at $url (is \`make run\` up?)"
    item=$(jq -r '.id // empty' <<<"$created" 2>/dev/null || true)
    [[ -n $item ]] || die "could not make an item: $created"
    made=1
    echo "load: made item $item (stock $stock, per-buyer limit $limit, unlisted)"
fi
[[ $item =~ ^[1-9][0-9]*$ ]] || die "ITEM=<id> is the id POST /api/v1/items answered, not '$item'"
before=$(item)
purchase="$url/api/v1/items/$item/purchase"
out=$(mktemp)
body=$(mktemp)
trap 'rm -f "$out" "$body" "$out.tally"' EXIT

# ab and wrk keep one socket a connection: the soft limit of open files must hold them.
if (($(ulimit -n) < conns + 100)); then
    ulimit -n $((conns + 100)) 2>/dev/null || die "ulimit -n is $(ulimit -n): too low for C=$conns"
fi

echo "load: $tool, $([[ $tool == ab ]] && echo "$requests requests" || echo "$duration"), $conns connections -> $purchase"
if [[ $tool == ab ]]; then
    # POST with an empty body: each request an anonymous buyer (make run allows them). A GET
    # would be 405: the purchase is a POST. -v 2 prints every answer (its status line and body:
    # counted below); ab's own "Completed N requests" lines on stderr are the progress.
    ab -v 2 -r -n "$requests" -c "$conns" -s 30 -p "$body" -T application/json "$purchase" \
        2> >(while read -r line; do
            [[ $line =~ ^Completed\ ([0-9]+)\ requests ]] &&
                echo "load: ${BASH_REMATCH[1]} of $requests answered" >&2
        done) >"$out" || { tail -20 "$out" >&2; die "ab failed"; }
    rps=$(awk '/^Requests per second/ { print $4 }' "$out")
    p50=$(awk '/^ +50%/ { print $2 " ms" }' "$out")
    p99=$(awk '/^ +99%/ { print $2 " ms" }' "$out")
    # "(Connect: 0, Receive: 0, Length: 19100, Exceptions: 0)": Length is by design (above).
    failed=$(awk -F'[(,:)]' '/^ +\(Connect/ { gsub(/ /, ""); print $3 + $5 + $9 }' "$out")
    # Each answer: "LOG: header received:", its status line, headers, and the body when it came in
    # the same read (seckill's small JSON always does): "202 queued", "409 sold_out", ...
    awk '/^LOG: header received:/ { if (s != "") print s " " (n == "" ? "-" : n); s = ""; n = ""; next }
         s == "" && /^HTTP\/1\.[01] [0-9][0-9][0-9]/ { s = $2; next }
         s != "" && n == "" && match($0, /"(error|status)":"[a-z_]+"/) {
             n = substr($0, RSTART, RLENGTH); sub(/.*:"/, "", n); sub(/"$/, "", n) }
         END { if (s != "") print s " " (n == "" ? "-" : n) }' "$out" |
        sort | uniq -c | awk '{ print "answers: " $1 " " $2 " " $3 }' >"$out.tally"
    failures=", ${failed:-0} failed (connect, receive, exceptions)"
else
    wrk -t2 -c "$conns" -d "$duration" --latency -s loadtest/purchase.lua "$url" -- "$item" \
        "$(date +%s)" count >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed"; }
    rps=$(awk '/^Requests\/sec/ { print $2 }' "$out")
    p50=$(awk '$1 == "50%" { print $2 }' "$out")
    p99=$(awk '$1 == "99%" { print $2 }' "$out")
    errors=$(awk '/Socket errors/ { sub(/^ +/, ""); print }' "$out")
    grep '^answers: ' "$out" | sort -k3,3 -k2,2nr >"$out.tally" || true
    failures=${errors:+; $errors}
fi
# "20000 answers: 1000 x 202 queued, 19000 x 409 sold_out".
answers=$(awk '{ total += $2; list = list (list == "" ? "" : ", ") $2 " x " $3 " " $4 }
               END { printf "%d answers: %s", total, (list == "" ? "none" : list) }' "$out.tally")
answered_queued=$(awk '$3 == 202 { n += $2 } END { print n + 0 }' "$out.tally")

# The audit, once the worker has persisted what was accepted (queued back to 0).
for _ in {1..300}; do
    after=$(item)
    [[ $(jq .queued <<<"$after") == 0 ]] && break
    sleep 0.1
done
# The buyers' order locks left once the worker drained the item, which a shop's credential reads
# on its detail (locks_held): the worker frees a batch's locks just after its commit, so a lock
# that still stands a second after the drain (well within order_lock_ttl_ms) was left behind.
locks=-
if [[ $(jq .queued <<<"$after") != 0 ]]; then
    locks=undrained
elif [[ -n $token ]]; then
    for _ in {1..10}; do
        locks=$(curl -fsS -H "Authorization: Bearer $token" "$url/api/v1/items/$item" |
            jq -r '.locks_held // "-"') || locks=-
        [[ $locks == 0 || $locks == - ]] && break
        sleep 0.1
    done
fi
jq -r --argjson b "$before" --arg rps "$rps" --arg p50 "$p50" --arg p99 "$p99" \
    --arg answers "$answers$failures" --arg tool "$tool" --argjson queued "$answered_queued" \
    --arg locks "$locks" '
    (.initial_stock + .restocked) as $units
    | ($b.remaining - .remaining) as $sold_now
    | "answers      \($answers)",
      "speed        \($rps) requests/s, p50 \($p50), p99 \($p99)",
      "sold now     \($sold_now) units (remaining \($b.remaining) -> \(.remaining))",
      (if $tool == "wrk" and $sold_now != $queued then
          "note         \($queued) answered 202 and \($sold_now) units sold: wrk stops at the end of its time with requests in flight, whose orders were taken but whose answers it never counted"
       else empty end),
      "the item     \($units) units: sold \(.sold), queued \(.queued), persisted \(.persisted), paid \(.paid), cancelled \(.cancelled), expired \(.expired)",
      "oversold     \(if .remaining < 0 then -.remaining else 0 end)",
      (if $locks == "-" then "locks left   - (TOKEN=, a credential of the shop, lets the audit count the order locks)"
       elif $locks == "undrained" then "locks left   not counted: the item is not drained"
       else "locks left   \($locks) order locks of its buyers after the drain" end),
      (if .queued > 0 then "note         \(.queued) units still queued: the worker is behind (is it running?)" else empty end)
' <<<"$after"

finding=0
if [[ $locks =~ ^[0-9]+$ ]] && ((locks > 0)); then
    echo "finding      $locks order locks stand with nothing of the item left to persist: left behind" >&2
    finding=1
fi

if ((made)) && [[ ${KEEP:-0} != 1 ]]; then
    status=$(curl -sS -o /dev/null -w '%{http_code}' -X DELETE -H "Authorization: Bearer $token" \
        "$url/api/v1/items/$item" || true)
    if [[ $status == 200 ]]; then
        echo "archived     item $item (its orders stay readable; KEEP=1 keeps the item on sale)"
    else
        echo "load: could not archive item $item (HTTP $status)" >&2
    fi
fi
exit $finding
