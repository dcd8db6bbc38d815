#!/usr/bin/env python3
"""Turns two JSONL result files of agileos_bench into a Markdown comparison table.

Usage: format_table.py [--baseline-name NAME] [--candidate-name NAME] [--hardware TEXT]
                       [--command TEXT] BASELINE.jsonl CANDIDATE.jsonl

Each input line is one workload on one side, as tests/bench/run_bench.sh writes them:
  {"workload": W, "status": "ok", "unit": "us"|"ms"|"s", "samples": N, "p50": ..., "p99": ...,
   "throughput": ..., "throughput_unit": ..., ...}
or, when the workload produced no measurement,
  {"workload": W, "status": "timeout"|"failed"|"no_result"|"not_run", "timeout_s": ..., "exit": ...,
   "reason": ...}
A line without "status" counts as "ok" (agileos_bench's own output). Other keys are ignored.

Ratios are candidate / baseline for every column: for times (p50, p99) above 1x is slower, for
throughput below 1x is lower. The last column evaluates the targets of issue 3 (ISSUE3_TARGETS)
and says "met" only when every condition of the row holds on measured numbers.

Exit status: 0 with the table on stdout (missing, failed and timed-out workloads are rows that
say so); 2 when an input cannot be read (a line that is not a JSON object, one without a
workload name, or a workload twice in one file), with the reason on stderr.
Python 3 standard library only (the GPU machine has nothing else).
"""

import argparse
import json
import math
import sys

# issue 3's targets: (metric, comparison, bound) on the candidate/baseline ratio.
ISSUE3_TARGETS = {
    "memcpy_d2h_4b": [("p50", "<=", 1.3), ("p99", "<=", 2.0)],
    "stream_query_idle": [("p50", "<=", 1.3), ("p99", "<=", 2.0)],
    "launch_empty_10k": [("throughput", ">=", 0.9)],
    "launch_sync": [("p50", "<=", 1.3)],
    "driver_launch_empty_10k": [("throughput", ">=", 0.9)],
    "memcpy_h2d_pinned_256m": [("throughput", ">=", 0.95)],
    "memcpy_d2h_pinned_256m": [("throughput", ">=", 0.95)],
    "memcpy_h2d_pageable_256m": [("throughput", ">=", 1.0)],
    "memcpy_d2h_pageable_256m": [("throughput", ">=", 1.0)],
    "app_triad": [("p50", "<=", 1.05)],
    "app_stencil": [("p50", "<=", 1.05)],
    "app_sgemm": [("p50", "<=", 1.05)],
}

NOT_APPLICABLE = "—"


class InputError(Exception):
    """An input file that cannot be read as results."""


def load_results(path):
    """Returns {workload: record} in file order; raises InputError for unreadable input."""
    results = {}
    try:
        with open(path, encoding="utf-8") as stream:
            lines = stream.readlines()
    except OSError as error:
        raise InputError(f"{path}: {error.strerror}") from error
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: not JSON ({error.msg})") from error
        if not isinstance(record, dict) or not isinstance(record.get("workload"), str):
            raise InputError(f"{path}:{number}: not an object with a \"workload\" name")
        name = record["workload"]
        if name in results:
            raise InputError(f"{path}:{number}: workload {name} appears twice")
        results[name] = record
    return results


def is_measured(record):
    return record is not None and record.get("status", "ok") == "ok"


def number(record, key):
    """The record's finite numeric value for key, or None."""
    value = record.get(key) if record is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def format_value(value):
    """About four significant digits, never in exponent notation."""
    if value is None:
        return NOT_APPLICABLE
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.2f}"
    decimals = min(9, 3 - int(math.floor(math.log10(magnitude))))
    return f"{value:.{decimals}f}"


def describe_unmeasured(record):
    """Why a side has no numbers, for its table cell."""
    if record is None:
        return "missing"
    status = record.get("status")
    if status == "timeout":
        limit = number(record, "timeout_s")
        return f"timed out ({limit:.0f} s)" if limit is not None else "timed out"
    if status == "failed":
        code = record.get("exit")
        return f"failed (exit {code})" if code is not None else "failed"
    if status == "no_result":
        return "no result"
    if status == "not_run":
        return "not run"
    return f"status {status}"


def ratio(candidate, baseline):
    if candidate is None or baseline is None or baseline == 0:
        return None
    return candidate / baseline


def format_ratio(value):
    return NOT_APPLICABLE if value is None else f"{value:.2f}x"


def compare(baseline, candidate):
    """The ratios of one workload: {"p50": r, "p99": r, "throughput": r} (None where unknown),
    and a note when the two sides are not comparable."""
    ratios = {"p50": None, "p99": None, "throughput": None}
    if not (is_measured(baseline) and is_measured(candidate)):
        return ratios, None
    if baseline.get("unit") != candidate.get("unit") or baseline.get("throughput_unit") != candidate.get(
        "throughput_unit"
    ):
        return ratios, "units differ between the two sides; no ratio"
    for key in ratios:
        ratios[key] = ratio(number(candidate, key), number(baseline, key))
    note = None
    if baseline.get("samples") != candidate.get("samples"):
        note = f"sample counts differ ({baseline.get('samples')} vs {candidate.get('samples')})"
    return ratios, note


