"""bench_drain: row 4 of `make bench`: 1,000,000 queued orders drained into PostgreSQL by the
worker, against the same rows by a raw COPY, in BENCH_DRAIN_ROUNDS rounds; a part of bench.Bench
(it uses the run's backends, items and worker)."""

import datetime
import os
import shlex
import time

from . import figures
from .system import TICK_US, Failure, pg_procs, pg_ticks, ticks


DRAIN_BASE = 1000000000000

# Orders in the queue format of service/common/order.h (what lua/reserve_batch.lua writes), queued and
# recorded as pending like the reserve script does, 1000 per LPUSH (Lua's unpack limit).
FILL_LUA = '''local q, p, first, n = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
local batch, fields = {}, {}
for i = first, first + n - 1 do
  local o = string.format("{\\"order_id\\":\\"%d\\",\\"item_id\\":%s,\\"user_id\\":%d,\\"round\\":%s,\\"created_ms\\":%s}",
    i, ARGV[3], i, ARGV[4], ARGV[5])
  batch[#batch + 1] = o
  fields[#fields + 1] = tostring(i); fields[#fields + 1] = o
  if #batch == 1000 or i == first + n - 1 then
    redis.call("LPUSH", q, unpack(batch)); redis.call("HSET", p, unpack(fields))
    batch, fields = {}, {}
  end
end
return n'''


