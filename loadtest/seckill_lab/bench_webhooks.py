"""bench_webhooks: row 7 of `make bench` (issue 26): what webhooks cost a sale, and how fast they go
out; a part of bench.Bench (it uses the run's server, worker, big item and wrk settings).

BENCH_ROUNDS rounds, each a purchase storm (row 2's wrk) without webhooks and one with
seckill-webhooks delivering every event to two endpoints (two build/seckill-webhook-sink), in
alternating order (ABBA): the ratio of each round's pair, and their median, compare runs that the
shared machine's drift touched alike. After a storm with webhooks the deliverer works through the
backlog until both endpoints hold every event of the storm (at most BENCH_WEBHOOK_WAIT seconds,
120): events delivered a second over that whole window, storm included, and the deliverer's CPU
an event. BENCH_WEBHOOKS names another deliverer binary (an older build, to compare). Every storm
starts on a settled PostgreSQL (orders and order_events vacuumed and analyzed, a checkpoint, then
BENCH_WEBHOOK_SETTLE seconds, 3, whatever was started meanwhile), so that neither side pays for
the other's autovacuum or checkpoint, nor starts sooner after it.

The deliverer runs with its defaults otherwise: it waits out the storm (webhook_storm_rate, 1,000
events a second) and delivers after it; SECKILL_WEBHOOK_STORM_RATE=0 in the environment makes it
deliver during the storm, to compare.

The receivers are loadtest/webhook_sink.c (seckill-webhook-sink): one libmicrohttpd thread that
verifies every signature with the product's own webhook_verify and counts the distinct event ids;
its GET /stats?after=<the storm's first event> says whether it holds every event of the storm
(none refused). They stand for the shop's machines, elsewhere in production: the sample receiver
(loadtest/webhook_receiver.py, Python, a thread a connection) took 18-19 us of CPU a purchase
during the storms, out of the cores the purchases are measured on. BENCH_WEBHOOK_RECEIVER=sample
runs the sample instead (its check: the deliverer's delivered count), to compare.

The deliverer runs with webhook_priority = idle (SCHED_IDLE), as its systemd unit and
docker-compose run it: deliveries wait while the purchases want the CPU, purchases do not. The
receivers run under SCHED_IDLE too (chrt --idle): they stand for the shop's machines, not this one.
BENCH_WEBHOOK_NICE ("idle idle": the deliverer's, the receivers'; a number is a nice level, "10 19"
as before issue 26's row 7 work; "0 0": neither) changes that.

During each storm the CPU of every process is read (/proc/<pid>/stat; pg: every process of the
run's PostgreSQL, pg_webhooks the deliverer's own backend among them) and reported a purchase."""

import json
import os
import re
import sys
import time

from . import figures
from .system import TICK_US, Failure, Proc, base_env, free_port, http, pg_ticks, ticks, wait_ready

SECRETS = ["whsec-bench-endpoint-one-0123456789", "whsec-bench-endpoint-two-0123456789"]
MODES = ("none", "two")
# The processes a storm's CPU is read of (pg: every process of the run's PostgreSQL, its
# backends included, gone ones too); those a mode does not run read 0.
# pg_webhooks: the deliverer's own backend, a part of pg.
STORM_PROCS = ("server", "redis", "worker", "pg", "pg_webhooks", "webhooks", "receivers")


def niced(argv, level):
    """argv run at nice level, or under SCHED_IDLE for "idle"."""
    if level == "idle":
        return ["chrt", "--idle", "0"] + argv
    return (["nice", "-n", str(level)] if level else []) + argv


def delivered_of(metrics):
    """The sum of seckill_webhook_delivered_total over the endpoints of a /metrics text."""
    return sum(int(v) for v in re.findall(r"^seckill_webhook_delivered_total\S* (\d+)$", metrics, re.M))


