"""experiments: `make experiments`: the oversell laboratory under load, every strategy (or
STRATEGY=name) against its own Redis, PostgreSQL, server and worker under run/experiments-<pid>;
writes experiments.{md,json} and a plot (.png, .svg) of requests/s and oversold units per strategy
into run/results/; with RECORD=1 into loadtest/results/ instead, the committed results that /lab
and the docs show. Exits 1 when a strategy's verdict differs from the documents'.

Each strategy gets two runs on the same item, each after a reset of the item:
 1. load: REQUESTS requests (default 20000) at CONCURRENCY (200) with ab on a stock of STOCK
    (5000, as document 003), DELAY_MS (0) of business work: requests/s, latency, oversell;
 2. race: RACE_BUYERS (50) buyers at once on RACE_STOCK (10) units with RACE_DELAY_MS (100, as
    document 000's doSomeThing()) of work inside the critical section, which opens the race
    windows of the documents on purpose: the verdict "oversells" comes from either run.
REPLAY_000=1 replays document 000's load instead of 1.: ab -c 10000 -n 20000.
SCENARIO=name runs one of the failure scenarios of loadtest/scenarios.json instead
(seckill_lab/scenarios.py), writes scenario-<name>.md and exits 0 only when our verdict is the
documents'.
"""

import datetime
import json
import os
import resource
import signal
import subprocess
import sys
import time

from . import figures, plot, scenarios
from .progress import Progress, Quiet
from .system import (ROOT, Backends, Failure, Proc, base_env, free_port, get_json, http, post_json, read_env,
                     services, sh, wait_ready)

TOKEN = "experiments-admin-token"
RECORDED = "loadtest/results"
TABLE = os.path.join(ROOT, "loadtest", "scenarios.json")

# What the documents found (EXPERIMENTS.md): their verdict (safe unless named here) and figure.
DOC_VERDICT = {"local_unsafe": "oversells", "local_atomic_check": "oversells", "db_read_modify_write": "oversells",
               "redis_read_check_decr": "oversells"}
DOC_FIGURE = {
    "local_unsafe": "oversells (000 /v3/seckill)",
    "local_atomic_check": "oversells (000 /v2/seckill, LongAdder)",
    "local_mutex": "ReentrantLock 550+/s, synchronized 520+/s; oversells on 2 instances (003)",
    "db_read_modify_write": "2000+/s, oversells (003)",
    "db_single_update": "1950+/s, fastest DB method (003)",
    "db_for_update": "600+/s (003)",
    "db_optimistic": "230+/s, slowest under contention (003)",
    "redis_read_check_decr": "2000+/s, warm 3200+/s, oversells (003)",
    "redis_watch": "370+/s (003)",
    "redis_lock_setnx_expire": "deadlock after a crash between SETNX and EXPIRE (002, 004)",
    "redis_lock_getset": "184 req/s at ab -c 10000 -n 20000; leaves a lock key (000)",
    "redis_lock": "550-620/s (003)",
    "pg_lock_table": "slowest lock (003)",
    "segmented": "600 orders/s as 120 segments x 5/s (001)",
    "lua_reserve": "fastest by far (000, 002)",
    "redis_lock_fenced": "correct; fencing tokens stop a holder whose lock expired (Kleppmann, 004)",
    "redis_lock_reentrant": "600/s; Redisson 870/s; survives a holder slower than the TTL (001, 003)",
    "redlock": "correct while a majority is up (003, 004)",
    "pg_advisory": "(not in the documents: PostgreSQL's advisory lock)",
    "zookeeper_lock": "correct; no TTL, the session's end frees the lock; redis > zk > mysql in speed (003)",
}


def load_table():
    with open(TABLE) as f:
        return json.load(f)["scenarios"]


