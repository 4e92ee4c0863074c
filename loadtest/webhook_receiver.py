#!/usr/bin/env python3
"""webhook_receiver.py: a sample receiver of seckill's webhooks (docs/WEBHOOKS.md), used by the tests.

It verifies each delivery's Seckill-Signature over the raw body (HMAC-SHA256 of "<t>.<body>" with
the endpoint's secret, and t within --tolerance seconds of its clock), answers 400 to a forged or
stale one, counts the deliveries of each event id (at least once means a repeat may come: a
handler skips an id it handled) and appends one JSON line per request it verified to --record:
  {"event_id": 12, "type": "order.paid", "order_id": "...", "item_id": 3, "user_id": 7,
   "answered": 200, "at_ms": ..., "body_sha256": "...", "attempt": 1}
(attempt: how many times this event id came, this one included; order_id null for an entry's
event, entry.waitlisted, whose body has "entry" in place of "order").

What it answers is switched at run time, for the tests of retries: GET /control?mode=ok|fail|hang
(fail: 500 to every verified delivery; hang: no answer for --hang-s seconds, past the sender's
timeout), and GET /control?fail_user=<user id> (500 to the events of that buyer's orders and
entries alone; fail_user= ends it). Standard library only.

  WEBHOOK_SECRET=... loadtest/webhook_receiver.py --port 9000 --record events.jsonl
(the secret from the environment: a command line is readable by every local user; --secret too).
`make bench` receives with loadtest/webhook_sink.c instead: the same check in C, at a fraction of
the CPU, on a machine whose cores the purchases measured share.
"""
import argparse
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def verify(secret: bytes, header: str, body: bytes, tolerance_s: int, now: float) -> bool:
    """Whether header (the Seckill-Signature value) signs body with secret, at a t within
    tolerance_s of now. Compared in constant time; every v1 of the header is tried (a sender
    rotating its secret may send two)."""
    try:
        parts = [p.split("=", 1) for p in header.split(",")]
        t = [v for k, v in parts if k.strip() == "t"]
        signatures = [v.strip() for k, v in parts if k.strip() == "v1"]
        stamp = int(t[0])
    except (ValueError, IndexError):
        return False
    if abs(now - stamp) > tolerance_s:
        return False
    expected = hmac.new(secret, str(stamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    # As bytes: compare_digest refuses a str that is not ASCII (a forged header may hold one).
    return any(hmac.compare_digest(expected.encode(), s.encode()) for s in signatures)


class Receiver:
    def __init__(self, args):
        self.secret = args.secret.encode()
        self.tolerance = args.tolerance
        self.hang_s = args.hang_s
        self.mode = args.mode
        self.fail_user = None
        self.record = open(args.record, "a", buffering=1) if args.record else None
        self.seen = {}  # event id -> times it came
        self.lock = threading.Lock()

    def note(self, event, answered, body):
        with self.lock:
            attempt = self.seen.get(event["id"], 0) + 1
            self.seen[event["id"]] = attempt
            if self.record:
                subject = subject_of(event)
                line = {"event_id": event["id"], "type": event["type"],
                        "order_id": subject.get("order_id"), "item_id": subject.get("item_id"),
                        "user_id": subject.get("user_id"), "answered": answered,
                        "at_ms": int(time.time() * 1000), "attempt": attempt,
                        "body_sha256": hashlib.sha256(body).hexdigest()}
                self.record.write(json.dumps(line) + "\n")


def subject_of(event):
    """What the event is of: its order, or a draw's entry (entry.waitlisted: no order yet)."""
    return event.get("order") or event.get("entry") or {}


def handler_for(rx: Receiver):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body in one segment, sent at once: written apart, Nagle held the body
        # for the sender's delayed ACK, 40 ms an answer on a kept-alive connection.
        disable_nagle_algorithm = True
        wbufsize = 65536

        def log_message(self, *args):
            pass

        def answer(self, status, text):
            data = (json.dumps({"status": text}) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urlparse(self.path)
            query = parse_qs(url.query, keep_blank_values=True)
            mode = query.get("mode", [""])[0]
            if url.path == "/control" and mode in ("ok", "fail", "hang"):
                rx.mode = mode
                return self.answer(200, mode)
            if url.path == "/control" and "fail_user" in query:
                rx.fail_user = query["fail_user"][0] or None
                return self.answer(200, "fail_user")
            if url.path == "/health":
                return self.answer(200, "ok")
            self.answer(404, "no such path")

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            header = self.headers.get("Seckill-Signature", "")
            if not verify(rx.secret, header, body, rx.tolerance, time.time()):
                return self.answer(400, "bad signature")
            try:
                event = json.loads(body)
                if str(event["id"]) != self.headers.get("Seckill-Event-Id"):
                    return self.answer(400, "the event id header is not the body's")
            except (ValueError, KeyError, TypeError):
                return self.answer(400, "not an event")
            mode = rx.mode
            if mode == "hang":
                rx.note(event, 0, body)  # noted as it arrived: records stay in arrival order
                time.sleep(rx.hang_s)
                return self.answer(503, "late")
            failing = rx.fail_user is not None and str(subject_of(event).get("user_id")) == rx.fail_user
            status = 500 if mode == "fail" or failing else 200
            rx.note(event, status, body)
            self.answer(status, "failed" if status == 500 else "received")

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--secret", default=os.environ.get("WEBHOOK_SECRET"),
                   help="the endpoint's secret (webhook_endpoints; default: $WEBHOOK_SECRET)")
    p.add_argument("--record", help="append a JSON line per verified delivery here")
    p.add_argument("--tolerance", type=int, default=300, help="seconds t may be off (replays)")
    p.add_argument("--mode", default="ok", choices=["ok", "fail", "hang"])
    p.add_argument("--hang-s", type=float, default=30.0)
    args = p.parse_args()
    if not args.secret:
        p.error("the endpoint's secret: --secret or WEBHOOK_SECRET")
    # The default backlog (5) drops the connections of a sender that opens many at once.
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer((args.host, args.port), handler_for(Receiver(args)))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
