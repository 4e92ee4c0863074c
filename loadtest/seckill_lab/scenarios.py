"""scenarios: the documents' failure scenarios under load, `make experiments SCENARIO=name`.

What each one is and what the documents expect of each strategy is loadtest/scenarios.json (the
table e2e_scenarios.c asserts too); here is how each is run. Every function gets the laboratory,
its row of the table and the Markdown lines to append to, and returns whether our verdicts are the
table's.
"""

import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from . import figures
from .system import ROOT, Failure, get_json, http, now_ms, post_json, services

POOL = ThreadPoolExecutor(max_workers=64)


def at_once(n, fn, *args):
    """FN(*ARGS) N times at once; their results."""
    return [f.result() for f in [POOL.submit(fn, *args) for _ in range(n)]]


def lock_key(lab, strategy):
    return f"{{item:{lab.item}}}:lab:lock:{strategy}"


def lock_expiry(lab, row, out):
    ok = True
    out += ["| strategy | buyers | sold / stock | 409 fenced | oversold | ours | documents |",
            "|---|---:|---:|---:|---:|---|---|"]
    for s, expected in row["expect"].items():
        lab.progress.step(f"lock_expiry: {s}")
        lab.reset_item(2)
        answers = at_once(8, lab.buy, s, 500)
        sold = sum(1 for st, _ in answers if st == 200)
        fenced = sum(1 for _, body in answers if '"fenced"' in body)
        oversold = lab.audit(s)["oversold"]
        verdict = "oversells" if oversold > 0 else "safe"
        ok &= verdict == expected
        out.append(f"| `{s}` | 8 | {sold} / 2 | {fenced} | {oversold} | {verdict} | {expected} |")
    return ok


def wrong_unlock(lab, row, out):
    ok = True
    out += ["| strategy | B's lock while B works, after A's unlock | ours | documents |", "|---|---|---|---|"]
    for s, expected in row["expect"].items():
        lab.progress.step(f"wrong_unlock: {s}")
        lab.reset_item(10)
        a = POOL.submit(lab.buy, s, 1200)
        time.sleep(0.3)
        b = POOL.submit(lab.buy, s, 1500)
        # A answers right after its unlock; B's lock (taken at ~1 s) lasts until ~2 s.
        a.result()
        exists = lab.db.redis_int("EXISTS", lock_key(lab, s))
        b.result()
        verdict = "kept" if exists == 1 else "freed by A"
        ok &= verdict == expected
        out.append(f"| `{s}` | {verdict} | {'agrees' if verdict == expected else 'DIFFERS'} | {expected} |")
    return ok


def cluster(lab, row, out):
    ok = True
    lab.progress.step("cluster: a second server, nginx in front of both")
    lab.start_proc("second", "build/seckill-server")
    second = lab.port_of["second"]
    lb = lab.free_port_except()
    services("nginx_start", lab.dir, str(lb), str(lab.port), str(second))
    out += [f"Two servers (ports {lab.port} and {second}) behind nginx on port {lb} (round robin), one",
            "Redis and one PostgreSQL; 100 buyers at concurrency 20 through nginx on 20 units, 20 ms of",
            "work. *left A / B* is each instance's own view of the stock (its audit).", "",
            "| strategy | req/s | sold / stock | oversold | left A / B | ours | documents |",
            "|---|---:|---:|---:|---:|---|---|"]
    docs = row.get("documents", {})
    for s, expected in row["expect"].items():
        lab.progress.step(f"cluster: {s}")
        lab.reset_item(20)
        report = lab.ab(f"http://127.0.0.1:{lb}/api/v1/experiments/{s}/purchase?item={lab.item}&delay_ms=20",
                        100, 20, timeout=60)
        rps = figures.ab_field(report, "Requests per second:", 4)
        a = lab.audit(s)
        left_b = lab.audit(s, f"http://127.0.0.1:{second}")["remaining"]
        verdict = "oversells" if a["oversold"] > 0 else "safe"
        ok &= verdict == expected
        said = docs.get(s, expected)
        out.append(f"| `{s}` | {rps:g} | {a['sold']} / 20 | {a['oversold']} | {a['remaining']} / {left_b} | "
                   f"{verdict} | {said} |")
    return ok