class Settings:
    def __init__(self, env=os.environ):
        self.stock = int(env.get("STOCK", 5000))
        self.requests = int(env.get("REQUESTS", 20000))
        self.concurrency = int(env.get("CONCURRENCY", 200))
        self.delay_ms = int(env.get("DELAY_MS", 0))
        self.race_stock = int(env.get("RACE_STOCK", 10))
        self.race_buyers = int(env.get("RACE_BUYERS", 50))
        self.race_delay_ms = int(env.get("RACE_DELAY_MS", 100))
        if env.get("REPLAY_000", "0") == "1":
            self.requests, self.concurrency = 20000, 10000
        self.scenario = env.get("SCENARIO", "")
        self.strategy = env.get("STRATEGY", "")
        self.record = env.get("RECORD", "0") == "1"
        self.results = RECORDED if self.record else "run/results"


class Lab:
    """A running laboratory: the run folder's backends, the first server and worker, an item, and
    what the scenarios start besides (servers, workers, nginx), stopped by pid at the end."""

    def __init__(self, settings):
        self.s = settings
        self.dir = os.path.join(ROOT, "run", f"experiments-{os.getpid()}")
        self.procs = {}
        self.port_of = {}
        self.progress = Quiet()
        self.token = TOKEN
        self.findings = []  # audit findings (an order lock left after the drain), each fails the run

    # ---- start and stop -----------------------------------------------------------------------

    def start(self, scenario_settings):
        os.environ.update(scenario_settings)
        sh("scripts/services.sh", "start", self.dir, capture=False)
        self.dir = os.path.realpath(self.dir)
        env = read_env(os.path.join(self.dir, "env"))
        os.environ.update(env)
        self.db = Backends(env)
        sh("scripts/migrate.sh", capture=False)
        zk = services("zk_start", self.dir)
        redlock = services("redlock_start", self.dir).split()
        os.environ["SECKILL_ZOOKEEPER_SERVERS"] = f"127.0.0.1:{zk}"
        os.environ["SECKILL_REDLOCK_SERVERS"] = ",".join(
            f"127.0.0.1:{p}" for p in [env["SECKILL_REDIS_PORT"]] + redlock)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self.port = free_port()
        os.environ.update(SECKILL_PORT=str(self.port), SECKILL_ADMIN_TOKEN=TOKEN, SECKILL_LOG_LEVEL="warn",
                          SECKILL_LAB="on")
        self.procs["server"] = Proc("server", ["build/seckill-server"], base_env(),
                                    os.path.join(self.dir, "server.log"))
        if self.s.scenario != "singleton_job":  # that one starts three of its own
            self.procs["worker"] = Proc("worker", ["build/seckill-worker"], base_env(),
                                        os.path.join(self.dir, "worker.log"))
        self.base = f"http://127.0.0.1:{self.port}"
        if not wait_ready(self.base + "/ready"):
            raise Failure(f"the server did not start (log: {self.dir}/server.log)")
        self.item = post_json(f"{self.base}/api/v1/items", {"name": "experiments", "stock": self.s.stock, "lab": True},
                              TOKEN)["id"]

    def stop(self, ok):
        self.progress.brk()
        for name in list(self.procs):
            self.procs.pop(name).stop()
        for function in ("nginx_stop", "zk_stop", "redlock_stop"):
            services(function, self.dir, check=False)
        sh("scripts/services.sh", "stop", self.dir, check=False, capture=False)
        if ok:
            sh("rm", "-rf", os.path.realpath(self.dir), self.dir)
        else:
            print(f"experiments: logs kept in {self.dir}", file=sys.stderr)

    def start_proc(self, name, binary, **env):
        """One more server or worker with the run's settings plus ENV, logging to DIR/NAME.log. A
        server gets a free port, in port_of[NAME], and is waited for until ready."""
        more = dict(env)
        port = None
        if binary.endswith("seckill-server"):
            port = free_port(taken={self.port})
            more["SECKILL_PORT"] = port
        self.procs[name] = Proc(name, [binary], base_env(**more), os.path.join(self.dir, f"{name}.log"))
        if port:
            self.port_of[name] = port
            if not wait_ready(f"http://127.0.0.1:{port}/ready"):
                raise Failure(f"server {name} did not start (log: {self.dir}/{name}.log)")

    def kill_proc(self, name, sig):
        """Signals what start_proc started as NAME and waits until it is gone (our child: its pid
        cannot be another's before we reap it, even when it died by its own hand)."""
        p = self.procs.pop(name, None)
        if p:
            p.send(sig)
            p.popen.wait()

    # ---- the laboratory's HTTP ------------------------------------------------------------------

    def reset_item(self, stock):
        post_json(f"{self.base}/api/v1/items/{self.item}/reset", {"stock": stock}, TOKEN)

    def ab(self, url, requests, concurrency, timeout=120):
        r = subprocess.run(["ab", "-q", "-r", "-s", str(timeout), "-n", str(requests), "-c", str(concurrency), url],
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return r.stdout

    def load(self, strategy, stock, requests, concurrency, delay_ms):
        """Resets the item, runs ab; ab's report."""
        self.reset_item(stock)
        return self.ab(f"{self.base}/api/v1/experiments/{strategy}/purchase?item={self.item}&delay_ms={delay_ms}",
                       requests, concurrency)

    def buy(self, strategy, delay_ms, base=None, extra=""):
        """One purchase (on BASE, default the first server); (status, body), status 0 when the
        server did not answer."""
        return http("GET", f"{base or self.base}/api/v1/experiments/{strategy}/purchase?item={self.item}"
                           f"&delay_ms={delay_ms}{extra}", timeout=120)

    def pool_buy(self, strategy, delay_ms, base=None, extra=""):
        """buy() on a thread of its own: its future."""
        return scenarios.POOL.submit(self.buy, strategy, delay_ms, base, extra)

    def free_port_except(self):
        return free_port(taken={self.port, *self.port_of.values()})

    def audit(self, strategy, base=None):
        return get_json(f"{base or self.base}/api/v1/experiments/{strategy}/audit?item={self.item}")

    def strategies(self):
        return [s["name"] for s in get_json(f"{self.base}/api/v1/experiments")["strategies"]]

    def orders_in_pg(self):
        """Orders of the item in PostgreSQL, once the worker has drained what Redis accepted."""
        for _ in range(600):
            if self.db.redis_int("HLEN", f"seckill:{{item:{self.item}}}:pending") == 0:
                break
            time.sleep(0.1)
        return int(self.db.sql(f"select count(*) from orders where item_id = {self.item}"))


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def run_strategies(lab):
    s = lab.s
    names = lab.strategies()
    if s.strategy:
        if s.strategy not in names:
            raise Failure(f"no strategy '{s.strategy}'; there are: {' '.join(names)}")
        names = [s.strategy]
    # Two steps a strategy: the load run as long as the strategy's took in the committed results
    # (REQUESTS at its requests/s there; 10 s for one not in them), the race run 2 s.
    last = {}
    recorded = os.path.join(ROOT, RECORDED, "experiments.json")
    if os.path.exists(recorded):
        last = {x["strategy"]: x["requests_per_s"] for x in json.load(open(recorded))["strategies"]}
    steps = []
    for n in names:
        steps += [figures.nominal_seconds(s.requests, last.get(n, 0)), 2]
    lab.progress = Progress("experiments", steps)
    rows = []
    for n in names:
        lab.progress.step(f"load: {n}")
        report = lab.load(n, s.stock, s.requests, s.concurrency, s.delay_ms)
        audit = lab.audit(n)
        complete = int(figures.ab_field(report, "Complete requests:", 3))
        non2xx = int(figures.ab_field(report, "Non-2xx responses:", 3))
        rps = figures.ab_field(report, "Requests per second:", 4)
        p50 = figures.ab_field(report, "  50%", 2)
        p99 = figures.ab_field(report, "  99%", 2)
        if n == "lua_reserve":
            # The product's order locks go once the worker persisted their orders: audited after
            # the drain, a lock left is the audit's finding (and fails the run).
            orders = lab.orders_in_pg()
            audit = lab.audit(n)
        elif audit["family"] == "db" or n.startswith("pg_"):
            orders = audit.get("pg_sales")
        else:
            orders = None
        lab.progress.step(f"race: {n}")
        race_report = lab.load(n, s.race_stock, s.race_buyers, s.race_buyers, s.race_delay_ms)
        if n == "lua_reserve":
            lab.orders_in_pg()
        race = lab.audit(n)
        for found in sorted(set(audit.get("findings", []) + race.get("findings", []))):
            print(f"experiments: {n}: {found}", file=sys.stderr)
            lab.findings.append(f"{n}: {found}")
        race_complete = int(figures.ab_field(race_report, "Complete requests:", 3))
        race_non2xx = int(figures.ab_field(race_report, "Non-2xx responses:", 3))
        observed = "oversells" if audit["oversold"] > 0 or race["oversold"] > 0 else "safe"
        expected = DOC_VERDICT.get(n, "safe")
        rows.append({
            "strategy": n, "family": audit["family"], "requests": complete, "successes": complete - non2xx,
            "other_answers": non2xx, "requests_per_s": rps, "p50_ms": p50, "p99_ms": p99,
            "initial_stock": audit["initial_stock"], "final_stock": audit["remaining"], "sold": audit["sold"],
            "oversold": audit["oversold"], "orders_in_pg": orders,
            "leftover_lock_keys": audit["lock_keys"] + audit.get("order_locks", 0),
            "race": {"buyers": race_complete, "successes": race_complete - race_non2xx,
                     "stock": race["initial_stock"], "sold": race["sold"], "oversold": race["oversold"],
                     "leftover_lock_keys": race["lock_keys"] + race.get("order_locks", 0)},
            "verdict": observed, "documents_verdict": expected, "agrees": observed == expected,
            "documents": DOC_FIGURE.get(n)})
    lab.progress.end()
    return rows


def number(v):
    """A figure as ab printed it: whole numbers without a decimal point."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def render_md(run, s):
    lines = [
        "# The oversell experiments", "",
        f"Generated by `make experiments` ({now_utc()}, {os.cpu_count()} cores, ab).",
        f"Load: {s.requests} requests at concurrency {s.concurrency} on a stock of {s.stock}, business work",
        f"{s.delay_ms} ms. Race: {s.race_buyers} buyers at once on {s.race_stock} units with {s.race_delay_ms} ms",
        "of work inside the critical section. Every run starts from a reset of the item.", "",
        "How to read it: *sold* is what the strategy answered 200 for (counted by the server in",
        "Redis, PostgreSQL rows for the DB strategies); *oversold* = sold - stock, never above 0 in a",
        "correct run; *final stock* is the strategy's own counter (below 0, or not matching the sales,",
        "is the oversell seen from inside); *orders in PG* are the rows the strategy wrote (lab_sales,",
        "or the worker's orders for lua_reserve); *lock keys* are locks left behind after the run.",
        "The verdict is ours (oversells in either run) against the documents' (EXPERIMENTS.md).", "",
        "| strategy | req/s | p50 ms | p99 ms | sold / stock | oversold | final stock | orders in PG | lock keys "
        "| race: sold / stock | verdict | documents |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in run["strategies"]:
        said = (" as the documents say" if r["agrees"] else f" (DIFFERS: documents say {r['documents_verdict']})")
        pg = "-" if r["orders_in_pg"] is None else r["orders_in_pg"]
        lines.append(f"| `{r['strategy']}` | {number(r['requests_per_s'])} | {number(r['p50_ms'])} | "
                     f"{number(r['p99_ms'])} | {r['sold']} / {r['initial_stock']} | {r['oversold']} | "
                     f"{r['final_stock']} | {pg} | {r['leftover_lock_keys']} | {r['race']['sold']} / "
                     f"{r['race']['stock']} | {r['verdict']}{said} | {r['documents']} |")
    return "\n".join(lines) + "\n"


def experiments(lab):
    s = lab.s
    rows = run_strategies(lab)
    for r in rows:
        for k in ("requests_per_s", "p50_ms", "p99_ms"):
            r[k] = number(r[k])
    run = {"settings": {"stock": s.stock, "requests": s.requests, "concurrency": s.concurrency, "delay_ms": s.delay_ms,
                        "race": {"stock": s.race_stock, "buyers": s.race_buyers, "delay_ms": s.race_delay_ms},
                        "cpus": os.cpu_count(), "tool": "ab"},
           "strategies": rows}
    out = os.path.join(ROOT, s.results)
    with open(os.path.join(out, "experiments.json"), "w") as f:
        json.dump(run, f, indent=2, ensure_ascii=False)
        f.write("\n")
    md = render_md(run, s)
    with open(os.path.join(out, "experiments.md"), "w") as f:
        f.write(md)
    plot.experiments(run, out, f"Oversell experiments: {s.requests} requests, concurrency {s.concurrency}, "
                               f"stock {s.stock}")
    sys.stdout.write(md)
    if not s.record:
        print(f"experiments: written to {s.results}/ (RECORD=1 writes {RECORDED}/, the committed results)",
              file=sys.stderr)
    for found in lab.findings:
        print(f"experiments: audit finding: {found}", file=sys.stderr)
    return all(r["agrees"] for r in rows) and not lab.findings


def scenario(lab, table):
    s = lab.s
    name = s.scenario
    steps = table[name]["steps"]
    if steps is None:  # leftover_key: its forced meetings, its runs under load
        runs = int(os.environ.get("LEFTOVER_RUNS", 3))
        steps = 2 + runs + (runs > 0)
    lab.progress = Progress("experiments", [1] * steps)
    ttl = os.environ.get("SECKILL_LAB_LOCK_TTL_MS", "10000")
    out = [f"# Scenario {name}", "",
           f"Generated by `make experiments SCENARIO={name}` ({now_utc()}), lock TTL {ttl} ms.", ""]
    ok = scenarios.RUN[name](lab, table[name], out)
    path = os.path.join(ROOT, s.results, f"scenario-{name}.md")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    lab.progress.end()
    sys.stdout.write(open(path).read())
    if not s.record:
        print(f"experiments: written to {s.results}/scenario-{name}.md (RECORD=1 writes {RECORDED}/)",
              file=sys.stderr)
    if not ok:
        print(f"experiments: {name}: our verdict differs from the documents'", file=sys.stderr)
        return False
    print(f"experiments: {name}: our verdict is the documents'")
    return True


def main(args):
    if args:
        raise Failure("usage: loadtest/seckill-lab experiments (settings in the environment: STRATEGY=, "
                      "SCENARIO=, RECORD=1, REPLAY_000=1, ...)")
    s = Settings()
    table = load_table()
    if s.scenario and s.scenario not in table:
        raise Failure(f"no scenario '{s.scenario}'; there are: {' '.join(table)}")
    sh("scripts/deps.sh", "gnuplot-nox", capture=False)
    sh("scripts/build.sh", capture=False)
    os.makedirs(os.path.join(ROOT, s.results), exist_ok=True)
    lab = Lab(s)
    done = False
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        lab.start(table[s.scenario]["settings"] if s.scenario else {})
        good = scenario(lab, table) if s.scenario else experiments(lab)
        done = True
    finally:
        lab.stop(done)
    if not s.scenario and not good:
        print("experiments: a verdict differs from the documents", file=sys.stderr)
    return 0 if good else 1
