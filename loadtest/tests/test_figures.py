"""The arithmetic of seckill-lab (loadtest/seckill_lab/figures.py, progress.py), without a server:
ctest lab_figures (label unit) runs it, as `python3 -m unittest discover -s loadtest/tests`."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from seckill_lab import experiments, figures, progress, scenarios  # noqa: E402

WRK = """Running 10s test @ http://127.0.0.1:20001
  2 threads and 256 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     7.60ms    2.01ms  40.00ms   80.00%
  Latency Distribution
     50%  512.00us
     75%    8.10ms
     90%    9.90ms
     99%    1.02s
  251234 requests in 10.00s, 30.00MB read
  Socket errors: connect 3, read 12, write 1, timeout 5
Requests/sec:  25119.87
Transfer/sec:      3.00MB
"""

AB = """Concurrency Level:      10000
Time taken for tests:   2.345 seconds
Complete requests:      20000
Failed requests:        19007
   (Connect: 2, Receive: 1, Length: 19000, Exceptions: 4)
Non-2xx responses:      19000
Requests per second:    8528.78 [#/sec] (mean)
Percentage of the requests served within a certain time (ms)
  50%     12
  99%    950
"""


class Medians(unittest.TestCase):
    def test_an_odd_count_gives_the_middle_value(self):
        self.assertEqual(figures.median([3, 1, 2]), 2)

    def test_an_even_count_gives_the_lower_middle_as_the_shell_did(self):
        self.assertEqual(figures.median([4, 1, 3, 2]), 2)

    def test_values_are_compared_as_numbers_not_text(self):
        self.assertEqual(figures.median([9.5, 10.25, 100.0]), 10.25)

    def test_no_values_give_none_and_missing_ones_are_left_out(self):
        self.assertIsNone(figures.median([]))
        self.assertEqual(figures.median([None, 5, None]), 5)


class Ratios(unittest.TestCase):
    def test_a_ratio_has_two_decimals(self):
        self.assertEqual(figures.ratio(2, 3), 0.67)

    def test_a_ratio_to_nothing_is_zero(self):
        self.assertEqual(figures.ratio(5, 0), 0)
        self.assertEqual(figures.ratio(None, 3), 0)

    def test_thousands_are_separated_and_rounded(self):
        self.assertEqual(figures.thousands(1000000), "1,000,000")
        self.assertEqual(figures.thousands(25119.87), "25,120")
        self.assertEqual(figures.thousands(None), "?")


class CpuTicks(unittest.TestCase):
    STAT = "1234 (seckill server) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 70 9 4 20 0 3 0 100"

    def test_utime_and_stime_of_a_stat_line_even_with_a_space_in_the_name(self):
        self.assertEqual(figures.stat_ticks(self.STAT), 320)
        self.assertEqual(figures.stat_child_ticks(self.STAT), 13)

    def test_ticks_spent_between_two_readings(self):
        self.assertEqual(figures.cpu_delta({"server": 100, "redis": 40}, {"server": 350, "redis": 41}),
                         {"server": 250, "redis": 1})

    def test_microseconds_a_request_from_ticks(self):
        # 250 ticks of 10 ms over 100,000 requests: 25 us a request.
        self.assertEqual(figures.per_unit(250, 10000, 100000), 25.0)
        self.assertEqual(figures.per_unit(1, 10000, 3, places=2), 3333.33)
        self.assertEqual(figures.per_unit(5, 10000, 0), 0)


class Wrk(unittest.TestCase):
    def test_its_report_read_into_numbers(self):
        w = figures.parse_wrk(WRK)
        self.assertEqual(w["rps"], 25119.87)
        self.assertEqual(w["p50"], 0.51)
        self.assertEqual(w["p99"], 1020.0)
        self.assertEqual(w["errors"], 21)
        self.assertEqual(w["requests"], 251234)

    def test_latencies_in_every_unit(self):
        self.assertEqual(figures.to_ms("7.60ms"), 7.6)
        self.assertEqual(figures.to_ms("512.00us"), 0.51)
        self.assertEqual(figures.to_ms("1.50m"), 90000.0)
        self.assertIsNone(figures.to_ms("n/a"))

    def test_a_report_without_errors_has_none(self):
        self.assertEqual(figures.parse_wrk("Requests/sec: 10.5\n")["errors"], 0)

    def test_durations_in_seconds(self):
        self.assertEqual(figures.seconds_of("10s"), 10)
        self.assertEqual(figures.seconds_of("2m"), 120)
        self.assertEqual(figures.seconds_of("0.2s"), 1)


class Ab(unittest.TestCase):
    def test_only_connect_receive_and_exceptions_are_failures(self):
        a = figures.parse_ab(AB)
        self.assertEqual(a, {"seconds": 2.345, "complete": 20000, "failed": 7, "non2xx": 19000})

    def test_a_report_without_the_breakdown_counts_its_failed_line(self):
        self.assertEqual(figures.parse_ab("Failed requests:        0\n")["failed"], 0)

    def test_a_field_by_prefix_and_column(self):
        self.assertEqual(figures.ab_field(AB, "Requests per second:", 4), 8528.78)
        self.assertEqual(figures.ab_field(AB, "  99%", 2), 950)
        self.assertEqual(figures.ab_field(AB, "Non-2xx responses:", 3), 19000)
        self.assertEqual(figures.ab_field("", "Non-2xx responses:", 3), 0)


class Steps(unittest.TestCase):
    def test_a_load_run_lasts_its_requests_at_the_last_rate(self):
        self.assertEqual(figures.nominal_seconds(20000, 4000), 5)
        self.assertEqual(figures.nominal_seconds(20000, 0), 10)
        self.assertEqual(figures.nominal_seconds(20, 4000), 1)

    def test_a_drain_step_scales_with_the_orders(self):
        self.assertEqual(figures.per_million(20, 1000000), 20)
        self.assertEqual(figures.per_million(27, 50000), 1)

    def test_the_progress_line_says_durations_and_what_is_left(self):
        self.assertEqual(progress.duration(42), "42s")
        self.assertEqual(progress.duration(192), "3m12s")
        self.assertEqual(progress.duration(3900), "1h05m")
        self.assertEqual(progress.left(130), "about 2m left")
        self.assertEqual(progress.left(44), "about 40s left")
        self.assertEqual(progress.left(3), "a few seconds left")
        # Half the nominal seconds done in twice their time: the rest takes twice as long too.
        self.assertEqual(progress.estimate(60, 30, 30), "about 1m00s left")


class Elections(unittest.TestCase):
    def test_two_elections_in_one_period_overlap(self):
        self.assertEqual(figures.overlaps([(0, 10), (600, 610), (1200, 1210)], 500), 0)
        self.assertEqual(figures.overlaps([(0, 10), (300, 310)], 500), 1)


class ReserveCalls(unittest.TestCase):
    STATS = ("# Commandstats\r\ncmdstat_evalsha:calls=120,usec=900,usec_per_call=7.50\r\n"
             "cmdstat_eval:calls=3,usec=30,usec_per_call=10.00\r\ncmdstat_get:calls=99,usec=9\r\n")

    def test_the_reserve_scripts_calls_are_evalsha_and_eval(self):
        self.assertEqual(figures.reserve_calls(self.STATS), 123)

    def test_each_masters_share_in_percent(self):
        self.assertEqual(figures.shares([1, 1, 2]), "25% / 25% / 50%")
        self.assertEqual(figures.shares([0, 0, 0]), "0% / 0% / 0%")


class Markers(unittest.TestCase):
    def test_the_section_replaces_what_lies_between_the_markers(self):
        doc = "# P\nabove\n<!-- bench:begin x -->\nold\n<!-- bench:end -->\nbelow\n"
        self.assertEqual(figures.between_markers(doc, "<!-- bench:begin -->\nnew\n<!-- bench:end -->"),
                         "# P\nabove\n<!-- bench:begin -->\nnew\n<!-- bench:end -->\nbelow\n")

    def test_a_document_without_markers_gets_the_section_at_its_end(self):
        self.assertEqual(figures.between_markers("# P\n", "S"), "# P\n\nS\n")


class ScenarioTable(unittest.TestCase):
    def test_every_scenario_of_the_table_has_a_runner_and_every_runner_a_row(self):
        self.assertEqual(set(experiments.load_table()), set(scenarios.RUN))

    def test_every_row_names_its_settings_steps_and_expectations(self):
        for name, row in experiments.load_table().items():
            self.assertTrue(row["expect"], name)
            self.assertIsInstance(row["settings"], dict, name)
            self.assertIn("steps", row, name)


if __name__ == "__main__":
    unittest.main()