class Webhooks:
    def webhook_start(self, r):
        """Two receivers and a deliverer to them; their names in self.procs, the receivers' ports in
        self.receiver_ports."""
        endpoints = []
        self.receiver_ports = []
        for k, secret in enumerate(SECRETS):
            port = free_port(20000, 32000)
            name = f"receiver-{k + 1}"
            receiver = (["build/seckill-webhook-sink"] if self.s.receiver == "sink"
                        else [sys.executable, "loadtest/webhook_receiver.py"])
            argv = niced(receiver + ["--port", str(port)], self.s.nice[1])
            self.procs[name] = Proc(name, argv,
                                    base_env(WEBHOOK_SECRET=secret), os.path.join(self.dir, f"{name}.log"))
            if not wait_ready(f"http://127.0.0.1:{port}/health"):
                raise Failure(f"the webhook receiver on {port} did not start")
            endpoints.append(f"http://127.0.0.1:{port}/hook-{r} {secret}")
            self.receiver_ports.append(port)
        self.webhook_metrics = f"http://127.0.0.1:{free_port(20000, 32000)}/metrics"
        env = base_env(**self.server_env, SECKILL_WEBHOOK_ENDPOINTS=",".join(endpoints),
                       SECKILL_WEBHOOK_METRICS_PORT=self.webhook_metrics.split(":")[2].split("/")[0])
        # idle: the product's own setting (webhook_priority), not chrt's.
        idle = self.s.nice[0] == "idle"
        if idle:
            env["SECKILL_WEBHOOK_PRIORITY"] = "idle"
        argv = [self.s.webhooks_bin] if idle else niced([self.s.webhooks_bin], self.s.nice[0])
        self.procs["webhooks"] = Proc("webhooks", argv, env, os.path.join(self.dir, "webhooks.log"))
        if not wait_ready(self.webhook_metrics):
            raise Failure("seckill-webhooks did not start")
        self.webhook_backend = None
        for _ in range(50):
            # Its session: seckill names each of its sessions by the program (application_name).
            self.webhook_backend = self.db.sql("select pid from pg_stat_activity"
                                               " where application_name = 'seckill-webhooks' limit 1")
            if self.webhook_backend:
                break
            time.sleep(0.1)

    def webhook_stop(self):
        for name in ("webhooks", "receiver-1", "receiver-2"):
            self.stop_proc(name)

    def webhook_delivered(self):
        status, text = http("GET", self.webhook_metrics, timeout=5)
        return delivered_of(text) if status == 200 else None

    def receiver_stats(self, first_event):
        """Each sink's GET /stats?after=first_event (None when one did not answer)."""
        stats = []
        for port in self.receiver_ports:
            status, text = http("GET", f"http://127.0.0.1:{port}/stats?after={first_event}", timeout=5)
            if status != 200:
                return None
            stats.append(json.loads(text))
        return stats

    def webhook_backlog(self, t0, first_event, before):
        """Waits until both endpoints had every event after first_event (the worker drained), at
        most BENCH_WEBHOOK_WAIT seconds after t0; the figures of the delivery (CPU from the storm_ticks
        before the storm: the deliverer's an event, the receivers' a delivery). With the sinks, every
        endpoint holds every event: each one's distinct ids after first_event are the events', and
        it refused none; with the sample receivers, the deliverer's delivered count is the owed."""
        deadline = t0 + self.s.webhook_wait
        delivered = owed = 0
        stats = None
        while True:
            self.wait_drained(max(1, deadline - time.monotonic()))
            events = int(self.db.sql(f"select count(*) from order_events where id > {first_event}"))
            owed = len(SECRETS) * events
            delivered = self.webhook_delivered() or delivered
            if self.s.receiver == "sink":
                stats = self.receiver_stats(first_event) or stats
                held = stats is not None and all(s["events_after"] >= events for s in stats)
            else:
                held = delivered >= owed
            if held or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        secs = time.monotonic() - t0
        now = self.storm_ticks()
        if self.s.receiver == "sink":
            held = stats is not None and all(s["events_after"] == events and s["refused"] == 0 for s in stats)
        return {"events_owed": owed, "delivered": delivered, "all_delivered": held,
                "seconds": round(secs, 2), "delivered_per_s": round(delivered / secs),
                "deliverer_cpu_us_an_event": figures.per_unit(now["webhooks"] - before["webhooks"], TICK_US, delivered),
                "receivers_cpu_us_a_delivery": figures.per_unit(now["receivers"] - before["receivers"], TICK_US,
                                                                delivered),
                "receivers": stats}

    def storm_ticks(self):
        """Ticks so far of each of STORM_PROCS."""
        procs = self.procs
        return {"server": ticks(procs["server"].pid), "redis": ticks(self.redis_pid),
                "worker": ticks(procs["worker"].pid), "pg": pg_ticks(self.dir),
                "webhooks": ticks(procs["webhooks"].pid) if "webhooks" in procs else 0,
                "pg_webhooks": ticks(int(self.webhook_backend)) if "webhooks" in procs and self.webhook_backend else 0,
                "receivers": sum(ticks(procs[n].pid) for n in ("receiver-1", "receiver-2") if n in procs)}

    def webhook_round(self, r, mode):
        """One storm of round r with (mode two) or without webhooks: its purchases/s, the CPU
        microseconds a purchase of each process during the storm, and with webhooks the delivery's
        figures."""
        self.wait_drained()
        # Every storm starts on a settled PostgreSQL, with or without webhooks: the previous
        # storms' orders and events vacuumed and analyzed, their dirty pages written. Else an
        # autovacuum of orders and order_events (every minute once their inserts pass 20%, longer
        # as they grow) or a checkpoint (every ~1 GB of WAL) lands in whichever storm it falls in,
        # in PostgreSQL's own sessions that no nice or SCHED_IDLE of ours reaches.
        # Then both storms start as long after it (BENCH_WEBHOOK_SETTLE): a storm with webhooks
        # began 1-2 s later (the deliverer and the receivers started meanwhile), and with the
        # deliverer stopped (SIGSTOP) through its storms, purchases with it ran at 1.10 of those
        # without (rounds 1.03-1.18); with the settle, at 1.01 (0.96-1.04).
        self.db.psql("vacuum (analyze) orders, order_events", "checkpoint")
        settled = time.monotonic() + self.s.webhook_settle
        if mode == "two":
            first_event = int(self.db.sql("select coalesce(max(id), 0) from order_events"))
            self.webhook_start(r)
        late = time.monotonic() - settled
        if late > 0:
            self.log(f"webhooks round {r} {mode}: the storm starts {late:.1f} s after the settle "
                     f"(BENCH_WEBHOOK_SETTLE {self.s.webhook_settle:g} s): the deliverer was slow to start")
        time.sleep(max(0.0, -late))
        try:
            before = self.storm_ticks()
            t0 = time.monotonic()
            seed = 700000000 + r * 1000000 + MODES.index(mode) * 500000
            report, _ = self.fire(self.s.duration, self.url, self.big, seed,
                                  os.path.join(self.dir, f"wrk-webhooks-{mode}-{r}.txt"))
            spent = figures.cpu_delta(before, self.storm_ticks())
            w = figures.parse_wrk(report)
            cpu = {p: figures.per_unit(t, TICK_US, w["requests"]) for p, t in spent.items()}
            return w["rps"], cpu, (self.webhook_backlog(t0, first_event, before) if mode == "two" else None)
        finally:
            self.webhook_stop()

    def webhooks_all(self):
        s = self.s
        if not getattr(self, "big", None):
            self.big = self.item_create("bench-big", 10000000)
        self.start_worker()
        rps = {m: [] for m in MODES}
        cpu = {(m, p): [] for m in MODES for p in STORM_PROCS}
        ratios, deliveries = [], []
        for r in range(1, s.rounds + 1):
            for mode in (MODES if r % 2 else MODES[::-1]):
                self.progress.step(f"7 webhooks: round {r} of {s.rounds}, "
                                   + ("two endpoints" if mode == "two" else "none"))
                got, spent, delivery = self.webhook_round(r, mode)
                rps[mode].append(got)
                for p in STORM_PROCS:
                    cpu[mode, p].append(spent[p])
                self.log(f"webhooks round {r} {mode}: CPU us a purchase during the storm: "
                         + ", ".join(f"{p} {spent[p]}" for p in STORM_PROCS))
                if delivery:
                    deliveries.append(delivery)
            ratios.append(figures.ratio(rps["two"][-1], rps["none"][-1]))
            d = deliveries[-1]
            self.log(f"webhooks round {r}: purchases/s {rps['none'][-1]} without, {rps['two'][-1]} with two "
                     f"endpoints ({ratios[-1]:.2f}); {d['delivered']} of {d['events_owed']} deliveries in "
                     f"{d['seconds']} s: {d['delivered_per_s']}/s, deliverer {d['deliverer_cpu_us_an_event']} "
                     f"us CPU an event, receivers {d['receivers_cpu_us_a_delivery']} us a delivery"
                     + ("" if d["all_delivered"] else "; NOT every event held by both endpoints"))
        self.stop_proc("worker")
        self.out["webhooks"] = {
            "purchases_per_s_without": figures.median(rps["none"]),
            "purchases_per_s_with_two_endpoints": figures.median(rps["two"]),
            "ratio": figures.median(ratios), "target_ratio": 0.95,
            "delivered_per_s": figures.median([d["delivered_per_s"] for d in deliveries]),
            "deliverer_cpu_us_an_event": figures.median([d["deliverer_cpu_us_an_event"] for d in deliveries]),
            "receivers_cpu_us_a_delivery": figures.median([d["receivers_cpu_us_a_delivery"] for d in deliveries]),
            "all_delivered": all(d["all_delivered"] for d in deliveries),
            "storm_cpu_us_a_purchase": {m: {p: figures.median(cpu[m, p]) for p in STORM_PROCS} for m in MODES},
            "rounds": {"purchases_per_s_without": rps["none"], "purchases_per_s_with_two_endpoints": rps["two"],
                       "storm_cpu_us_a_purchase": {m: {p: cpu[m, p] for p in STORM_PROCS} for m in MODES},
                       "ratios": ratios, "deliveries": deliveries},
            "wait_s": s.webhook_wait, "deliverer": s.webhooks_bin, "receiver": s.receiver,
            "nice": {"deliverer": s.nice[0], "receivers": s.nice[1]}}
        self.log(webhook_sentence(self.out["webhooks"]))


def webhook_sentence(w):
    return (f"webhooks: purchases/s {figures.thousands(w['purchases_per_s_without'])} without, "
            f"{figures.thousands(w['purchases_per_s_with_two_endpoints'])} with two endpoints; median ratio of "
            f"the rounds {w['ratio']:.2f} (target >= 0.95); {figures.thousands(w['delivered_per_s'])} events "
            f"delivered/s (both endpoints, storm start to the last delivery"
            f"{'' if w['all_delivered'] else ', NOT all delivered within ' + str(w['wait_s']) + ' s'}), deliverer "
            f"{w['deliverer_cpu_us_an_event']} us CPU an event")
