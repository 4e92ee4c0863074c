#!/usr/bin/env python3
"""outbox_order_bench.py: what the outbox's commit-ordered ids cost PostgreSQL (issue 26).

sql/010_outbox.sql draws event ids under a transaction advisory lock held to the commit, so that ids
increase in commit order and a feed reader that keeps its last id never misses an event. The
alternative measured here: no lock, the writer's pg_current_xact_id() stored on each event (a
column with that default), readers reading only below pg_snapshot_xmin(pg_current_snapshot()).

Starts its own Redis and PostgreSQL (scripts/services.sh, under run/outbox-bench-<pid>), migrates,
and copies the database twice: "lock" as migrated, "xid" with the alternative (the triggers of
010 without their pg_advisory_xact_lock, and the xid8 column). Then, in alternating rounds
(ABBA), in each database:
  purchases  --orders orders inserted by the worker's kind of statement, 500 a transaction, one
             session: PostgreSQL CPU an order (its processes' /proc/<pid>/stat ticks)
  pays       pgbench, --clients sessions paying orders of their own for --seconds (one UPDATE a
             transaction, as POST /orders/{id}/pay): pays/s and PostgreSQL CPU a pay
and prints the medians. fsync stays on (as in production) unless SECKILL_PG_FAST=1.

Then the guarantee, in "xid": a reader that reads the events below its snapshot's xmin in id order
and keeps its last id, against two transactions whose ids come in the other order than their xids
(the worker's batch takes its xid, a pay takes a later one and draws its event's id first, the
batch draws its ids and commits, the reader reads, the pay commits): whether the reader, asking
again after its last id, ever gets the pay's event. In "lock" the same interleaving cannot happen:
the batch waits for the pay's lock before drawing its ids.

  loadtest/outbox_order_bench.py [--rounds 3] [--orders 64000] [--clients 16] [--seconds 5]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seckill_lab import figures  # noqa: E402
from seckill_lab.system import (ROOT, TICK_US, Failure, free_port, pg_ticks, read_env,  # noqa: E402
                                services, sh)

LOCK_LINE = "PERFORM pg_advisory_xact_lock(111546413966700);"
PAY = """\\set id {base} + :client_id * {per_client} + :n
\\set n :n + 1
UPDATE orders SET status = 'paid', paid_at = now() WHERE id = :id AND status = 'persisted';
"""


def xid_variant():
    """The alternative's SQL: 010's trigger functions without the lock, and the column."""
    text = open(os.path.join(ROOT, "sql", "010_outbox.sql")).read()
    functions = re.findall(r"CREATE FUNCTION .*?\$\$;", text, re.S)
    if len(functions) != 2 or any(LOCK_LINE not in f for f in functions):
        raise Failure("sql/010_outbox.sql: not the two trigger functions with their lock")
    return ["ALTER TABLE order_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id()"] + [
        f.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION").replace(LOCK_LINE, "") for f in functions]


class Session:
    """A psql session of its own, statement by statement (an open transaction spans calls)."""

    def __init__(self, url):
        self.p = subprocess.Popen(["psql", url, "-XqtA", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, sql):
        self.p.stdin.write(sql + "\n\\echo __done__\n")
        self.p.stdin.flush()
        lines = []
        for line in self.p.stdout:
            if line.strip() == "__done__":
                return "\n".join(lines).strip()
            lines.append(line.rstrip("\n"))
        raise Failure(f"psql ended during: {sql}")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


class Run:
    def __init__(self, args):
        self.a = args
        self.dir = os.path.join(ROOT, "run", f"outbox-bench-{os.getpid()}")

    def start(self):
        redis_port = free_port(20000, 32000)
        os.environ.update(SECKILL_RUN_REDIS_PORT=str(redis_port),
                          SECKILL_RUN_PG_PORT=str(free_port(20000, 32000, {redis_port})))
        sh("scripts/services.sh", "start", self.dir)
        self.dir = os.path.realpath(self.dir)
        os.environ.update(read_env(os.path.join(self.dir, "env")))
        sh("scripts/migrate.sh")
        self.conninfo = os.environ["SECKILL_PG_CONNINFO"]
        for db in ("lock", "xid"):
            self.psql("seckill", f"CREATE DATABASE {db} TEMPLATE seckill")
        self.psql("xid", *xid_variant())
        # The same id in both: the copies' identities start alike.
        self.item = {self.psql(db, "INSERT INTO items (name, initial_stock) VALUES ('outbox-bench', 0)"
                               " RETURNING id").split()[-1] for db in ("lock", "xid")}.pop()
        self.pgbench = os.path.join(services("pg_bin"), "pgbench")

    def db_url(self, db):
        return re.sub(r"dbname=\S+", f"dbname={db}", self.conninfo)

    def psql(self, db, *commands):
        args = []
        for c in commands:
            args += ["-c", c]
        return sh("psql", self.db_url(db), "-XqtA", "-v", "ON_ERROR_STOP=1", *args).strip()

    def purchases(self, db, base):
        """Inserts --orders orders from id base + 1, 500 a transaction; PostgreSQL us an order."""
        batches = []
        for first in range(base + 1, base + self.a.orders + 1, 500):
            last = min(first + 499, base + self.a.orders)
            batches.append(f"INSERT INTO orders (id, item_id, user_id, round, created_at)"
                           f" SELECT g, {self.item}, g, 1, now() FROM generate_series({first}, {last}) g;")
        t0 = pg_ticks(self.dir)
        subprocess.run(["psql", self.db_url(db), "-Xq", "-v", "ON_ERROR_STOP=1"], input="\n".join(batches),
                       text=True, check=True, cwd=ROOT)
        return figures.per_unit(pg_ticks(self.dir) - t0, TICK_US, self.a.orders)

    def pays(self, db, base):
        """pgbench's pays of the orders from base + 1: (pays/s, PostgreSQL us a pay, events)."""
        per_client = self.a.orders // self.a.clients
        script = os.path.join(self.dir, "pay.sql")
        with open(script, "w") as f:
            f.write(PAY.format(base=base + 1, per_client=per_client))
        before = int(self.psql(db, "SELECT count(*) FROM order_events WHERE type = 'order.paid'"))
        t0 = pg_ticks(self.dir)
        out = subprocess.run([self.pgbench, "-n", "-c", str(self.a.clients), "-j", "2",
                              "-T", str(self.a.seconds), "-D", "n=0", "-f", script, self.db_url(db)],
                             text=True, capture_output=True, cwd=ROOT)
        spent = pg_ticks(self.dir) - t0
        if out.returncode != 0:
            raise Failure(f"pgbench: {out.stderr[-500:]}")
        done = int(re.search(r"number of transactions actually processed: (\d+)", out.stdout).group(1))
        events = int(self.psql(db, "SELECT count(*) FROM order_events WHERE type = 'order.paid'")) - before
        if done > per_client * self.a.clients * 0.9:
            raise Failure("the clients ran out of orders to pay: raise --orders")
        return round(done / self.a.seconds), figures.per_unit(spent, TICK_US, done), events, done

    def reader_misses(self, base):
        """The interleaving of the module's docstring in "xid"; the pay's event id if the reader
        never gets it, else None."""
        below = "xid < pg_snapshot_xmin(pg_current_snapshot())"
        insert = (f"INSERT INTO orders (id, item_id, user_id, round, created_at) SELECT g, {self.item}, g, 1, now()"
                  " FROM generate_series({}, {}) g")
        self.psql("xid", insert.format(base + 1, base + 1))
        start = self.psql("xid", "SELECT max(id) FROM order_events")
        batch, pay = Session(self.db_url("xid")), Session(self.db_url("xid"))
        try:
            batch.run("BEGIN; SELECT pg_current_xact_id();")
            pay.run(f"BEGIN; UPDATE orders SET status = 'paid', paid_at = now() WHERE id = {base + 1};")
            batch.run(insert.format(base + 2, base + 11) + "; COMMIT;")
            seen = self.psql("xid", f"SELECT coalesce(max(id), {start}) FROM order_events WHERE id > {start} "
                                    f"AND {below}")
            pay.run("COMMIT;")
            paid = int(self.psql("xid", f"SELECT id FROM order_events WHERE order_id = {base + 1} AND "
                                        "type = 'order.paid'"))
            later = self.psql("xid", f"SELECT count(*) FROM order_events WHERE id > {seen} AND id = {paid} AND {below}")
            return paid if paid < int(seen) and later == "0" else None
        finally:
            batch.close()
            pay.close()

    def stop(self, ok):
        sh("scripts/services.sh", "stop", self.dir, check=False)
        if ok:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"outbox_order_bench: logs kept in {self.dir}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--orders", type=int, default=64000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=5)
    r = Run(ap.parse_args())
    got = {db: {"order_us": [], "pays_s": [], "pay_us": []} for db in ("lock", "xid")}
    ok = False
    try:
        r.start()
        for k in range(r.a.rounds):
            for db in (("lock", "xid") if k % 2 == 0 else ("xid", "lock")):
                base = (k + 1) * 10000000
                order_us = r.purchases(db, base)
                # The pays' CPU without the inserts' aftermath (autovacuum, a checkpoint).
                r.psql(db, "VACUUM ANALYZE orders", "CHECKPOINT")
                pays, pay_us, events, done = r.pays(db, base)
                if events != done:
                    raise Failure(f"{db}: {done} pays made {events} order.paid events")
                for key, v in (("order_us", order_us), ("pays_s", pays), ("pay_us", pay_us)):
                    got[db][key].append(v)
                print(f"round {k + 1} {db}: PostgreSQL {order_us} us an order; {pays} pays/s, "
                      f"PostgreSQL {pay_us} us a pay", flush=True)
                time.sleep(1)
        missed = r.reader_misses(99000000)
        ok = True
    finally:
        r.stop(ok)
    m = {db: {k: figures.median(v) for k, v in g.items()} for db, g in got.items()}
    for db in ("lock", "xid"):
        print(f"{db}: PostgreSQL {m[db]['order_us']} us an order (500 a transaction); {m[db]['pays_s']} pays/s with "
              f"{r.a.clients} sessions, PostgreSQL {m[db]['pay_us']} us a pay (medians of {r.a.rounds})")
    print(f"xid/lock: {figures.ratio(m['xid']['order_us'], m['lock']['order_us'])} of the CPU an order, "
          f"{figures.ratio(m['xid']['pays_s'], m['lock']['pays_s'])} of the pays/s, "
          f"{figures.ratio(m['xid']['pay_us'], m['lock']['pay_us'])} of the CPU a pay")
    print("xid: the reader that keeps its last id " + (
        f"MISSED event {missed}: a pay's event with a smaller id than a batch's, committed after it" if missed else
        "got every event"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        sys.exit(f"outbox_order_bench: {e}")
