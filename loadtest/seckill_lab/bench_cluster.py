"""bench_cluster: `make bench-cluster`, and the last part of `make bench`: the purchase path on a
Redis Cluster of 3 masters and 3 replicas against the same server on one Redis, in one run (issue
14, item 8). Writes the table into a copy of docs/SCALING.md (between the bench-cluster markers)
and bench_cluster.json, both under run/results/; RECORD=1 writes them into docs/SCALING.md and
loadtest/results/bench_cluster.json, the committed ones; BENCH_DOC=0 writes neither.

Cases, each a wrk run of BENCH_DURATION (10s) with BENCH_CONNECTIONS (256), every request a new
buyer, stock 10,000,000, a worker draining as in production:
  single          one server on the single Redis: the baseline of the ratios
  hot             one server in cluster mode, one item: its one master does all the work
  hot-2, -4, -8   the same, the one item split into 2, 4, 8 segments (`"segments": K`)
  spread          one server in cluster mode, three items, one on each master, bought in turn
  spread-2        the same through nginx in front of two servers
  spread-wait     `spread` with the default reserve_wait_replicas = auto (1 here): each batch
                  waits for its replica
For each: requests a second, p99, the CPU each group of processes spent a purchase
(/proc/<pid>/stat before and after; wrk's from its rusage) and each master's share of the reserve
calls (INFO commandstats before and after).
"""

import datetime
import json
import os
import random
import shutil
import signal
import sys

from . import figures
from .progress import Progress, Quiet
from .system import (ROOT, TICK_US, Backends, Failure, Proc, base_env, children, free_port, pg_ticks,
                     post_json, read_env, services, sh, ticks, wait_ready, wrk)

TOKEN = "bench-admin-token"
STOCK = 10000000
CASES = {
    "single": "one server, single Redis (baseline)",
    "hot": "one server, cluster, one item (one master)",
    "hot-2": "one server, cluster, one item in 2 segments",
    "hot-4": "one server, cluster, one item in 4 segments",
    "hot-8": "one server, cluster, one item in 8 segments",
    "spread": "one server, cluster, 3 items on 3 masters",
    "spread-2": "nginx + two servers, cluster, 3 items",
    "spread-wait": "one server, cluster, 3 items, reserve_wait_replicas = auto (1)",
}
GROUPS = ["server", "redis", "replicas", "worker", "pg", "nginx", "wrk"]


