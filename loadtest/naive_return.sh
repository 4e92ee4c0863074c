#!/usr/bin/env bash
# naive_return.sh: the field's return of unpaid orders, written the way its bug reports show it
# (codingXiaxw/seckill #41, macrozheng/mall #201 and #311, litemall #275), for the laboratory's
# SCENARIO=unpaid_return and its end-to-end test. DO NOT return stock this way.
#
# usage: naive_return.sh ITEM [CRASH_AFTER [WORK_MS]]
#
# It selects ITEM's unpaid orders past their deadline, then for each one gives its units back to
# the stock in Redis (HINCRBY {item:ITEM}:state stock q) and then marks the order expired in
# PostgreSQL. Two things make it return the same units twice:
#  - the mark comes after the increment: a run killed between the two leaves the order unpaid, and
#    the job's next run selects it and increments again (CRASH_AFTER=n: the run dies by SIGKILL
#    right after its n-th increment, before that order's mark);
#  - the mark has no "AND status = 'persisted'" and nothing remembers which orders were given back:
#    two runs at once (two nodes, each with its own scheduler) both select and both increment.
# WORK_MS (default 50) is the time between an order's increment and its mark (the field's job
# asks the payment provider, logs, notifies the buyer), the window in which a crash or a second
# node strikes.
#
# The mark sets returned_at too (a column the field does not have): so the worker's expiry sweep,
# which finishes returns that ours left owed, takes these for done and stays out of the way.
# Ours is service/worker/expiry.c: PostgreSQL decides (UPDATE ... WHERE status = 'persisted'),
# then lua/order_return.lua gives the units back once per order id.
#
# Reads SECKILL_REDIS_HOST, SECKILL_REDIS_PORT and SECKILL_PG_CONNINFO (scripts/services.sh's
# env). Prints the units it gave back (before it dies, when it crashes).
set -euo pipefail

item=${1:?usage: naive_return.sh ITEM [CRASH_AFTER [WORK_MS]]}
crash_after=${2:-0}
work_ms=${3:-50}
[[ $item =~ ^[0-9]+$ && $crash_after =~ ^[0-9]+$ && $work_ms =~ ^[0-9]+$ ]] ||
    { echo "naive_return: ITEM, CRASH_AFTER and WORK_MS are numbers" >&2; exit 2; }

sql() { psql "$SECKILL_PG_CONNINFO" -XqtA -F ' ' -v ON_ERROR_STOP=1 -c "$1"; }

orders=$(sql "SELECT id, quantity FROM orders
              WHERE item_id = $item AND status = 'persisted' AND pay_by <= now() ORDER BY id")
done=0 units=0
while read -r id quantity; do
    [[ -n $id ]] || continue
    # 1. The units back on sale.
    redis-cli -h "${SECKILL_REDIS_HOST:-127.0.0.1}" -p "$SECKILL_REDIS_PORT" \
        HINCRBY "{item:$item}:state" stock "$quantity" >/dev/null
    done=$((done + 1)) units=$((units + quantity))
    if ((done == crash_after)); then
        echo "$units"
        kill -KILL $$ # the node dies here: the increment is done, the mark never comes
    fi
    sleep "$((work_ms / 1000)).$(printf %03d $((work_ms % 1000)))"
    # 2. The order marked expired, whatever its state now.
    sql "UPDATE orders SET status = 'expired', ended_at = now(), returned_at = now()
         WHERE id = $id" >/dev/null
done <<<"$orders"
echo "$units"
