"""bench_report: what a `make bench` run writes: its table, the CPU table and the rounds
(Markdown), its JSON (loadtest/results/bench.json's format) and the section of PERFORMANCE.md
between the bench markers, from the figures bench.py measured."""

import os

from . import figures
from .bench_pow import pow_rows
from .bench_room import room_rows

WRK_CASES = [  # name, label, target ratio to the ceiling
    ("ceiling", "1 ceiling (nginx)", None),
    ("health", "1b GET /health", 0.8),
    ("purchase", "2 purchase", 0.5),
    ("script", "2s purchase, order_guard = script", None),
    ("storm", "3 sell-out storm", 0.9),
    ("prestart", "3b pre-start storm", 0.9),
]
PROCS = ["server", "redis", "worker", "pg", "nginx", "wrk"]


def order_guard(med):
    """Issue 30's row: purchases/s and Redis CPU a purchase of order_guard = lock (the default)
    against order_guard = script, from the same rounds, and their ratios (lock over script)."""
    lock, script = med["purchase"], med["script"]
    return {"lock_purchases_per_s": lock["rps"], "script_purchases_per_s": script["rps"],
            "purchases_ratio_lock_to_script": figures.ratio(lock["rps"], script["rps"]),
            "lock_redis_cpu_us_a_purchase": lock["cpu"]["redis"],
            "script_redis_cpu_us_a_purchase": script["cpu"]["redis"],
            "redis_cpu_ratio_lock_to_script": figures.ratio(lock["cpu"]["redis"], script["cpu"]["redis"])}


def guard_sentence(g):
    return (f"order_guard: lock {figures.thousands(g['lock_purchases_per_s'])} purchases/s, Redis "
            f"{g['lock_redis_cpu_us_a_purchase']} us a purchase; script {figures.thousands(g['script_purchases_per_s'])}"
            f" purchases/s, Redis {g['script_redis_cpu_us_a_purchase']} us a purchase: lock/script "
            f"{g['purchases_ratio_lock_to_script']:.2f} of the purchases/s, {g['redis_cpu_ratio_lock_to_script']:.2f} "
            f"of the Redis CPU")


def yes(ok):
    return "yes" if ok else "**no**"


