"""The settings of `make bench` (loadtest/seckill_lab/bench.py) read from the environment, without a
server: BENCH_WEBHOOK_NICE names two levels, the deliverer's and the receivers', each "idle" or a
nice level, and BENCH_WEBHOOK_RECEIVER the receivers, sink (the default) or sample; anything else
stops the run with a Failure that says so."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from seckill_lab.bench import Settings  # noqa: E402
from seckill_lab.system import Failure  # noqa: E402


class WebhookNice(unittest.TestCase):
    def test_two_levels_each_idle_or_a_number(self):
        self.assertEqual(Settings({}).nice, ["idle", "idle"])
        self.assertEqual(Settings({"BENCH_WEBHOOK_NICE": "10 19"}).nice, [10, 19])
        self.assertEqual(Settings({"BENCH_WEBHOOK_NICE": "-5 idle"}).nice, [-5, "idle"])

    def test_anything_else_is_refused(self):
        for value in ("idle", "10", "idle idle idle", "idle low", "1.5 0", ""):
            with self.assertRaises(Failure, msg=value) as caught:
                Settings({"BENCH_WEBHOOK_NICE": value})
            self.assertIn("BENCH_WEBHOOK_NICE", str(caught.exception))


class WebhookReceiver(unittest.TestCase):
    def test_the_sink_by_default_or_the_sample(self):
        self.assertEqual(Settings({}).receiver, "sink")
        self.assertEqual(Settings({"BENCH_WEBHOOK_RECEIVER": "sample"}).receiver, "sample")

    def test_anything_else_is_refused(self):
        for value in ("python", "", "build/seckill-webhook-sink"):
            with self.assertRaises(Failure, msg=value) as caught:
                Settings({"BENCH_WEBHOOK_RECEIVER": value})
            self.assertIn("BENCH_WEBHOOK_RECEIVER", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
