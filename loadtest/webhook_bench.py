#!/usr/bin/env python3
"""webhook_bench.py: what webhooks cost a sale, and how fast they go out (issue 26).

Runs rounds of the same wrk purchase storm (loadtest/purchase.lua) against a fresh seckill-server
and seckill-worker, alternately without webhooks and with seckill-webhooks delivering every event
to two endpoints (two loadtest/webhook_receiver.py), and prints purchases per second of each, the
ratio (target >= 0.95: a purchase never waits for a webhook) and the events delivered per second
(deliveries to both endpoints from the storm's start to --drain-seconds after its end).

Needs the build (build/) and the Redis and PostgreSQL of a run folder, migrated:
  source run/<dir>/env && loadtest/webhook_bench.py [--rounds 3] [--seconds 8]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "webhook-bench-admin-token"
SECRETS = ["whsec-bench-endpoint-one-0123456789", "whsec-bench-endpoint-two-0123456789"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, token=None):
    req = urllib.request.Request(url, method=method, data=body.encode() if body else None)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


def wait_http(url, timeout_s=20):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            http("GET", url)
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"webhook_bench: {url} does not answer")


class Round:
    """The processes of one round; stop() ends them all."""

    def __init__(self, logdir, webhooks):
        self.procs, self.logdir = [], logdir
        self.port = free_port()
        self.metrics_port = free_port()
        env = dict(os.environ, SECKILL_PORT=str(self.port), SECKILL_ADMIN_TOKEN=TOKEN,
                   SECKILL_RATE_LIMIT_PER_S="0", SECKILL_WORKER_ID="webhook-bench",
                   SECKILL_LAB="off", SECKILL_WEBHOOK_METRICS_PORT=str(self.metrics_port))
        if webhooks:
            endpoints = []
            for secret in SECRETS:
                p = free_port()
                self.spawn("receiver", [sys.executable, os.path.join(ROOT, "loadtest",
                           "webhook_receiver.py"), "--port", str(p), "--secret", secret], env)
                wait_http(f"http://127.0.0.1:{p}/health")
                endpoints.append(f"http://127.0.0.1:{p}/hook {secret}")
            env["SECKILL_WEBHOOK_ENDPOINTS"] = ",".join(endpoints)
        self.spawn("server", [os.path.join(ROOT, "build", "seckill-server")], env)
        self.spawn("worker", [os.path.join(ROOT, "build", "seckill-worker")], env)
        if webhooks:
            self.spawn("webhooks", [os.path.join(ROOT, "build", "seckill-webhooks")], env)
        wait_http(f"http://127.0.0.1:{self.port}/health")
        if webhooks:
            wait_http(f"http://127.0.0.1:{self.metrics_port}/metrics")

    def spawn(self, name, argv, env):
        log = open(os.path.join(self.logdir, f"webhook-bench-{name}.log"), "a")
        self.procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log))

    def delivered(self):
        text = http("GET", f"http://127.0.0.1:{self.metrics_port}/metrics")
        return sum(int(v) for v in re.findall(r"^seckill_webhook_delivered_total\S* (\d+)$",
                                               text, re.M))

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)


def storm(r, seconds, seed):
    """A wrk storm on a new item; returns (purchases/s, the item)."""
    item = json.loads(http("POST", f"http://127.0.0.1:{r.port}/api/v1/items", json.dumps(
        {"name": "webhook-bench", "stock": 100000000, "payment_timeout_s": 0, "listed": False}),
        TOKEN))["id"]
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "-s",
                          os.path.join(ROOT, "loadtest", "purchase.lua"),
                          f"http://127.0.0.1:{r.port}", "--", str(item), str(seed)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), item


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--drain-seconds", type=int, default=10)
    args = ap.parse_args()
    logdir = os.environ.get("SECKILL_TEST_DIR", "/tmp")
    rates = {"none": [], "two endpoints": []}
    delivered = []
    for k in range(args.rounds):
        for mode in rates:
            webhooks = mode != "none"
            r = Round(logdir, webhooks)
            try:
                start = time.time()
                rps, item = storm(r, args.seconds, k * 2 + webhooks + 1)
                rates[mode].append(rps)
                if webhooks:
                    # Delivery keeps going after the storm: measured over a window, not to the
                    # end (two Python receivers are the slower side on a small machine).
                    time.sleep(args.drain_seconds)
                    delivered.append(r.delivered() / (time.time() - start))
            finally:
                r.stop()
            print(f"round {k + 1} {mode}: {rps:.0f} purchases/s", flush=True)
    none, two = statistics.median(rates["none"]), statistics.median(rates["two endpoints"])
    print(f"purchases/s: {none:.0f} without webhooks, {two:.0f} with two endpoints "
          f"(median of {args.rounds}); ratio {two / none:.3f} (target >= 0.95)")
    print(f"events delivered/s (both endpoints together, storm start to {args.drain_seconds} s after): "
          f"{statistics.median(delivered):.0f}")


if __name__ == "__main__":
    main()