def lock_freed_after(lab, strategy, limit_ms, since_ms):
    """Buys every 100 ms until a sale or LIMIT_MS; the ms from SINCE_MS to the sale, or "never"."""
    deadline = now_ms() + limit_ms
    while now_ms() < deadline:
        if lab.buy(strategy, 0)[0] == 200:
            return now_ms() - since_ms
        time.sleep(0.1)
    return "never"


def crash_holding_lock(lab, row, out):
    ok = True
    ttl_ms = int(os.environ["SECKILL_LAB_LOCK_TTL_MS"])
    docs = row["documents"]
    out += [f"Lock TTL {ttl_ms} ms, lock wait {os.environ['SECKILL_LAB_LOCK_WAIT_MS']} ms. A second server holds "
            "the lock and",
            "dies with SIGKILL; the first server's buyers then try. *PTTL* is the lock key's TTL right",
            "after the crash (-1: none); *freed* is when the first server sold again after the crash.", "",
            "| strategy | how the holder died | PTTL after the crash | 1st server right after | "
            "1st server after TTL + 1 s | freed | ours | documents |",
            "|---|---|---:|---|---|---|---|---|"]
    known = lab.strategies()
    for s, expected in row["expect"].items():
        lab.progress.step(f"crash_holding_lock: {s}")
        said = docs[s]
        if s not in known:
            out.append(f"| `{s}` | - | - | - | - | - | skipped: this server has no {s} | {said} |")
            continue
        lab.reset_item(10)
        key = lock_key(lab, s)
        lab.start_proc("victim", "build/seckill-server")
        victim = f"http://127.0.0.1:{lab.port_of['victim']}"
        if expected == "stuck":
            # The victim dies right after its SETNX won: no EXPIRE ever comes.
            lab.buy(s, 0, victim, "&crash=after_setnx")
            lab.kill_proc("victim", signal.SIGKILL)  # already dead by its own hand; reaped here
            ttl = lab.db.redis_int("PTTL", key)
            first = lab.buy(s, 0)[0]
            time.sleep((ttl_ms + 1000) // 1000)
            after = lab.buy(s, 0)[0]
            lab.db.redis("DEL", key)
            freed = f"only by DEL by hand: then {lab.buy(s, 0)[0]}"
            verdict = "stuck" if ttl == -1 and first == 429 and after == 429 else "freed"
            ok &= verdict == expected
            out.append(f"| `{s}` | SIGKILL between SETNX and EXPIRE (?crash=after_setnx) | {ttl} | {first} | {after} "
                       f"| {freed} | {verdict} | {said} |")
            continue
        # The victim holds the lock (10 s of work) when it is killed.
        holder = lab.pool_buy(s, 10000, victim)
        for _ in range(100):
            if not s.startswith("redis_"):  # the ZooKeeper lock lives outside Redis
                time.sleep(1)
                break
            if lab.db.redis_int("EXISTS", key) == 1:
                break
            time.sleep(0.05)
        lab.kill_proc("victim", signal.SIGKILL)
        killed = now_ms()
        holder.result()
        ttl = lab.db.redis_int("PTTL", key) if s.startswith("redis_") else "-"
        first = lab.buy(s, 0)[0]
        if first == 503:
            out.append(f"| `{s}` | - | - | - | - | - | skipped: no ZooKeeper configured (503) | {said} |")
            continue
        freed = lock_freed_after(lab, s, 30000, killed)
        after = 429 if freed == "never" else 200
        verdict = f"freed after {freed} ms"
        if freed == "never" or first != 429 or (s.startswith("redis_") and (ttl <= 0 or freed > ttl_ms + 1000)):
            ok = False
            verdict += " (DIFFERS)"
        out.append(f"| `{s}` | kill -9 while it holds the lock (10 s of work) | {ttl} | {first} | {after} | "
                   f"after {freed} ms | {verdict} | {said} |")
    return ok


def lock_value(lab, strategy):
    """"<value> (now <ms>), <PTTL>" of the strategy's lock key, "-" when none."""
    key = lock_key(lab, strategy)
    if lab.db.redis_int("EXISTS", key) != 1:
        return "-"
    return f"{lab.db.redis('GET', key)} (now {now_ms()}), {lab.db.redis('PTTL', key)}"


def meet_at_expiry(lab, s, base, ttl):
    """Document 000's story with the meeting forced, on the server at BASE (lock expiry TTL ms,
    lab_faults on): a holder takes the lock and works three expiries; once its lock has expired,
    two racers with 100 ms of work meet at the taking command: ?race=second has looked at the lock
    before ?race=first takes it, and takes after it. (holder, first, second, lock keys left)."""
    lab.reset_item(10)
    key = lock_key(lab, s)
    holder = lab.pool_buy(s, 3 * ttl, base)
    for _ in range(1000):
        if lab.db.redis_int("EXISTS", key) == 1:
            break
        time.sleep(0.01)
    # The expiry counts from before the lock was taken: past it now, whatever the load.
    time.sleep((ttl + 100) / 1000)
    second = lab.pool_buy(s, 100, base, "&race=second")
    first = lab.pool_buy(s, 100, base, "&race=first")
    h, f, sec = holder.result()[0], first.result()[0], second.result()[0]
    return h, f, sec, lab.audit(s)["lock_keys"]


def leftover_key(lab, row, out):
    ok = True
    ttl, runs, left = 1000, int(os.environ.get("LEFTOVER_RUNS", 3)), 0
    docs = row["documents"]
    # The meeting's server: fault injection on, and an expiry well past the wait (000's 200 ms), so
    # that the loser gives up before the value it wrote expires and nobody takes it over and
    # deletes it: what stays is what the meeting left.
    lab.start_proc("racer", "build/seckill-server", SECKILL_LAB_FAULTS="true", SECKILL_LAB_LOCK_TTL_MS=ttl)
    racer = f"http://127.0.0.1:{lab.port_of['racer']}"
    wait = os.environ["SECKILL_LAB_LOCK_WAIT_MS"]
    out += [f"**The meeting, forced** (the verdict). A server with fault injection on, lock expiry {ttl} ms and",
            f"wait {wait} ms. A holder takes the lock with {3 * ttl} ms of work; once its lock has expired, two",
            "racers with 100 ms of work meet at the taking command (`?race=first`, `?race=second`):",
            "the second has read the expired value before the first's GETSET and GETSETs after it, so it",
            "loses (429) yet overwrites the winner's value, and the winner's unlock, finding another value,",
            "does not delete (000's story of clients C and D). `redis_lock` meets the same way before its SET NX.",
            "", "| strategy | holder | first racer | second racer | lock keys left | key's value, PTTL | ours | documents |",
            "|---|---:|---:|---:|---:|---|---|---|"]
    for s, expected in row["expect"].items():
        lab.progress.step(f"leftover_key: {s}, the forced meeting")
        holder, first, second, keys = meet_at_expiry(lab, s, racer, ttl)
        value = lock_value(lab, s)
        verdict = "leaves none" if keys == 0 else "leaves a key"
        if expected == "leaves a key" and not (first == 200 and second == 429):
            # The mechanism, not just its result: the winner sold, the loser answered busy.
            verdict += ", not in the forced order"
        ok &= verdict == expected
        said = docs.get(s, expected)
        out.append(f"| `{s}` | {holder} | {first} | {second} | {keys} | {value} | {verdict} | {said} |")
    lab.kill_proc("racer", signal.SIGTERM)
    out += ["", "**Document 000's load** (the statistic beside it, not the verdict): ab -c 10000 -n 20000 on a",
            f"stock of 10000, 100 ms of work under the lock, lock expiry {os.environ['SECKILL_LAB_LOCK_TTL_MS']} ms "
            f"and wait {wait} ms,",
            f"{os.environ['SECKILL_LAB_THREADS']} lab threads, no forcing. A lock key left after a run is what 000 saw "
            "in RedisDesktopManager;", "whether one is left depends on who raced last.", "",
            "| strategy | run | req/s | 200 answers | sold | lock keys left | key's value, PTTL | ours | documents |",
            "|---|---:|---:|---:|---:|---:|---|---|---|"]
    for s, expected in row["expect"].items():
        leaves = expected == "leaves a key"
        for run in range(1, runs + 1):
            lab.progress.step(f"leftover_key: {s} under 000's load, run {run}" + (f" of {runs}" if leaves else ""))
            report = lab.load(s, 10000, 20000, 10000, 100)
            rps = figures.ab_field(report, "Requests per second:", 4)
            non2xx = int(figures.ab_field(report, "Non-2xx responses:", 3))
            a = lab.audit(s)
            value = lock_value(lab, s)
            verdict = "leaves none" if a["lock_keys"] == 0 else "leaves a key"
            said = f"{expected} (000: 184 req/s)" if leaves else expected
            left += leaves and a["lock_keys"] > 0
            out.append(f"| `{s}` | {run} | {rps:g} | {20000 - non2xx} | {a['sold']} | {a['lock_keys']} | {value} | "
                       f"{verdict} | {said} |")
            if not leaves:
                break
    out += ["", f"Under load `redis_lock_getset` left a key in {left} of {runs} runs."]
    return ok


ELECTED = re.compile(r"sweep: elected for [0-9]* ms \(asked at ([0-9]*), answered at ([0-9]*)\)")


def elections(logs):
    """(asked, answered, worker) of every sweep election the workers logged, by time."""
    out = []
    for path in logs:
        worker = os.path.basename(path)[:-len(".log")]
        for line in open(path, errors="replace"):
            m = ELECTED.search(line)
            if m:
                out.append((int(m.group(1)), int(m.group(2)), worker))
    return sorted(out)


def singleton_job(lab, row, out):
    period = int(os.environ["SECKILL_WORKER_SWEEP_MS"])
    victim, in_hand, item = "scen-w2", 0, lab.item
    processing = f"seckill:{{item:{item}}}:processing:{victim}"
    lab.progress.step("singleton_job: 20000 orders queued by lua_reserve")
    lab.reset_item(20000)
    # The orders wait on the queue first, so the workers start with a backlog to be killed in.
    lab.ab(f"{lab.base}/api/v1/experiments/lua_reserve/purchase?item={item}", 20000, 100, timeout=60)
    sold = lab.audit("lua_reserve")["sold"]
    lab.progress.step(f"singleton_job: three workers, {victim} killed -9 while it holds a batch")
    for w in ("scen-w1", "scen-w2", "scen-w3"):
        lab.start_proc(w, "build/seckill-worker", SECKILL_WORKER_ID=w, SECKILL_LOG_LEVEL="debug")
    # Kill the victim while it holds a batch: frozen first, so that it cannot acknowledge the
    # batch between the look and the kill.
    proc = lab.procs[victim]
    deadline = now_ms() + 60000
    while in_hand == 0 and now_ms() < deadline:
        if lab.db.redis_int("LLEN", processing) == 0:
            continue
        proc.send(signal.SIGSTOP)
        in_hand = lab.db.redis_int("LLEN", processing)
        if in_hand == 0:
            proc.send(signal.SIGCONT)
    lab.kill_proc(victim, signal.SIGKILL)
    lab.progress.step("singleton_job: the rest drained, a few more periods of elections")
    while now_ms() < deadline:
        if (lab.db.redis_int("LLEN", f"seckill:{{item:{item}}}:queue") == 0
                and lab.db.redis_int("HLEN", f"seckill:{{item:{item}}}:pending") == 0
                and lab.db.redis_int("EXISTS", processing) == 0):
            break
        time.sleep(0.2)
    time.sleep(4 * period // 1000 + 1)  # a few more periods of elections
    for w in ("scen-w1", "scen-w3"):
        lab.kill_proc(w, signal.SIGTERM)
    pg = int(lab.db.sql(f"select count(*) from orders where item_id = {item}"))
    distinct = int(lab.db.sql(f"select count(distinct id) from orders where item_id = {item}"))
    dead = lab.db.redis_int("LLEN", f"seckill:{{item:{item}}}:dead")
    logs = [os.path.join(lab.dir, f"scen-w{i}.log") for i in (1, 2, 3)]
    recovered = sum(int(m) for path in logs for m in
                    re.findall(rf"worker {victim} has no heartbeat: ([0-9]+)", open(path, errors="replace").read()))
    e = elections(logs)
    counts = {}
    for _, _, w in e:
        counts[w] = counts.get(w, 0) + 1
    per = ", ".join(f"{w}: {n}" for w, n in counts.items())
    overlaps = figures.overlaps([(a, b) for a, b, _ in e], period)
    out += [f"Three workers (scen-w1..3), sweep period {period} ms (lock seckill:sweep, SET NX PX {period}),",
            f"heartbeat TTL 3 periods; {sold} orders accepted by lua_reserve before the workers started;",
            f"{victim} killed -9 while it held a batch. Elections and recoveries from the workers' logs.", "",
            "| sweeps elected (by worker) | two sweeps in one period | victim's batch at the kill | recovered by a "
            "sweep | accepted / in PostgreSQL (distinct) | dead letters | ours | documents |",
            "|---|---:|---:|---:|---:|---:|---|---|"]
    verdict, expected = row["expect"]["sweep"], row["documents"]["sweep"]
    ok = not (len(e) < 2 or overlaps > 0 or in_hand == 0 or recovered != in_hand or pg != sold
              or distinct != sold or dead != 0)
    if not ok:
        verdict = "DIFFERS"
    out.append(f"| {len(e)} ({per}) | {overlaps} | {in_hand} | {recovered} | {sold} / {pg} ({distinct}) | {dead} | "
               f"{verdict} | {expected} |")
    return ok


RETURN_STOCK, RETURN_TIMEOUT_S, RETURN_BUYERS = 20, 3, 60


def sell(lab, item, first_user, buyers, pay, base=None):
    """BUYERS buyers (users FIRST_USER..) buy a unit each through the production path (on BASE,
    default the first server), 10 at a time; the first PAY orders accepted are paid at once.
    Returns the sales."""
    import json

    def one(user):
        st, body = http("POST", f"{base or lab.base}/api/v1/items/{item}/purchase", json.dumps({"user_id": user}),
                        lab.token)
        try:
            return json.loads(body).get("order_id")
        except ValueError:
            return None

    with ThreadPoolExecutor(10) as pool:
        ids = [i for i in pool.map(one, range(first_user, first_user + buyers)) if i is not None]
        list(pool.map(lambda o: http("POST", f"{lab.base}/api/v1/orders/{o}/pay", None, lab.token), ids[:pay]))
    return len(ids)


def wait_sql(lab, query, seconds=30):
    deadline = time.monotonic() + seconds
    while lab.db.sql(query) != "t":
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def remaining(lab, item):
    return get_json(f"{lab.base}/api/v1/items/{item}")["remaining"]


def books(lab, item):
    """(held, stock, remaining, oversold) from PostgreSQL (units of live orders, persisted or
    paid; initial stock + restocked) and Redis (remaining); oversold = held - stock."""
    held, stock = map(int, lab.db.sql(
        "SELECT coalesce(sum(o.quantity) FILTER (WHERE o.status IN ('persisted', 'paid')), 0), "
        "i.initial_stock + i.restocked FROM items i LEFT JOIN orders o ON o.item_id = i.id "
        f"WHERE i.id = {item} GROUP BY i.id").split())
    return held, stock, remaining(lab, item), held - stock


def naive_return(*args):
    r = subprocess.run(["loadtest/naive_return.sh", *map(str, args)], cwd=ROOT, text=True, stdout=subprocess.PIPE)
    return r.stdout.split("\n")[0].strip()


def unpaid_return(lab, row, out):
    half = RETURN_STOCK // 2
    items, returned, storm = {}, {}, {}
    lab.progress.step(f"unpaid_return: the first storm, {RETURN_STOCK} buyers on each item")
    for i in ("naive", "ours"):
        items[i] = post_json(f"{lab.base}/api/v1/items", {"name": f"unpaid-{i}", "stock": RETURN_STOCK,
                                                          "payment_timeout_s": RETURN_TIMEOUT_S}, lab.token)["id"]
        # Exactly as many buyers as units: nobody hears "sold out", no server flags the item.
        sold = sell(lab, items[i], 1, RETURN_STOCK, half)
        if sold != RETURN_STOCK:
            raise Failure(f"unpaid_return: the first storm sold {sold} of {RETURN_STOCK}")
    naive, ours = items["naive"], items["ours"]
    if not wait_sql(lab, f"SELECT count(*) = {2 * RETURN_STOCK} FROM orders WHERE item_id IN ({naive}, {ours})"):
        raise Failure("unpaid_return: the first storm's orders did not reach PostgreSQL")
    lab.progress.step("unpaid_return: the unpaid orders fall due")
    time.sleep(RETURN_TIMEOUT_S + 1)  # the unpaid half is overdue now

    # The naive return: a run killed -9 after its 3rd increment, then retried on two nodes at once.
    lab.progress.step("unpaid_return: the naive return, killed -9, retried on two nodes")
    before = remaining(lab, naive)
    crashed = naive_return(naive, 3)
    a, b = POOL.submit(naive_return, naive), POOL.submit(naive_return, naive)
    n1, n2 = a.result(), b.result()
    returned["naive"] = remaining(lab, naive) - before

    # Ours: two workers, the one elected first killed -9 while it holds the expiry lock.
    lab.progress.step("unpaid_return: our expiry sweep, two workers, the elected one killed -9")
    before = remaining(lab, ours)
    for w in ("ret-w1", "ret-w2"):
        lab.start_proc(w, "build/seckill-worker", SECKILL_WORKER_ID=w, SECKILL_WORKER_EXPIRY_MS=1000)
    victim, deadline = None, now_ms() + 10000
    while victim is None and now_ms() < deadline:
        holder = lab.db.redis("GET", "seckill:expiry")
        if re.match(r"ret-w[12]:", holder):
            victim = holder.split(":")[0]
            lab.kill_proc(victim, signal.SIGKILL)
        time.sleep(0.01)
    # What the dead worker left: expired in PostgreSQL, not yet confirmed given back.
    owed = lab.db.sql(f"SELECT count(*) FROM orders WHERE item_id = {ours} AND status = 'expired' "
                      "AND returned_at IS NULL")
    if not wait_sql(lab, f"SELECT count(*) = {half} FROM orders WHERE item_id = {ours} AND status = 'expired' "
                         "AND returned_at IS NOT NULL"):
        raise Failure(f"unpaid_return: our workers did not expire and return the {half} unpaid orders")
    for w in ("ret-w1", "ret-w2"):
        lab.kill_proc(w, signal.SIGTERM)
    returned["ours"] = remaining(lab, ours) - before

    # The second storm: new buyers, three times the stock, each paying at once, on a server started
    # now. The first server saw both items sell out and keeps them flagged in memory until it hears
    # of a new stock version, which the naive return never announces: there its units would sell
    # one a second (GATE_PROBE_MS), on a server started since all at once. The field's copies clear
    # their flag with the return (localOverMap.put(id, false)).
    lab.progress.step(f"unpaid_return: the second storm, {RETURN_BUYERS} new buyers on each item")
    lab.start_proc("ret-shop", "build/seckill-server")
    shop = f"http://127.0.0.1:{lab.port_of['ret-shop']}"
    for i in ("naive", "ours"):
        storm[i] = sell(lab, items[i], 1001, RETURN_BUYERS, RETURN_BUYERS, shop)
    if not wait_sql(lab, f"SELECT count(*) = {2 * RETURN_STOCK + storm['naive'] + storm['ours']} FROM orders "
                         f"WHERE item_id IN ({naive}, {ours})"):
        raise Failure("unpaid_return: the second storm's orders did not reach PostgreSQL")

    ok = True
    out += [f"Two items of {RETURN_STOCK} units, {RETURN_TIMEOUT_S} s to pay; {RETURN_STOCK} buyers each, {half} "
            "pay at once, the",
            f"other {half} orders expire. *returned* is the stock Redis got back; the second storm is",
            f"{RETURN_BUYERS} new buyers per item, each paying at once; *held* is the units of live orders",
            "(persisted or paid) in PostgreSQL, *oversold* = held - stock.", "",
            "| return | how it ran | unpaid units | returned | second storm sold / buyers | held / stock | remaining | "
            "oversold | ours | expected |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for i, expected in row["expect"].items():
        held, stock, left, oversold = books(lab, items[i])
        verdict = "oversells" if oversold > 0 or held + left > stock else "safe"
        if i == "naive":
            how = (f"| naive (`loadtest/naive_return.sh`) | killed -9 after its 3rd increment (gave {crashed}), "
                   f"retried on two nodes at once (gave {n1} and {n2})")
        else:
            if not (held == stock and left == 0):
                verdict = "oversells"
            how = (f"| ours (worker expiry sweep) | two workers, {victim or 'neither'} killed -9 as soon as elected "
                   f"({owed} returns left owed)")
        ok &= verdict == expected
        out.append(f"{how} | {half} | {returned[i]} | {storm[i]} / {RETURN_BUYERS} | {held} / {stock} | {left} | "
                   f"{oversold} | {verdict} | {expected} |")
    return ok


RUN = {"lock_expiry": lock_expiry, "wrong_unlock": wrong_unlock, "cluster": cluster,
       "crash_holding_lock": crash_holding_lock, "leftover_key": leftover_key, "singleton_job": singleton_job,
       "unpaid_return": unpaid_return}
