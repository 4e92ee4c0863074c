"""bench_room: rows 8 and 8b of `make bench`, the waiting room (issue 27); a part of bench.Bench (it
uses the run's server, nginx and the purchase rate its rounds measured).
  8  join       BENCH_ROOM_JOINERS (100,000) distinct buyers join a room item before its start
                (loadtest/room.lua join: a new buyer every request); wrk is stopped (SIGINT: its
                report covers the time it ran) once the item's detail counts them all. Joins/s
                against the purchases/s of the same run: target >= 1.0.
  8b poll storm after the start, no place admitted, each wrk thread polling the line of 1,000 of
                the buyers it joined (loadtest/room.lua poll): every poll far from the front, the
                answer from the instance's memory. Polls/s against nginx's fixed 200 of the same run,
                as the sell-out storm: target >= 0.9.
One run each, after the alternating rounds."""

import datetime
import os
import re
import signal
import subprocess
import time

from . import figures
from .system import ROOT, TICK_US, Failure, get_json, http, pg_ticks, ticks

ROOM_SEED = 700000001
POLLED_A_THREAD = 1000


def room_settings(env=os.environ):
    return int(env.get("BENCH_ROOM_JOINERS", 100000))


def non_2xx(report):
    """wrk's "Non-2xx or 3xx responses: N" (0 when every answer was 2xx)."""
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", report)
    return int(m.group(1)) if m else 0


def room_rows(b):
    """The Markdown rows 8 and 8b of b's run (a bench.Bench), or [] when it measured no room."""
    r = b.out.get("room")
    if not r:
        return []

    def yes(ok):
        return "yes" if ok else "**no**"

    return [
        f"| 8 | waiting room: {figures.thousands(r['joined'])} distinct buyers join before the start | "
        f"{figures.thousands(r['joins_per_s'])} joins/s (**{r['joins_ratio_to_purchase']:.2f}** of the "
        f"purchases/s of 2), p99 {figures.fixed(r['join_p99_ms'], 2)} ms, {r['join_refused']} refused, "
        f"{r['join_errors']} socket errors | >= 1.0, none refused | "
        f"{yes(r['joins_ratio_to_purchase'] >= 1.0 and r['join_refused'] == 0)} |",
        f"| 8b | waiting room: poll storm from buyers far back ({r['poll_state']}) | "
        f"{figures.thousands(r['polls_per_s'])} polls/s (**{r['polls_ratio_to_ceiling']:.2f}** of the ceiling), "
        f"p99 {figures.fixed(r['poll_p99_ms'], 2)} ms, {r['poll_refused']} refused, {r['poll_errors']} socket "
        f"errors | >= 0.9, none refused | {yes(r['polls_ratio_to_ceiling'] >= 0.9 and r['poll_refused'] == 0)} |",
    ]


class Room:
    def room_wrk(self, name, duration, args, until=None):
        """wrk -s loadtest/room.lua with ARGS for DURATION, or until until() holds (then SIGINT:
        wrk reports the time it ran). Returns its report, also written under the run's folder."""
        argv = ["wrk", f"-t{self.s.threads}", f"-c{self.s.conns}", f"-d{duration}", "--latency",
                "-s", "loadtest/room.lua", self.url, "--"] + [str(a) for a in args]
        out = os.path.join(self.dir, f"wrk-{name}.txt")
        with open(out, "w") as f:
            p = subprocess.Popen(argv, cwd=ROOT, text=True, stdout=f, stderr=subprocess.STDOUT)
            while until is not None and p.poll() is None and not until():
                time.sleep(0.1)
            if p.poll() is None and until is not None:
                p.send_signal(signal.SIGINT)
            p.wait()
        with open(out) as f:
            return f.read()

    def room_cpu(self):
        """Ticks so far of the server, Redis and the PostgreSQL cluster."""
        return {"server": ticks(self.procs["server"].pid), "redis": ticks(self.redis_pid),
                "pg": pg_ticks(self.dir)}

    def room_joined(self, item):
        return get_json(f"{self.url}/api/v1/items/{item}")["room"]["joined"]

    def room_state(self, item):
        """The state of the line of a buyer the join run made: the second of a wrk thread (room.lua's
        naming), or what answered instead."""
        said = "no answer"
        for thread in range(17):
            buyer = f"{4611686019 + ROOM_SEED % 268435456 * 16 + thread}000000002"
            status, body = http("GET", f"{self.url}/api/v1/items/{item}/queue?user_id={buyer}")
            state = re.search(r'"state":"([a-z_]+)"', body)
            if status == 200 and state:
                return state[1]
            said = f"HTTP {status}"
        return said

    def room(self):
        joiners = room_settings()
        purchase_rps = self.med["purchase"]["rps"] or 1
        # The start after the joins, at half the purchase rate, and not before 5 s from now.
        lead = max(5, min(120, 2 * joiners / purchase_rps)) + 2
        starts = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lead)
        starts = starts.replace(microsecond=0) + datetime.timedelta(seconds=1)
        # Nobody admitted: every poll is from far back.
        item = self.item_create("bench-room", 1000, admission="room", admit_per_s=0.001, admit_burst=0,
                                starts_at=starts.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.progress.step(f"8 waiting room: {figures.thousands(joiners)} buyers join")
        before = self.room_cpu()
        report = self.room_wrk("room-join", "300s", ["join", item, ROOM_SEED],
                               until=lambda: self.room_joined(item) >= joiners)
        spent = figures.cpu_delta(before, self.room_cpu())
        j = figures.parse_wrk(report)
        join_cpu = {p: figures.per_unit(spent[p], TICK_US, j["requests"]) for p in ("server", "redis", "pg")}
        joined = self.room_joined(item)
        if joined < joiners:
            raise Failure(f"room: only {joined} of {joiners} buyers joined (see wrk-room-join.txt)")
        wait = (starts - datetime.datetime.now(datetime.timezone.utc)).total_seconds() + 0.5
        if wait > 0:
            time.sleep(wait)
        self.progress.step("8b waiting room: poll storm from far back")
        state = self.room_state(item)
        poll = self.room_wrk("room-poll", self.s.duration, ["poll", item, ROOM_SEED, POLLED_A_THREAD])
        p = figures.parse_wrk(poll)
        self.out["room"] = {
            "joined": joined, "joins_per_s": j["rps"], "join_p99_ms": j["p99"],
            "join_errors": j["errors"], "join_refused": non_2xx(report),
            "joins_ratio_to_purchase": figures.ratio(j["rps"], purchase_rps),
            "join_cpu_us": join_cpu,
            "polls_per_s": p["rps"], "poll_p99_ms": p["p99"], "poll_errors": p["errors"],
            "poll_refused": non_2xx(poll),
            "poll_state": state,
            "polls_ratio_to_ceiling": figures.ratio(p["rps"], self.med["ceiling"]["rps"])}
        r = self.out["room"]
        self.log(f"room: {joined} joined at {r['joins_per_s']} joins/s ({r['joins_ratio_to_purchase']:.2f} of the "
                 f"purchases/s; CPU us a join: server {join_cpu['server']}, Redis {join_cpu['redis']}, PostgreSQL "
                 f"{join_cpu['pg']}), {r['join_refused']} refused, {r['join_errors']} socket errors; polls from far "
                 f"back ({state}): {r['polls_per_s']}/s ({r['polls_ratio_to_ceiling']:.2f} of the ceiling), "
                 f"{r['poll_refused']} refused, {r['poll_errors']} socket errors")