class Drain:
    def drain_keys(self):
        i = self.drain_item
        return (f"seckill:{{item:{i}}}:queue", f"seckill:{{item:{i}}}:pending",
                f"seckill:{{item:{i}}}:processing:bench")

    def drain_fill(self):
        """An empty orders table and empty queues, a checkpoint (neither the drain nor the COPY
        pays for the writes of what ran before it), then drain_orders orders queued. The orders
        the rounds and ab left in their items' queues go too: the worker drains every registered
        item, and the drain counts only its own."""
        n_orders = self.s.drain_orders
        self.progress.step(f"4 drain: queueing {figures.thousands(n_orders)} orders")
        for id_ in self.db.redis("smembers", "seckill:items").split():
            self.db.redis("del", f"seckill:{{item:{id_}}}:queue", f"seckill:{{item:{id_}}}:pending",
                          f"seckill:{{item:{id_}}}:processing:bench")
        queue, pending, processing = self.drain_keys()
        self.db.redis("del", queue, pending, processing)
        self.db.psql("truncate orders", "checkpoint")
        for i in range(0, n_orders, 100000):
            n = min(100000, n_orders - i)
            self.db.redis("eval", FILL_LUA, 2, queue, pending, DRAIN_BASE + i + 1, n, self.drain_item,
                          self.drain_round, self.created_ms)
        queued = self.db.redis_int("llen", queue)
        if queued != n_orders:
            raise Failure(f"queued {queued} orders instead of {n_orders}")

    def drain_once(self, k):
        """One drain of a full queue by the K-th worker command of BENCH_WORKERS."""
        workers = self.s.drain_workers
        self.drain_fill()
        self.progress.step(f"4 drain: worker {k + 1} of {len(workers)}" if len(workers) > 1 else "4 drain: the worker")
        queue, _, processing = self.drain_keys()
        self.db.redis("config", "resetstat")
        r0, p0 = ticks(self.redis_pid), pg_ticks(self.dir)
        pg_before = pg_procs(self.dir)
        words = shlex.split(workers[k])
        assigns = dict(w.split("=", 1) for w in words if "=" in w.split("/")[0])
        argv = [w for w in words if w.split("=", 1)[0] not in assigns]
        env = dict(self.worker_env)
        env.update(assigns)
        t0 = time.monotonic()
        w = self.start_worker(argv=argv, env=env)
        # One redis-cli a tenth of a second: starting processes costs CPU the drain needs.
        while int(self.db.redis("eval", "return redis.call('llen', KEYS[1]) + redis.call('llen', KEYS[2])",
                                2, queue, processing)):
            time.sleep(0.1)
        secs = round(time.monotonic() - t0, 2)
        wt, rt, pt = ticks(w.pid), ticks(self.redis_pid) - r0, pg_ticks(self.dir) - p0
        n = self.s.drain_orders
        pg_by = ", ".join(f"{name} {figures.per_unit(t - pg_before.get(p, (0,))[0], TICK_US, n, 2):.2f}"
                          for p, (t, name) in pg_procs(self.dir).items() if t - pg_before.get(p, (0,))[0] > 0)
        self.stop_proc("worker")
        drained = int(self.db.sql("select count(*) from orders"))
        rate = round(drained / secs)
        per = {"worker": figures.per_unit(wt, TICK_US, drained, 2), "redis": figures.per_unit(rt, TICK_US, drained, 2),
               "pg": figures.per_unit(pt, TICK_US, drained, 2)}
        batches = 0
        for line in open(os.path.join(self.dir, "worker.log")):
            if " stopped: " in line:
                f = line.split()
                batches = next((int(f[i - 1]) for i in range(1, len(f)) if f[i] == "batches,"), batches)
        calls = []
        if batches:
            for line in self.db.redis("info", "commandstats").splitlines():
                if line.startswith("cmdstat_"):
                    cmd, _, rest = line[len("cmdstat_"):].partition(":")
                    if cmd in ("blmove", "lmove", "evalsha", "multi", "lrange", "set", "del"):
                        count = int(rest.split(",")[0].split("=")[1])
                        calls.append(f"{cmd} {count / batches:.2f}")
        self.drains[k].append((rate, per))
        self.log(f"drain by '{workers[k]}': {drained} orders in {secs:.2f} s, {batches} batches; CPU us an order: "
                 f"worker {per['worker']:.2f}, Redis {per['redis']:.2f}, PostgreSQL {per['pg']:.2f}; "
                 f"Redis calls a batch: {', '.join(calls)}; PostgreSQL by process: {pg_by}")
        self.drained = drained
        if drained != n:
            raise Failure(f"drained {drained} orders instead of {n}")

    def copy_once(self, csv):
        """The same rows, straight into the same table with COPY."""
        self.progress.step("4 drain: raw COPY")
        self.db.psql("truncate orders", "checkpoint")
        p0 = pg_ticks(self.dir)
        t0 = time.monotonic()
        self.db.psql(f"\\copy orders (id, item_id, user_id, round, created_at) from '{csv}' with (format csv)")
        secs = round(time.monotonic() - t0, 2)
        p = pg_ticks(self.dir) - p0
        n = self.s.drain_orders
        self.copy_rates.append(round(n / secs))
        self.log(f"COPY: {n} rows in {secs} s; PostgreSQL CPU us a row: {figures.per_unit(p, TICK_US, n, 2):.2f}")

    def drain_all(self):
        """BENCH_DRAIN_ROUNDS rounds (a single drain is at the mercy of the noise), each a drain by
        every worker command of BENCH_WORKERS and a COPY; the first worker's medians are row 4's."""
        s = self.s
        self.drain_item = self.item_create("bench-drain", 0)
        self.drain_round = int(self.db.sql(f"select round from items where id = {self.drain_item}"))
        self.created_ms = int(time.time()) * 1000
        ts = datetime.datetime.fromtimestamp(self.created_ms // 1000, datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S+00")
        csv = os.path.join(self.dir, "orders.csv")
        with open(csv, "w") as f:
            for i in range(1, s.drain_orders + 1):
                f.write(f"{DRAIN_BASE + i},{self.drain_item},{DRAIN_BASE + i},{self.drain_round},{ts}\n")
        self.drains = {k: [] for k in range(len(s.drain_workers))}
        self.copy_rates = []
        for _ in range(s.drain_rounds):
            for k in self.drains:
                self.drain_once(k)
            self.copy_once(csv)
        copy_rate = figures.median(self.copy_rates)
        for k, runs in self.drains.items():
            m = figures.median([r for r, _ in runs])
            self.log(f"drain '{s.drain_workers[k]}': orders/s {' '.join(str(r) for r, _ in runs)} (median {m}: "
                     f"{figures.ratio(m, copy_rate):.2f} of COPY's median {copy_rate}; COPY rows/s "
                     f"{' '.join(map(str, self.copy_rates))}); CPU us an order, medians: "
                     + ", ".join(f"{label} {figures.median([c[p] for _, c in runs]):.2f}"
                                 for p, label in (("worker", "worker"), ("redis", "Redis"), ("pg", "PostgreSQL"))))
        rate = figures.median([r for r, _ in self.drains[0]])
        self.out["drain"] = {
            "orders": s.drain_orders, "rows": self.drained, "orders_per_s": rate,
            "seconds": round(s.drain_orders / rate, 2), "copy_rows_per_s": copy_rate,
            "copy_seconds": round(s.drain_orders / copy_rate, 2), "ratio_to_copy": figures.ratio(rate, copy_rate),
            "target_ratio": 0.5, "target_orders_per_s": 100000,
            "rounds": {"orders_per_s": [r for r, _ in self.drains[0]], "copy_rows_per_s": self.copy_rates}}
