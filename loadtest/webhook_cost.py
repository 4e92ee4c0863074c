#!/usr/bin/env python3
"""webhook_cost.py: the CPU a webhook delivery costs seckill-webhooks and its PostgreSQL backend.

A backlog of N events (N/2 orders persisted, then paid, written straight into PostgreSQL: the
outbox's trigger makes the events) owed to two sample receivers (loadtest/webhook_receiver.py, at
nice 19) from event 0, delivered by each deliverer binary named in turn; for each, the time and
the CPU (utime + stime in /proc/<pid>/stat) of the deliverer and of its backend, a delivery.
It empties the orders, events and webhook tables of the database it is given: a scratch one.

  scripts/services.sh start run/cost && source run/cost/env && scripts/migrate.sh
  N=20000 loadtest/webhook_cost.py 25101 25102 OLD/seckill-webhooks build/seckill-webhooks
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from seckill_lab.system import TICK_US, ticks  # noqa: E402

SECRETS = ["whsec-cost-endpoint-one-0123456789", "whsec-cost-endpoint-two-0123456789"]


def psql(sql):
    conninfo = os.environ["SECKILL_PG_CONNINFO"]
    return subprocess.run(["psql", conninfo, "-X", "-qtAc", sql], check=True, capture_output=True,
                          text=True).stdout.strip()


def backlog(n, urls):
    """n events, owed to every url from the first."""
    psql("TRUNCATE order_events, webhook_deliveries, webhook_endpoints, orders RESTART IDENTITY CASCADE")
    psql("SELECT setval('order_events_ids', 1, false)")
    item = psql("INSERT INTO items (name, initial_stock) VALUES ('webhook cost', 1000000) RETURNING id")
    item = item.splitlines()[0]
    psql(f"INSERT INTO orders (id, item_id, user_id, round, created_at) SELECT g, {item}, g,"
         f" (SELECT round FROM items WHERE id = {item}), now() FROM generate_series(1, {n // 2}) g")
    psql("UPDATE orders SET status = 'paid', paid_at = now()")
    for url in urls:
        psql(f"INSERT INTO webhook_endpoints (url, after_event) VALUES ('{url}', 0)")
    psql("VACUUM ANALYZE webhook_deliveries")
    return int(psql("SELECT count(*) FROM order_events"))


def deliver(binary, urls, events):
    env = dict(os.environ, SECKILL_LOG_LEVEL="warn",
               SECKILL_WEBHOOK_ENDPOINTS=",".join(f"{u} {s}" for u, s in zip(urls, SECRETS)))
    started = time.time()
    proc = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL)
    try:
        backend = None
        done = ("SELECT (SELECT min(after_event) FROM webhook_endpoints) ="
                " (SELECT max(id) FROM order_events) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries)")
        while time.time() - started < 900:
            time.sleep(0.2)
            backend = backend or psql("SELECT pid FROM pg_stat_activity WHERE backend_type ="
                                      " 'client backend' AND pid <> pg_backend_pid() LIMIT 1")
            if psql(done) == "t":
                break
        took = time.time() - started
        mine, its = (ticks(pid) * TICK_US / 1e6 for pid in (proc.pid, int(backend)))
        n = len(urls) * events
        print(f"{binary}: {n} deliveries in {took:.1f} s; deliverer {mine / n * 1e6:.0f} us,"
              f" its PostgreSQL backend {its / n * 1e6:.0f} us a delivery", flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    ports, binaries = sys.argv[1:3], sys.argv[3:]
    sink = os.path.join(os.path.dirname(HERE), "build", "seckill-webhook-sink")
    receiver = ([sink] if os.environ.get("RECEIVER") == "sink"
                else [sys.executable, os.path.join(HERE, "webhook_receiver.py")])
    receivers = [subprocess.Popen(["nice", "-n", "19"] + receiver + ["--port", port],
                                  env=dict(os.environ, WEBHOOK_SECRET=secret), stdout=subprocess.DEVNULL)
                 for port, secret in zip(ports, SECRETS)]
    urls = [f"http://127.0.0.1:{port}/hook" for port in ports]
    try:
        time.sleep(1)
        for binary in binaries:
            deliver(binary, urls, backlog(int(os.environ.get("N", "20000")), urls))
    finally:
        for r in receivers:
            r.terminate()
            r.wait()


if __name__ == "__main__":
    main()