def evaluate_target(name, ratios, measured):
    """The target cell of one workload, and True/False/None for met/not met/no target or no data."""
    conditions = ISSUE3_TARGETS.get(name)
    if not conditions:
        return NOT_APPLICABLE, None
    text = ", ".join(f"{metric} {comparison} {bound:g}x" for metric, comparison, bound in conditions)
    values = [ratios[metric] for metric, _, _ in conditions]
    if not measured or any(value is None for value in values):
        return f"{text}: not measured", None
    met = all(
        (value <= bound) if comparison == "<=" else (value >= bound)
        for value, (_, comparison, bound) in zip(values, conditions)
    )
    return f"{text}: {'met' if met else '**not met**'}", met


def side_cells(record):
    """p50, p99 and throughput cells of one side."""
    if not is_measured(record):
        return [describe_unmeasured(record), NOT_APPLICABLE, NOT_APPLICABLE]
    throughput = number(record, "throughput")
    throughput_cell = format_value(throughput)
    if throughput is not None and record.get("throughput_unit"):
        throughput_cell += f" {record['throughput_unit']}"
    return [format_value(number(record, "p50")), format_value(number(record, "p99")), throughput_cell]


def make_table(baseline_results, candidate_results, baseline_name="native", candidate_name="AgileOS",
               hardware=None, command=None):
    """The Markdown document for two result sets ({workload: record})."""
    names = list(baseline_results) + [name for name in candidate_results if name not in baseline_results]
    header = [
        "workload", "unit",
        f"{baseline_name} p50", f"{baseline_name} p99", f"{candidate_name} p50", f"{candidate_name} p99",
        "ratio p50", "ratio p99",
        f"{baseline_name} throughput", f"{candidate_name} throughput", "ratio throughput",
        "issue 3 target",
    ]
    rows, notes = [], []
    met_count = measured_targets = total_targets = 0
    for name in names:
        baseline, candidate = baseline_results.get(name), candidate_results.get(name)
        measured = is_measured(baseline) and is_measured(candidate)
        ratios, note = compare(baseline, candidate)
        target_cell, met = evaluate_target(name, ratios, measured)
        if name in ISSUE3_TARGETS:
            total_targets += 1
        if met is not None:
            measured_targets += 1
            met_count += int(met)
        unit = next((r.get("unit") for r in (baseline, candidate) if is_measured(r) and r.get("unit")), "")
        base_p50, base_p99, base_throughput = side_cells(baseline)
        cand_p50, cand_p99, cand_throughput = side_cells(candidate)
        rows.append([
            name, unit, base_p50, base_p99, cand_p50, cand_p99,
            format_ratio(ratios["p50"]), format_ratio(ratios["p99"]),
            base_throughput, cand_throughput, format_ratio(ratios["throughput"]), target_cell,
        ])
        if note:
            notes.append(f"{name}: {note}")
        for side_name, record in ((baseline_name, baseline), (candidate_name, candidate)):
            if not is_measured(record):
                reason = record.get("reason") if record is not None else None
                detail = f": {reason}" if reason else ""
                notes.append(f"{name} ({side_name}): {describe_unmeasured(record)}{detail}")

    out = [f"## agileos_bench: {baseline_name} vs. {candidate_name}", ""]
    if hardware:
        out += [f"Hardware: {hardware}", ""]
    if command:
        out += [f"Command: `{command}`", ""]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join(" --- " for _ in header) + "|")
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out += [
        "",
        f"issue 3 targets met: {met_count} of the {total_targets} rows that have one"
        + (f" ({total_targets - measured_targets} not measured)" if measured_targets < total_targets else ""),
        "",
        f"Ratios are {candidate_name} / {baseline_name}: for p50 and p99 (times) above 1x is slower, for "
        "throughput below 1x is lower. p50/p99 are nearest-rank percentiles of the samples: per call "
        "(us rows), per 256 MiB copy (ms rows), per end-to-end run of the program (s rows); "
        "launch_empty_10k's samples are the average per launch of 10,000 launches and one synchronize. "
        "With fewer than 100 samples, p99 is the largest sample. "
        "Throughput is computed from the median sample.",
    ]
    if notes:
        out += ["", "Notes:"] + [f"- {note}" for note in notes]
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("baseline", help="JSONL results of the baseline (native)")
    parser.add_argument("candidate", help="JSONL results of the candidate (AgileOS)")
    parser.add_argument("--baseline-name", default="native")
    parser.add_argument("--candidate-name", default="AgileOS")
    parser.add_argument("--hardware", help="the hardware line printed above the table")
    parser.add_argument("--command", help="the command that produced the results")
    args = parser.parse_args(argv)
    try:
        baseline = load_results(args.baseline)
        candidate = load_results(args.candidate)
    except InputError as error:
        print(f"format_table.py: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(make_table(baseline, candidate, args.baseline_name, args.candidate_name,
                                args.hardware, args.command))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