def render_tables(b):
    s, med, out = b.s, b.med, b.out
    ceiling = med["ceiling"]["rps"]

    def r(n):
        return figures.ratio(med[n]["rps"], ceiling)

    def lat(n, p50=True):
        m = med[n]
        return (f"p50 {figures.fixed(m['p50'], 2)} ms, " if p50 else "") + f"p99 {figures.fixed(m['p99'], 2)} ms"

    d, a, mem, wh = out["drain"], out["ab"], out["memory"], out["webhooks"]
    g = order_guard(med)
    sold_ok = all(x == 1000 for x in b.storm_sold)
    sold = " ".join(map(str, b.storm_sold))
    rows = [
        "| # | measurement | result | target | met |",
        "|---|---|---|---|---|",
        f"| 1 | ceiling: nginx, 1 worker, fixed 200 JSON | {figures.thousands(ceiling)} req/s, {lat('ceiling')} | - | - |",
        f"| 1b | GET /health: our HTTP layer alone | {figures.thousands(med['health']['rps'])} req/s (**{r('health'):.2f}** "
        f"of the ceiling), {lat('health')} | >= 0.8 | {yes(r('health') >= 0.8)} |",
        f"| 2 | purchase, stock 10,000,000, {s.conns} connections, the worker draining | "
        f"{figures.thousands(med['purchase']['rps'])} req/s (**{r('purchase'):.2f}** of the ceiling), {lat('purchase')} | "
        f">= 0.5, p99 <= 10 ms | {yes(r('purchase') >= 0.5 and (med['purchase']['p99'] or 99) <= 10)} |",
        f"| 2s | order_guard = lock (2) against order_guard = script, the same rounds | lock "
        f"{figures.thousands(g['lock_purchases_per_s'])} purchases/s, Redis {g['lock_redis_cpu_us_a_purchase']} us a "
        f"purchase; script {figures.thousands(g['script_purchases_per_s'])} purchases/s, Redis "
        f"{g['script_redis_cpu_us_a_purchase']} us: lock/script **{g['purchases_ratio_lock_to_script']:.2f}** of the "
        f"purchases/s, **{g['redis_cpu_ratio_lock_to_script']:.2f}** of the Redis CPU | - | - |",
        f"| 3 | sell-out storm, stock 1000 | {figures.thousands(med['storm']['rps'])} req/s (**{r('storm'):.2f}** of the "
        f"ceiling), {lat('storm', False)}; sold per round: {sold} | >= 0.9, exactly 1000 sold | "
        f"{yes(r('storm') >= 0.9 and sold_ok)} |",
        f"| 3b | pre-start storm: every buyer before the start | {figures.thousands(med['prestart']['rps'])} req/s "
        f"(**{r('prestart'):.2f}** of the ceiling), {lat('prestart', False)}; sold before the start: {b.early_sold} | "
        f">= 0.9, nothing sold | {yes(r('prestart') >= 0.9 and b.early_sold == 0)} |",
        f"| 4 | worker drain, {figures.thousands(d['orders'])} orders | {figures.thousands(d['orders_per_s'])} orders/s "
        f"({d['seconds']:.2f} s, {d['rows']} rows); raw COPY {figures.thousands(d['copy_rows_per_s'])} rows/s "
        f"({d['copy_seconds']:.2f} s): **{d['ratio_to_copy']:.2f}** | >= 100,000/s, >= 0.5 of COPY | "
        f"{yes(d['orders_per_s'] >= 100000 and d['ratio_to_copy'] >= 0.5 and d['rows'] == d['orders'])} |",
        f"| 5 | ab -c 10000 -n 20000, stock {a['stock']} | {a['seconds'] or '?'} s, {a['failed'] if a['failed'] is not None else '?'} "
        f"failed, {a['complete'] or '?'} complete ({a['non2xx']} answered 409 sold_out), sold {a['sold']}, oversold "
        f"{a['oversold']} | < 3 s, 0 failed, 0 oversold | "
        f"{yes((a['seconds'] or 999) < 3 and a['failed'] == 0 and a['oversold'] == 0 and a['complete'] == 20000)} |",
        f"| 6 | server RSS, 10,000 idle connections | {mem['rss_kib'] / 1024:.1f} MiB with {mem['connections']} open "
        f"({mem['rss_idle_kib'] / 1024:.1f} MiB before) | <= 64 MiB | "
        f"{yes(mem['rss_kib'] <= 65536 and mem['connections'] >= 10000)} |",
        f"| 7 | purchases (2) with seckill-webhooks delivering to two endpoints, against none, alternating rounds | "
        f"{figures.thousands(wh['purchases_per_s_with_two_endpoints'])} against "
        f"{figures.thousands(wh['purchases_per_s_without'])} purchases/s: **{wh['ratio']:.2f}** (median of the rounds' "
        f"ratios); {figures.thousands(wh['delivered_per_s'])} events delivered/s, storm start to the last delivery"
        f"{'' if wh['all_delivered'] else ' (not all within ' + str(wh['wait_s']) + ' s)'} | >= 0.95 | "
        f"{yes(wh['ratio'] >= 0.95)} |",
    ] + room_rows(b) + pow_rows(b)
    cpu = ["| round (CPU microseconds a request, medians) | server | Redis | worker | PostgreSQL | nginx | wrk | all | "
           "syscalls a request (server; nginx for 1) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for n, label, _ in WRK_CASES:
        c = med[n]["cpu"]
        total = round(sum(v or 0 for v in c.values()), 1)
        sysc = b.sys.get(n)
        cpu.append(f"| {label} | " + " | ".join(str(c[p]) for p in PROCS) +
                   f" | **{total:g}** | {sysc if sysc is not None else '-'} |")

    def words(values):
        return " ".join(str(v) for v in values)

    detail = [f"- {n}: req/s {words(b.rps[n])}; p50 ms {words(b.p50[n])}; p99 ms {words(b.p99[n])}; socket errors "
              f"{words(b.errs[n])}" for n, _, _ in WRK_CASES]
    return {"table": "\n".join(rows), "cpu": "\n".join(cpu), "rounds": "\n".join(detail)}


def to_json(b, when, commit, local):
    s = b.s
    cpu_model = next((line.split(": ", 1)[1].strip() for line in open("/proc/cpuinfo")
                      if line.startswith("model name")), "?")
    mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    os_name = next((line.split("=", 1)[1].strip().strip('"') for line in open("/etc/os-release")
                    if line.startswith("PRETTY_NAME=")), "?")
    wrk = []
    for n, label, target in WRK_CASES:
        m = b.med[n]
        wrk.append({"name": n, "label": label, "requests_per_s": m["rps"], "p50_ms": m["p50"], "p99_ms": m["p99"],
                    "ratio_to_ceiling": figures.ratio(m["rps"], b.med["ceiling"]["rps"]), "target_ratio": target,
                    "rounds": {"requests_per_s": b.rps[n], "p50_ms": b.p50[n], "p99_ms": b.p99[n],
                               "socket_errors": b.errs[n]},
                    "cpu_us_a_request": m["cpu"], "syscalls_a_request": b.sys.get(n)})
    a = b.out["ab"]
    return {
        "date": when, "commit": commit, "local_changes": local,
        "machine": {"cpus": os.cpu_count(), "cpu": cpu_model, "memory": f"{mem_kib / 1048576:.1f} GiB",
                    "os": os_name, "kernel": os.uname().release, "load_average": b.load},
        "settings": {"rounds": s.rounds, "duration": s.duration, "connections": s.conns, "threads": s.threads,
                     "drain_orders": s.drain_orders, "drain_rounds": s.drain_rounds},
        "wrk": wrk,
        "order_guard": order_guard(b.med),
        "drain": b.out["drain"],
        "ab": {"concurrency": 10000, "requests": 20000, "stock": a["stock"], "seconds": a["seconds"],
               "failed": a["failed"], "complete": a["complete"], "sold_out_answers": a["non2xx"], "sold": a["sold"],
               "oversold": a["oversold"]},
        "memory": {**b.out["memory"], "target_kib": 65536},
        "webhooks": b.out["webhooks"],
        "room": b.out.get("room"),
        "pow": b.out.get("pow"),
    }


def render_section(run, tables):
    s, m = run["settings"], run["machine"]
    local = " + local changes" if run["local_changes"] else ""
    t, c, d = s["threads"], s["connections"], s["duration"]
    return f"""<!-- bench:begin (written by loadtest/seckill-lab bench; edit outside the markers) -->
## Latest run

{run['date']}, commit {run['commit']}{local};
machine: {m['cpus']} cores ({m['cpu']}), {m['memory']}, {m['os']}, kernel {m['kernel']};
load average at the start: {m['load_average']}. Medians of {s['rounds']} alternating rounds of {d} each.

{tables['table']}

![The same run drawn: each measurement's ratio to the ceiling beside its target, and the latency percentiles of every wrk measurement](performance.svg)

The figures of the run, rounds and CPU included: [loadtest/results/bench.json](../loadtest/results/bench.json)
(`loadtest/seckill-lab bench --plot-only` redraws the picture from it).

Where the CPU goes (every process of the machine that takes part; the worker drains meanwhile):

{tables['cpu']}

Rounds:
{tables['rounds']}

Commands (ports are free ones chosen per run; every wrk request is a new buyer):

```sh
make bench                          # = loadtest/seckill-lab bench
wrk -t{t} -c{c} -d{d} --latency -s loadtest/purchase.lua http://127.0.0.1:NGINX -- ITEM SEED
wrk -t{t} -c{c} -d{d} --latency http://127.0.0.1:SERVER/health
wrk -t{t} -c{c} -d{d} --latency -s loadtest/purchase.lua http://127.0.0.1:SERVER -- BIG_ITEM SEED
wrk -t{t} -c{c} -d{d} --latency -s loadtest/purchase.lua http://127.0.0.1:SCRIPT_SERVER -- BIG_ITEM SEED  # order_guard = script
wrk -t{t} -c{c} -d{d} --latency -s loadtest/purchase.lua http://127.0.0.1:SERVER -- STORM_ITEM SEED  # after reset to 1000
wrk -t{t} -c{c} -d300s --latency -s loadtest/room.lua http://127.0.0.1:SERVER -- join ROOM_ITEM SEED  # SIGINT once joined
wrk -t{t} -c{c} -d{d} --latency -s loadtest/room.lua http://127.0.0.1:SERVER -- poll ROOM_ITEM SEED 1000  # after the start
ab -q -r -c 10000 -n 20000 -s 30 -p EMPTY_FILE -T application/json http://127.0.0.1:SERVER/api/v1/items/ITEM/purchase
idle_conns 127.0.0.1 SERVER 10000   # loadtest/idle_conns.c; then VmRSS of /proc/<server>/status
strace -c -f -p SERVER_PID & wrk -t{t} -c{c} -d3s ...   # syscalls a request: strace's total / wrk's requests
redis-cli EVAL <LPUSH of {s['drain_orders']} orders in the queue format> ...; seckill-worker; until LLEN queue + processing = 0
psql -c "\\copy orders (id, item_id, user_id, round, created_at) from 'orders.csv' with (format csv)"
```
<!-- bench:end -->"""


