#!/usr/bin/env python3
"""Tests of format_cufft_table.py on canned results (ctest bench_format_cufft_table, label cpu).

RESULTS is a cufft.jsonl as run_cufft_bench.sh writes it, holding on purpose: exec rows measured on
both sides (one meeting the target, one not), plan_create (no target, plans/s ratio), a timed-out
AgileOS side, a failed native side against a row that was not run, and a row missing on one side.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import format_cufft_table  # noqa: E402


def exec_record(side, workload, p50, p99, points, plan_ms, pipelined, samples=200):
    return {
        "side": side, "status": "ok", "process_s": 3.5, "workload": workload, "unit": "us",
        "samples": samples, "p50": p50, "p99": p99, "mean": p50, "min": p50, "max": p99,
        "throughput": points / (p50 * 1e-6) / 1e9, "throughput_unit": "GPoints/s",
        "p50_us": p50, "p99_us": p99, "points": points, "batch": 1, "plan_create_ms": plan_ms,
        "gpoints_per_s": points / (p50 * 1e-6) / 1e9, "pipelined_gpoints_per_s": pipelined,
    }


RECORDS = [
    # c2c_4m: 4M points, 100 us native, 104 us AgileOS (0.96x); pipelined 50 vs 49 GPoints/s: 0.98x, target met.
    exec_record("native", "c2c_4m", 100.0, 120.0, 1 << 22, 250.0, 50.0),
    exec_record("agileos", "c2c_4m", 104.0, 130.0, 1 << 22, 300.0, 49.0),
    # c2c_1m: 20 us vs 40 us (0.50x); pipelined 80 vs 60: 0.75x, target not met.
    exec_record("native", "c2c_1m", 20.0, 25.0, 1 << 20, 200.0, 80.0),
    exec_record("agileos", "c2c_1m", 40.0, 60.0, 1 << 20, 260.0, 60.0),
    # c2c_16m: AgileOS timed out.
    exec_record("native", "c2c_16m", 400.0, 420.0, 1 << 24, 300.0, 45.0),
    {"side": "agileos", "workload": "c2c_16m", "status": "timeout", "timeout_s": 120, "process_s": 120.1},
    # z2z_1m: native failed, AgileOS not run.
    {"side": "native", "workload": "z2z_1m", "status": "failed", "exit": 2,
     "reason": "z2z_1m: first exec: output element 1 = (nan, nan)", "process_s": 1.0},
    {"side": "agileos", "workload": "z2z_1m", "status": "not_run", "reason": "time budget of 360 s spent"},
    # plan_create: 500 us vs 1000 us per pair.
    {"side": "native", "status": "ok", "workload": "plan_create", "unit": "us", "samples": 50, "p50": 500,
     "p99": 700, "throughput": 2000, "throughput_unit": "plans/s", "p50_us": 500, "p99_us": 700,
     "points": 1 << 22, "plan_create_ms": 0.45},
    {"side": "agileos", "status": "ok", "workload": "plan_create", "unit": "us", "samples": 50, "p50": 1000,
     "p99": 1500, "throughput": 1000, "throughput_unit": "plans/s", "p50_us": 1000, "p99_us": 1500,
     "points": 1 << 22, "plan_create_ms": 0.9},
    # c2c_batched_1m: only on the AgileOS side, with fewer samples.
    exec_record("agileos", "c2c_batched_1m", 30.0, 35.0, 1 << 20, 100.0, 40.0, samples=50),
]
RESULTS = "".join(json.dumps(record) + "\n" for record in RECORDS)


def table_rows(markdown):
    """{workload: {column header: cell}} of the one table in the document."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


class TempFiles(unittest.TestCase):
    def write(self, text):
        handle = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        with handle:
            handle.write(text)
        self.addCleanup(os.unlink, handle.name)
        return handle.name


