"""bench_pow: row 9 of `make bench`, proof-of-work on joining a room (issue 28); a part of bench.Bench
(BENCH_ONLY=pow runs it alone, on the run's server).
  9  pow   BENCH_POW_JOINS (10,000) distinct buyers join a room item with pow_maxnumber, each
           carrying a solution solved before the timed part (Python's hashlib, as a page's solver);
           then as many joins of the same room without proof-of-work, and as many purchases, all
           sent the same way (BENCH_POW_CLIENTS keep-alive connections, Python's http.client). The
           server's CPU a request of each (/proc/<pid>/stat before and after), and the CPU of a
           verified solution: a pow join's less a plain join's (one HMAC, one SHA-256 and the
           used-challenge SET NX). On a loaded machine CPU a request is the figure, not req/s.
One run, after the waiting room's rows."""

import base64
import datetime
import hashlib
import http.client
import json
import os
import threading
import time
import urllib.parse

from . import figures
from .system import TICK_US, Failure, get_json, ticks

POW_MAXNUMBER = 1000  # the server's cost does not depend on it; the precomputation's does
FIRST_BUYER = 7_000_000_001


def pow_settings(env=os.environ):
    return int(env.get("BENCH_POW_JOINS", 10000)), int(env.get("BENCH_POW_CLIENTS", 8))


def solve(challenge):
    """ALTCHA's payload for a challenge (the route's JSON), by brute force as its widget does."""
    for n in range(challenge["maxnumber"] + 1):
        if hashlib.sha256(f"{challenge['salt']}{n}".encode()).hexdigest() == challenge["challenge"]:
            doc = {k: challenge[k] for k in ("algorithm", "challenge", "salt", "signature")}
            return base64.b64encode(json.dumps({**doc, "number": n}).encode()).decode()
    raise Failure(f"pow: no number up to {challenge['maxnumber']} solves {challenge}")


def send_all(url, method, requests, clients):
    """Sends (path, body) requests over CLIENTS keep-alive connections at once; returns the number
    of answers of each status."""
    host = urllib.parse.urlsplit(url)
    counts, lock = {}, threading.Lock()

    def client(share):
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
        mine = {}
        for path, body in share:
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            mine[r.status] = mine.get(r.status, 0) + 1
        conn.close()
        with lock:
            for k, v in mine.items():
                counts[k] = counts.get(k, 0) + v

    threads = [threading.Thread(target=client, args=(requests[i::clients],)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def pow_rows(b):
    """The Markdown row 9 of b's run (a bench.Bench), or [] when it measured no proof-of-work."""
    p = b.out.get("pow")
    if not p:
        return []
    c = p["cpu_us_a_request"]
    return [
        f"| 9 | proof-of-work: {figures.thousands(p['joins'])} room joins each with a solved challenge "
        f"(pow_maxnumber {POW_MAXNUMBER}), against plain joins and purchases, same run | server CPU a request: "
        f"pow join {c['pow_join']} us, plain join {c['join']} us, purchase {c['purchase']} us: **{p['verify_us']} us** "
        f"a verified solution (**{p['verify_ratio_to_purchase']:.2f}** of a purchase); {p['refused']} refused | "
        f"every solution joins | {'yes' if p['refused'] == 0 and p['joined'] == p['joins'] else '**no**'} |",
    ]


class Pow:
    def pow_items(self):
        starts = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        room = dict(admission="room", admit_per_s=1, starts_at=starts.strftime("%Y-%m-%dT%H:%M:%SZ"))
        return (self.item_create("bench-pow", 1000, pow_maxnumber=POW_MAXNUMBER, pow_ttl_s=3600, **room),
                self.item_create("bench-pow-plain", 1000, **room),
                self.item_create("bench-pow-purchase", 10000000))

    def pow_measured(self, name, method, requests, clients):
        """Sends requests; the server's CPU microseconds a request, and the statuses."""
        pid = self.procs["server"].pid
        before = ticks(pid)
        t0 = time.monotonic()
        counts = send_all(self.url, method, requests, clients)
        seconds = time.monotonic() - t0
        cpu = figures.per_unit(ticks(pid) - before, TICK_US, len(requests))
        self.log(f"pow: {len(requests)} {name} in {seconds:.1f} s, server CPU {cpu} us a request, answers {counts}")
        return cpu, counts

    def pow_all(self):
        joins, clients = pow_settings()
        item, plain, sale = self.pow_items()
        self.progress.step(f"9 proof-of-work: {figures.thousands(joins)} challenges solved beforehand")
        buyers = range(FIRST_BUYER, FIRST_BUYER + joins)
        conn = http.client.HTTPConnection("127.0.0.1", self.server_port, timeout=30)
        bodies = []
        for user in buyers:
            conn.request("GET", f"/api/v1/items/{item}/challenge?user_id={user}")
            r = conn.getresponse()
            challenge = json.loads(r.read())
            if r.status != 200:
                raise Failure(f"pow: the challenge route answered {r.status} {challenge}")
            bodies.append(json.dumps({"user_id": str(user), "altcha": solve(challenge)}))
        conn.close()
        self.progress.step("9 proof-of-work: the joins, the plain joins and the purchases")
        cpu = {}
        cpu["pow_join"], counts = self.pow_measured(
            "pow joins", "POST", [(f"/api/v1/items/{item}/queue", body) for body in bodies], clients)
        plain_bodies = [json.dumps({"user_id": str(u)}) for u in buyers]
        cpu["join"], _ = self.pow_measured(
            "plain joins", "POST", [(f"/api/v1/items/{plain}/queue", body) for body in plain_bodies], clients)
        cpu["purchase"], _ = self.pow_measured(
            "purchases", "POST", [(f"/api/v1/items/{sale}/purchase", body) for body in plain_bodies], clients)
        joined = get_json(f"{self.url}/api/v1/items/{item}")["room"]["joined"]
        verify = round(cpu["pow_join"] - cpu["join"], 1)
        self.out["pow"] = {"joins": joins, "clients": clients, "joined": joined,
                           "refused": joins - counts.get(200, 0), "cpu_us_a_request": cpu, "verify_us": verify,
                           "verify_ratio_to_purchase": figures.ratio(verify, cpu["purchase"] or 1)}
        for row in pow_rows(self):
            self.log(row)
