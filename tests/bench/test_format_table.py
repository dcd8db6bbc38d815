#!/usr/bin/env python3
"""Tests of format_table.py on the canned results in testdata/ (ctest bench_format_table, label cpu).

testdata/native.jsonl and testdata/agileos.jsonl hold, on purpose: rows measured on both sides
(ratios and targets), a timed-out row, a row missing on one side and one missing on the other,
a failed row against a row that was not run, and a row whose sample counts differ.
"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import format_table  # noqa: E402

NATIVE = os.path.join(HERE, "testdata", "native.jsonl")
AGILEOS = os.path.join(HERE, "testdata", "agileos.jsonl")


def table_rows(markdown):
    """{workload: {column header: cell}} of the one table in the document."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


class FormatTableTest(unittest.TestCase):
    def setUp(self):
        self.markdown = format_table.make_table(
            format_table.load_results(NATIVE), format_table.load_results(AGILEOS),
            hardware="GPU: NVIDIA H200 (143771 MiB), driver 580", command="tests/bench/run_bench.sh")
        self.rows = table_rows(self.markdown)

    def test_latency_ratios_are_candidate_over_baseline(self):
        row = self.rows["memcpy_d2h_4b"]
        self.assertEqual(row["native p50"], "8.00")
        self.assertEqual(row["AgileOS p50"], "80.00")
        self.assertEqual(row["ratio p50"], "10.00x")
        self.assertEqual(row["ratio p99"], "15.00x")
        self.assertEqual(row["ratio throughput"], "0.10x")
        self.assertEqual(row["native throughput"], "125000 calls/s")
        self.assertEqual(row["issue 3 target"], "p50 <= 1.3x, p99 <= 2x: **not met**")

    def test_throughput_target_met_and_not_met(self):
        pinned = self.rows["memcpy_h2d_pinned_256m"]
        self.assertEqual(pinned["ratio throughput"], "0.96x")  # 51.6222 / 53.6871
        self.assertEqual(pinned["issue 3 target"], "throughput >= 0.95x: met")
        launch = self.rows["launch_empty_10k"]
        self.assertEqual(launch["ratio throughput"], "0.10x")
        self.assertEqual(launch["ratio p50"], "14.00x")
        self.assertEqual(launch["issue 3 target"], "throughput >= 0.9x: **not met**")

    def test_timed_out_workload_is_a_row_without_ratios(self):
        row = self.rows["app_sgemm"]
        self.assertEqual(row["native p50"], "0.5000")
        self.assertEqual(row["AgileOS p50"], "timed out (120 s)")
        self.assertEqual(row["ratio p50"], "—")
        self.assertEqual(row["ratio throughput"], "—")
        self.assertEqual(row["issue 3 target"], "p50 <= 1.05x: not measured")
        self.assertIn("- app_sgemm (AgileOS): timed out (120 s)", self.markdown)

    def test_missing_workloads_are_reported_on_either_side(self):
        self.assertEqual(self.rows["app_stencil"]["AgileOS p50"], "missing")
        self.assertEqual(self.rows["app_stencil"]["ratio p50"], "—")
        self.assertEqual(self.rows["stream_query_idle"]["native p50"], "missing")
        self.assertEqual(self.rows["stream_query_idle"]["AgileOS p50"], "9.00")
        # baseline order first, then the candidate-only workload
        self.assertEqual(list(self.rows)[-1], "stream_query_idle")

    def test_failed_and_not_run_carry_their_reasons(self):
        row = self.rows["app_triad"]
        self.assertEqual(row["native p50"], "failed (exit 2)")
        self.assertEqual(row["AgileOS p50"], "not run")
        self.assertIn("triad: 3 of 268435456 elements are wrong", self.markdown)
        self.assertIn("app_triad (AgileOS): not run: time budget of 360 s spent", self.markdown)

    def test_no_target_and_differing_sample_counts(self):
        row = self.rows["malloc_free_4k"]
        self.assertEqual(row["issue 3 target"], "—")
        self.assertEqual(row["ratio p50"], "37.50x")
        self.assertIn("malloc_free_4k: sample counts differ (1000 vs 300)", self.markdown)

    def test_summary_counts_only_measured_targets_as_met(self):
        self.assertIn("issue 3 targets met: 1 of the 7 rows that have one (4 not measured)", self.markdown)
        self.assertIn("Hardware: GPU: NVIDIA H200 (143771 MiB), driver 580", self.markdown)

    def test_units_that_differ_give_no_ratio(self):
        record = {"workload": "w", "unit": "us", "p50": 1, "p99": 2, "throughput": 3, "throughput_unit": "x"}
        base, cand = {"w": record}, {"w": dict(record, unit="ms")}
        rows = table_rows(format_table.make_table(base, cand))
        self.assertEqual(rows["w"]["ratio p50"], "—")

    def test_value_formatting(self):
        self.assertEqual(format_table.format_value(55123.4), "55123")
        self.assertEqual(format_table.format_value(123.45), "123.5")
        self.assertEqual(format_table.format_value(7.512), "7.51")
        self.assertEqual(format_table.format_value(0.012345), "0.01235")
        self.assertEqual(format_table.format_value(None), "—")


class CommandLineTest(unittest.TestCase):
    def run_tool(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "format_table.py"), *args],
                              capture_output=True, text=True, check=False)

    def write(self, text):
        handle = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        with handle:
            handle.write(text)
        self.addCleanup(os.unlink, handle.name)
        return handle.name

    def test_prints_the_table(self):
        result = self.run_tool("--candidate-name", "AgileOS (gRPC)", NATIVE, AGILEOS)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("| workload | unit | native p50 | native p99 | AgileOS (gRPC) p50 |", result.stdout)

    def test_rejects_a_line_that_is_not_json(self):
        bad = self.write('{"workload": "a", "p50": 1}\nagileos_bench: oops\n')
        result = self.run_tool(NATIVE, bad)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"{bad}:2: not JSON", result.stderr)

    def test_rejects_a_workload_twice_and_a_line_without_a_name(self):
        twice = self.write('{"workload": "a"}\n{"workload": "a"}\n')
        self.assertIn("appears twice", self.run_tool(NATIVE, twice).stderr)
        nameless = self.write('{"p50": 1}\n')
        result = self.run_tool(nameless, NATIVE)
        self.assertEqual(result.returncode, 2)
        self.assertIn("not an object with a \"workload\" name", result.stderr)

    def test_empty_inputs_give_an_empty_table(self):
        empty = self.write("")
        result = self.run_tool(empty, empty)
        self.assertEqual(result.returncode, 0)
        self.assertIn("issue 3 targets met: 0 of the 0 rows that have one", result.stdout)


if __name__ == "__main__":
    unittest.main()