class FormatCufftTableTest(TempFiles):
    def setUp(self):
        native, agileos = format_cufft_table.load_combined(self.write(RESULTS))
        self.markdown = format_cufft_table.make_table(native, agileos, hardware="GPU: NVIDIA H200",
                                                      command="tests/bench/run_cufft_bench.sh")
        self.rows = table_rows(self.markdown)

    def test_throughput_ratio_is_agileos_over_native_and_target_met(self):
        row = self.rows["c2c_4m"]
        self.assertEqual(row["points"], "4M")
        self.assertEqual(row["native p50 us"], "100.0")
        self.assertEqual(row["AgileOS p99 us"], "130.0")
        self.assertEqual(row["native GPoints/s"], "41.94")  # 4194304 / 100 us
        self.assertEqual(row["ratio"], "0.96x")  # 100 / 104
        self.assertEqual(row["ratio pipelined"], "0.98x")  # 49 / 50
        self.assertEqual(row["native plan ms"], "250.0")
        self.assertEqual(row["AgileOS plan ms"], "300.0")
        self.assertEqual(row["target"], "pipelined ratio >= 0.95x: met")

    def test_target_not_met(self):
        row = self.rows["c2c_1m"]
        self.assertEqual(row["points"], "1M")
        self.assertEqual(row["ratio"], "0.50x")
        self.assertEqual(row["ratio pipelined"], "0.75x")
        self.assertEqual(row["target"], "pipelined ratio >= 0.95x: **not met**")

    def test_plan_create_has_a_plans_per_second_ratio_and_no_target(self):
        row = self.rows["plan_create"]
        self.assertEqual(row["ratio"], "0.50x")
        self.assertEqual(row["native GPoints/s"], "—")
        self.assertEqual(row["ratio pipelined"], "—")
        self.assertEqual(row["native plan ms"], "0.4500")
        self.assertEqual(row["AgileOS plan ms"], "0.9000")
        self.assertEqual(row["target"], "—")

    def test_a_batch_of_small_transforms_has_no_target(self):
        # 1024 transforms of 1024 points: 1M points in all, but no transform of 1M points.
        records = [dict(exec_record(side, "c2c_batched_1m", 14.0, 20.0, 1 << 20, 2.0, p), batch=1024)
                   for side, p in (("native", 170.0), ("agileos", 150.0))]
        native, agileos = format_cufft_table.load_combined(
            self.write("".join(json.dumps(r) + "\n" for r in records)))
        row = table_rows(format_cufft_table.make_table(native, agileos))["c2c_batched_1m"]
        self.assertEqual(row["ratio pipelined"], "0.88x")
        self.assertEqual(row["target"], "—")

    def test_unmeasured_sides(self):
        row = self.rows["c2c_16m"]
        self.assertEqual(row["native p50 us"], "400.0")
        self.assertEqual(row["AgileOS p50 us"], "timed out (120 s)")
        self.assertEqual(row["ratio"], "—")
        self.assertEqual(row["target"], "pipelined ratio >= 0.95x: not measured")
        z2z = self.rows["z2z_1m"]
        self.assertEqual(z2z["native p50 us"], "failed (exit 2)")
        self.assertEqual(z2z["AgileOS p50 us"], "not run")
        self.assertEqual(z2z["points"], "—")
        self.assertEqual(z2z["target"], "pipelined ratio >= 0.95x: not measured")
        self.assertIn("- z2z_1m (native): failed (exit 2): z2z_1m: first exec: output element 1", self.markdown)
        self.assertIn("- z2z_1m (AgileOS): not run: time budget of 360 s spent", self.markdown)

    def test_row_missing_on_one_side_comes_last(self):
        row = self.rows["c2c_batched_1m"]
        self.assertEqual(row["native p50 us"], "missing")
        self.assertEqual(row["AgileOS p50 us"], "30.00")
        self.assertEqual(row["target"], "pipelined ratio >= 0.95x: not measured")
        self.assertEqual(list(self.rows)[-1], "c2c_batched_1m")

    def test_summary_and_header(self):
        self.assertIn("targets met: 1 of the 5 rows that have one (3 not measured)", self.markdown)
        self.assertIn("Hardware: GPU: NVIDIA H200", self.markdown)
        self.assertIn("Command: `tests/bench/run_cufft_bench.sh`", self.markdown)

    def test_sample_counts_that_differ_are_noted(self):
        native = {"w": {"workload": "w", "unit": "us", "samples": 200, "p50": 1, "p99": 2,
                        "throughput": 1, "throughput_unit": "GPoints/s", "gpoints_per_s": 1, "points": 1 << 20}}
        agileos = {"w": dict(native["w"], samples=50)}
        self.assertIn("w: sample counts differ (200 vs 50)", format_cufft_table.make_table(native, agileos))

    def test_units_that_differ_give_no_ratio(self):
        native = {"w": {"workload": "w", "unit": "us", "p50": 1, "p99": 2, "throughput": 1,
                        "throughput_unit": "GPoints/s", "gpoints_per_s": 1, "points": 1 << 20}}
        agileos = {"w": dict(native["w"], unit="ms")}
        rows = table_rows(format_cufft_table.make_table(native, agileos))
        self.assertEqual(rows["w"]["ratio"], "—")

    def test_points_formatting(self):
        self.assertEqual(format_cufft_table.format_points(2097152), "2M")
        self.assertEqual(format_cufft_table.format_points(1000), "1,000")
        self.assertEqual(format_cufft_table.format_points(None), "—")


class CommandLineTest(TempFiles):
    def run_tool(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "format_cufft_table.py"), *args],
                              capture_output=True, text=True, check=False)

    def test_prints_the_table_from_one_combined_file(self):
        result = self.run_tool("--candidate-name", "AgileOS (shm)", self.write(RESULTS))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("| workload | points | native p50 us | native p99 us | AgileOS (shm) p50 us |", result.stdout)
        self.assertIn("| c2c_4m | 4M |", result.stdout)

    def test_two_files_one_per_side(self):
        native = self.write("".join(json.dumps(r) + "\n" for r in RECORDS if r["side"] == "native"))
        agileos = self.write("".join(json.dumps(r) + "\n" for r in RECORDS if r["side"] == "agileos"))
        result = self.run_tool(native, agileos)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(table_rows(result.stdout)["c2c_4m"]["ratio"], "0.96x")

    def test_rejects_unreadable_input(self):
        no_side = self.write('{"workload": "a", "p50": 1}\n')
        result = self.run_tool(no_side)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"{no_side}:1: \"side\" is null", result.stderr)
        twice = self.write('{"workload": "a", "side": "native"}\n{"workload": "a", "side": "native"}\n')
        self.assertIn("appears twice on side native", self.run_tool(twice).stderr)
        not_json = self.write('{"workload": "a", "side": "native"}\nagileos_cufft_bench: oops\n')
        self.assertIn(f"{not_json}:2: not JSON", self.run_tool(not_json).stderr)

    def test_empty_input_gives_an_empty_table(self):
        result = self.run_tool(self.write(""))
        self.assertEqual(result.returncode, 0)
        self.assertIn("targets met: 0 of the 0 rows that have one", result.stdout)


if __name__ == "__main__":
    unittest.main()
