"""The waiting room's rows of `make bench` (loadtest/seckill_lab/bench_room.py), without a server:
wrk's count of refused answers, and the rows' verdicts against their targets."""

import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from seckill_lab import bench_room  # noqa: E402

ROOM = {"joined": 100000, "joins_per_s": 30000.0, "join_p99_ms": 12.5, "join_errors": 4, "join_refused": 0,
        "joins_ratio_to_purchase": 1.2, "polls_per_s": 50000.0, "poll_p99_ms": 3.0, "poll_errors": 2, "poll_refused": 0,
        "poll_state": "waiting", "polls_ratio_to_ceiling": 0.95}


def run_with(**room):
    return types.SimpleNamespace(out={"room": {**ROOM, **room}})


class Refused(unittest.TestCase):
    def test_wrks_non_2xx_line_is_counted(self):
        self.assertEqual(bench_room.non_2xx("  100 requests in 1.00s\n  Non-2xx or 3xx responses: 17\n"), 17)

    def test_no_such_line_is_no_refusal(self):
        self.assertEqual(bench_room.non_2xx("  100 requests in 1.00s\n"), 0)


class Rows(unittest.TestCase):
    def test_targets_met_say_yes_with_the_ratios_in_bold(self):
        join, poll = bench_room.room_rows(run_with())
        self.assertIn("100,000 distinct buyers", join)
        self.assertIn("**1.20** of the purchases/s", join)
        self.assertTrue(join.endswith("| >= 1.0, none refused | yes |"), join)
        self.assertIn("(waiting)", poll)
        self.assertTrue(poll.endswith("| >= 0.9, none refused | yes |"), poll)

    def test_socket_errors_are_shown_but_a_loaded_machines_timeouts_fail_nothing(self):
        join, poll = bench_room.room_rows(run_with())
        self.assertIn("0 refused, 4 socket errors", join)
        self.assertIn("0 refused, 2 socket errors", poll)

    def test_a_missed_target_or_a_refused_answer_says_no(self):
        join, poll = bench_room.room_rows(run_with(joins_ratio_to_purchase=0.8, poll_refused=3))
        self.assertTrue(join.endswith("| **no** |"), join)
        self.assertTrue(poll.endswith("| **no** |"), poll)

    def test_a_run_without_the_room_has_no_rows(self):
        self.assertEqual(bench_room.room_rows(types.SimpleNamespace(out={})), [])


if __name__ == "__main__":
    unittest.main()