class BenchCluster:
    def __init__(self, env=os.environ):
        self.duration = env.get("BENCH_DURATION", "10s")
        self.conns = int(env.get("BENCH_CONNECTIONS", 256))
        self.threads = int(env.get("BENCH_THREADS", 2))
        self.record = env.get("RECORD", "0") == "1"
        self.doc = env.get("BENCH_DOC", "1") != "0"
        self.dir = os.path.join(ROOT, "run", f"bench-cluster-{os.getpid()}")
        self.procs = {}
        self.progress = Quiet()
        self.row = {}

    def log(self, text):
        self.progress.note(f"bench-cluster: {text}")

    def start(self):
        sh("scripts/services.sh", "start", self.dir)
        self.dir = os.path.realpath(self.dir)
        env = read_env(os.path.join(self.dir, "env"))
        os.environ.update(env)
        self.db = Backends(env)
        sh("scripts/migrate.sh")
        self.seeds = services("cluster_start", self.dir)
        os.environ.update(SECKILL_ADMIN_TOKEN=TOKEN, SECKILL_ALLOW_ANONYMOUS="true",
                          SECKILL_LOG_LEVEL=os.environ.get("SECKILL_LOG_LEVEL", "warn"),
                          SECKILL_LAB=os.environ.get("SECKILL_LAB", "on"))  # as in `make run`, `make bench`
        # The nodes, in cluster_start's order (node-1..6 are the seeds' order): port, pid, role.
        self.masters, self.replicas, self.node_pid = [], [], {}
        for n, addr in enumerate(self.seeds.split(",")):
            port = addr.rsplit(":", 1)[1]
            with open(os.path.join(self.dir, "cluster", f"node-{n + 1}", "redis.pid")) as f:
                self.node_pid[port] = int(f.read())
            role = sh("redis-cli", "-p", port, "ROLE").split("\n")[0]
            (self.masters if role == "master" else self.replicas).append(port)
        if len(self.masters) != 3:
            raise Failure(f"expected 3 masters, found {len(self.masters)}")
        with open(os.path.join(self.dir, "redis.pid")) as f:
            self.single_redis_pid = int(f.read())
        cluster = {"SECKILL_REDIS_CLUSTER": self.seeds}
        self.port = {}
        self.launch("single", {})
        # `spread` and `second` answer at once (the opt-out, 0); `wait` runs the default, auto,
        # which on this cluster (every master has a replica) waits for one: the pair is what the
        # default costs.
        self.launch("spread", {**cluster, "SECKILL_RESERVE_WAIT_REPLICAS": "0"})
        self.launch("second", {**cluster, "SECKILL_RESERVE_WAIT_REPLICAS": "0"})
        self.launch("wait", {**cluster, "SECKILL_RESERVE_WAIT_REPLICAS": "auto"})
        self.port["nginx"] = free_port(taken=set(self.port.values()))
        services("nginx_start", self.dir, str(self.port["nginx"]), str(self.port["spread"]), str(self.port["second"]))

    def launch(self, name, env):
        """A server and a worker of their own (the worker id bench-NAME)."""
        port = free_port(taken=set(self.port.values()))
        self.port[name] = port
        self.procs[f"server-{name}"] = Proc(name, ["build/seckill-server"], base_env(**env, SECKILL_PORT=port),
                                            os.path.join(self.dir, f"server-{name}.log"))
        self.procs[f"worker-{name}"] = Proc(name, ["build/seckill-worker"],
                                            base_env(**env, SECKILL_WORKER_ID=f"bench-{name}"),
                                            os.path.join(self.dir, f"worker-{name}.log"))
        if not wait_ready(f"http://127.0.0.1:{port}/ready"):
            raise Failure(f"server {name} did not start (log: {self.dir}/server-{name}.log)")

    def stop(self, ok):
        self.progress.brk()
        for name in list(self.procs):
            self.procs.pop(name).stop()
        services("nginx_stop", self.dir, check=False)
        services("cluster_stop", self.dir, check=False)
        sh("scripts/services.sh", "stop", self.dir, check=False)
        if ok:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"bench-cluster: logs kept in {self.dir}", file=sys.stderr)

    # ---- items -------------------------------------------------------------------------------

    def item_create(self, port, name, segments=1):
        doc = {"name": name, "stock": STOCK, "payment_timeout_s": 0, "listed": False, "segments": segments}
        return post_json(f"http://127.0.0.1:{port}/api/v1/items", doc, TOKEN)["id"]

    def master_of(self, item):
        """The port of the master holding the item's keys (only it answers TYPE without a MOVED)."""
        for m in self.masters:
            if sh("redis-cli", "-p", m, "TYPE", f"{{item:{item}}}:state", check=False).strip() == "hash":
                return m
        raise Failure(f"item {item} is on no master")

    def items(self):
        self.single_item = self.item_create(self.port["single"], "bench-single")
        # Items are made until each master holds one: the spread cases buy them in turn.
        on = {}
        for _ in range(60):
            item = self.item_create(self.port["spread"], "bench-spread")
            on.setdefault(self.master_of(item), item)
            if len(on) == 3:
                break
        if len(on) != 3:
            raise Failure("60 items and still a master without one")
        self.spread_items = ",".join(str(on[m]) for m in sorted(on, key=self.masters.index))
        self.hot_item = on[self.masters[0]]
        self.segmented = {k: self.item_create(self.port["spread"], f"bench-hot-{k}", k) for k in (2, 4, 8)}
        self.log(f"cluster {self.seeds}; masters {' '.join(self.masters)}; items {self.spread_items} "
                 f"(hot: {self.hot_item})")

    # ---- measuring ---------------------------------------------------------------------------

    def cpu_read(self):
        """Ticks so far of each group a purchase is charged to."""
        def total(pids):
            return sum(ticks(p) for p in pids)

        procs = self.procs.values()
        with open(os.path.join(self.dir, "nginx", "nginx.pid")) as f:
            nginx = int(f.read())
        return {"server": total(p.pid for p in procs if p.log.split("/")[-1].startswith("server-")),
                "redis": total([self.single_redis_pid] + [self.node_pid[m] for m in self.masters]),
                "replicas": total(self.node_pid[r] for r in self.replicas),
                "worker": total(p.pid for p in procs if p.log.split("/")[-1].startswith("worker-")),
                "pg": pg_ticks(self.dir), "nginx": total([nginx] + children(nginx))}

    def run(self, name, port, items):
        """One wrk run; fills row[NAME]."""
        calls_before = [figures.reserve_calls(sh("redis-cli", "-p", m, "INFO", "commandstats")) for m in self.masters]
        before = self.cpu_read()
        report, wrk_s = wrk(self.threads, self.conns, self.duration, f"http://127.0.0.1:{port}", items,
                            random.randrange(32768) * 100000 + 1, os.path.join(self.dir, f"wrk-{name}.txt"))
        spent = figures.cpu_delta(before, self.cpu_read())
        w = figures.parse_wrk(report)
        n = w["requests"]
        row = {"rps": round(w["rps"] or 0), "p99": round(w["p99"] or 0, 1)}
        for group, t in spent.items():
            row[group] = figures.per_unit(t, TICK_US, n)
        row["wrk"] = figures.per_unit(wrk_s * 1e6, 1, n)
        deltas = [figures.reserve_calls(sh("redis-cli", "-p", m, "INFO", "commandstats")) - b
                  for m, b in zip(self.masters, calls_before)]
        # On the single Redis the masters' calls are only the idle workers' chores.
        row["share"] = "-" if name == "single" else figures.shares(deltas)
        self.row[name] = row
        self.log(f"{name}: {row['rps']} req/s, p99 {row['p99']} ms, masters {row['share']}")

    def cases(self):
        self.progress = Progress("bench-cluster", [1] * len(CASES))
        plan = [("single", self.port["single"], self.single_item), ("hot", self.port["spread"], self.hot_item)]
        plan += [(f"hot-{k}", self.port["spread"], self.segmented[k]) for k in (2, 4, 8)]
        plan += [("spread", self.port["spread"], self.spread_items),
                 ("spread-2", self.port["nginx"], self.spread_items),
                 ("spread-wait", self.port["wait"], self.spread_items)]
        for name, port, items in plan:
            self.progress.step(name)
            self.run(name, port, items)
        self.progress.end()

    # ---- what it writes -------------------------------------------------------------------------

    def table(self):
        lines = ["| case | req/s | ratio | p99 ms | server | Redis (masters) | replicas | worker | PostgreSQL | nginx | "
                 "wrk | reserve calls by master |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        base = self.row["single"]["rps"]
        for c, what in CASES.items():
            r = self.row[c]
            lines.append(f"| {c}: {what} | {r['rps']} | {figures.ratio(r['rps'], base):.2f} | {r['p99']} | "
                         + " | ".join(str(r[g]) for g in GROUPS) + f" | {r['share']} |")
        return "\n".join(lines)

    def report(self):
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        when = (f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, load average "
                f"{load}, {os.cpu_count()} cores, wrk -t{self.threads} -c{self.conns} -d{self.duration}")
        table = self.table()
        print(f"\nbench-cluster ({when}); CPU in microseconds a purchase")
        print(table)
        if not self.doc:
            return
        doc, results_json = "docs/SCALING.md", "loadtest/results/bench_cluster.json"
        if not self.record:
            os.makedirs(os.path.join(ROOT, "run/results"), exist_ok=True)
            shutil.copy(os.path.join(ROOT, doc), os.path.join(ROOT, "run/results/SCALING.md"))
            doc, results_json = "run/results/SCALING.md", "run/results/bench_cluster.json"
        section = (f"<!-- bench-cluster:begin (loadtest/seckill-lab bench-cluster writes this table) -->\n"
                   f"Measured {when}. CPU in microseconds a purchase, of each group of processes.\n\n{table}\n"
                   "<!-- bench-cluster:end -->")
        full = os.path.join(ROOT, doc)
        text = figures.between_markers(open(full).read(), section, "<!-- bench-cluster:begin", "<!-- bench-cluster:end")
        with open(full, "w") as f:
            f.write(text)
        names = {"redis": "redis_masters", "pg": "postgresql"}
        cases = [{"case": c, "what": what, "rps": self.row[c]["rps"], "p99_ms": self.row[c]["p99"],
                  "reserve_calls_by_master": self.row[c]["share"],
                  "cpu_us_per_purchase": {names.get(g, g): self.row[c][g] for g in GROUPS}}
                 for c, what in CASES.items()]
        with open(os.path.join(ROOT, results_json), "w") as f:
            json.dump({"measured": when, "cases": cases}, f, indent=2)
            f.write("\n")
        self.log(f"wrote {doc} and {results_json}")
        if not self.record:
            self.log("the committed figures are unchanged: `make bench-cluster RECORD=1` records a run")


def main(args):
    if args:
        raise Failure("usage: loadtest/seckill-lab bench-cluster")
    sh("scripts/deps.sh", capture=False)
    sh("scripts/build.sh")
    b = BenchCluster()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ok = False
    try:
        b.start()
        b.items()
        b.cases()
        b.report()
        ok = True
    finally:
        b.stop(ok)
    return 0
