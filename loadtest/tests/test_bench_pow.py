"""The proof-of-work row of `make bench` (loadtest/seckill_lab/bench_pow.py), without a server: the
precomputation's solver finds the number of a challenge made as the server makes it, and the row's
verdict."""

import base64
import hashlib
import hmac
import json
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from seckill_lab import bench_pow  # noqa: E402
from seckill_lab.system import Failure  # noqa: E402

POW = {"joins": 10000, "clients": 8, "joined": 10000, "refused": 0, "verify_us": 45.0,
       "verify_ratio_to_purchase": 0.45, "cpu_us_a_request": {"pow_join": 146.0, "join": 101.0, "purchase": 99.0}}


def challenge(number, maxnumber=1000):
    salt = "00112233445566778899aabb?expires=1700000000&item=7&user=42"
    ch = hashlib.sha256(f"{salt}{number}".encode()).hexdigest()
    sig = hmac.new(bytes(range(32)), ch.encode(), hashlib.sha256).hexdigest()
    return {"algorithm": "SHA-256", "challenge": ch, "maxnumber": maxnumber, "salt": salt, "signature": sig}


class Solve(unittest.TestCase):
    def test_the_payload_carries_the_number_and_the_challenge_as_given(self):
        c = challenge(617)
        doc = json.loads(base64.b64decode(bench_pow.solve(c)))
        self.assertEqual(doc["number"], 617)
        for k in ("algorithm", "challenge", "salt", "signature"):
            self.assertEqual(doc[k], c[k])

    def test_a_number_past_maxnumber_is_not_found(self):
        with self.assertRaises(Failure):
            bench_pow.solve(challenge(1001))


class Rows(unittest.TestCase):
    def test_the_row_puts_a_verified_solution_next_to_a_purchase(self):
        (row,) = bench_pow.pow_rows(types.SimpleNamespace(out={"pow": POW}))
        self.assertIn("pow join 146.0 us, plain join 101.0 us, purchase 99.0 us", row)
        self.assertIn("**45.0 us** a verified solution (**0.45** of a purchase)", row)
        self.assertTrue(row.endswith("| every solution joins | yes |"), row)

    def test_a_refused_solution_says_no(self):
        (row,) = bench_pow.pow_rows(types.SimpleNamespace(out={"pow": {**POW, "refused": 1, "joined": 9999}}))
        self.assertTrue(row.endswith("| **no** |"), row)

    def test_no_measurement_no_row(self):
        self.assertEqual(bench_pow.pow_rows(types.SimpleNamespace(out={})), [])


if __name__ == "__main__":
    unittest.main()
