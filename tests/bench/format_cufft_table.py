#!/usr/bin/env python3
"""Turns the results of agileos_cufft_bench into a Markdown table: native vs. AgileOS.

Usage: format_cufft_table.py [--baseline-name NAME] [--candidate-name NAME] [--hardware TEXT]
                             [--command TEXT] RESULTS.jsonl
       format_cufft_table.py [options] BASELINE.jsonl CANDIDATE.jsonl

With one file, it is run_cufft_bench.sh's cufft.jsonl: both sides, each line with "side": "native"
(the baseline) or "agileos" (the candidate). With two, each file is one side (run_bench.sh's
native.jsonl and agileos.jsonl; a "side" key is then ignored). Each line is one workload on one
side, as run_bench.sh records them:
  {"workload": W, "status": "ok", "unit": "us", "samples": N, "p50": ..., "p99": ...,
   "throughput": ..., "throughput_unit": "GPoints/s" | "plans/s", "points": ..., "plan_create_ms": ...,
   "gpoints_per_s": ..., "pipelined_gpoints_per_s": ..., ...}
or {"workload": W, "status": "timeout" | "failed" | "no_result" | "not_run", ...} (as format_table.py
reads them; a line without "status" counts as "ok").

Per workload the table has: p50/p99 per exec (us) on both sides; throughput (GPoints/s, from the
p50) on both sides and its ratio candidate / baseline, i.e. the candidate's throughput as a fraction
of native (for plan_create: plans/s); the pipelined throughput (100 execs, one synchronize) on both
sides and its ratio; the plan creation time (ms) on both sides; and the target: a pipelined
(sustained throughput) ratio >= 0.95x for every exec workload whose transforms have at least 2^20
points each (TARGET_RATIO, TARGET_MIN_POINTS; a batched plan of 1024 transforms of 1024 points is
measured and shown, without a target). The per-exec ratio, which includes one synchronizing round trip per transform,
is shown beside it.

Exit status: 0 with the table on stdout; 2 when an input cannot be read (as format_table.py, and
a line of a combined file without a known "side"), with the reason on stderr.
Python 3 standard library only (the GPU machine has nothing else).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from format_table import (  # noqa: E402  (the shared reading and formatting of results)
    NOT_APPLICABLE,
    InputError,
    describe_unmeasured,
    format_ratio,
    format_value,
    is_measured,
    load_results,
    number,
    ratio,
)

TARGET_RATIO = 0.95
TARGET_MIN_POINTS = 1 << 20
# The exec workloads of cufft_bench.cu: they have a target even when neither side measured them.
EXEC_WORKLOADS = {
    "c2c_1m", "c2c_4m", "c2c_16m", "r2c_4m", "z2z_1m", "c2c_2d_1k", "c2c_batched_1m", "c2c_3d_128",
}
SIDES = ("native", "agileos")


def load_combined(path):
    """({workload: record} of the native side, the same of the agileos side) from one JSONL file
    whose lines carry "side"; raises InputError for unreadable input."""
    sides = {side: {} for side in SIDES}
    try:
        with open(path, encoding="utf-8") as stream:
            lines = stream.readlines()
    except OSError as error:
        raise InputError(f"{path}: {error.strerror}") from error
    for line_number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{line_number}: not JSON ({error.msg})") from error
        if not isinstance(record, dict) or not isinstance(record.get("workload"), str):
            raise InputError(f"{path}:{line_number}: not an object with a \"workload\" name")
        side = record.get("side")
        if side not in sides:
            raise InputError(f"{path}:{line_number}: \"side\" is {json.dumps(side)}, not one of {', '.join(SIDES)}")
        name = record["workload"]
        if name in sides[side]:
            raise InputError(f"{path}:{line_number}: workload {name} appears twice on side {side}")
        sides[side][name] = record
    return sides["native"], sides["agileos"]


def measured_number(record, key):
    return number(record, key) if is_measured(record) else None


def throughput(record):
    """GPoints/s of an exec workload, otherwise the record's own throughput (plans/s)."""
    value = measured_number(record, "gpoints_per_s")
    return value if value is not None else measured_number(record, "throughput")


def format_points(value):
    if value is None:
        return NOT_APPLICABLE
    points = int(value)
    if points >= TARGET_MIN_POINTS and points % TARGET_MIN_POINTS == 0:
        return f"{points // TARGET_MIN_POINTS}M"
    return f"{points:,}"


def points_of(baseline, candidate):
    for record in (baseline, candidate):
        value = measured_number(record, "points")
        if value is not None:
            return value
    return None


def transform_points_of(baseline, candidate):
    """Points of one transform: the workload's points over its batch (a batched plan runs `batch`
    transforms of points / batch each)."""
    points = points_of(baseline, candidate)
    if points is None:
        return None
    for record in (baseline, candidate):
        batch = measured_number(record, "batch")
        if batch:
            return points / batch
    return points


def has_target(name, baseline, candidate):
    points = transform_points_of(baseline, candidate)
    is_exec = name in EXEC_WORKLOADS or any(measured_number(r, "gpoints_per_s") is not None
                                            for r in (baseline, candidate))
    return is_exec and (points is None or points >= TARGET_MIN_POINTS)


def evaluate_target(throughput_ratio, measured):
    """The target cell and True/False/None (met / not met / not measured)."""
    text = f"pipelined ratio >= {TARGET_RATIO:g}x"
    if not measured or throughput_ratio is None:
        return f"{text}: not measured", None
    met = throughput_ratio >= TARGET_RATIO
    return f"{text}: {'met' if met else '**not met**'}", met


def make_table(baseline_results, candidate_results, baseline_name="native", candidate_name="AgileOS",
               hardware=None, command=None):
    """The Markdown document for two result sets ({workload: record})."""
    names = list(baseline_results) + [name for name in candidate_results if name not in baseline_results]
    header = [
        "workload", "points",
        f"{baseline_name} p50 us", f"{baseline_name} p99 us", f"{candidate_name} p50 us", f"{candidate_name} p99 us",
        f"{baseline_name} GPoints/s", f"{candidate_name} GPoints/s", "ratio",
        f"{baseline_name} pipelined GPoints/s", f"{candidate_name} pipelined GPoints/s", "ratio pipelined",
        f"{baseline_name} plan ms", f"{candidate_name} plan ms",
        "target",
    ]
    rows, notes = [], []
    met_count = measured_targets = total_targets = 0
    for name in names:
        baseline, candidate = baseline_results.get(name), candidate_results.get(name)
        measured = is_measured(baseline) and is_measured(candidate)
        comparable = measured
        if measured and (baseline.get("unit") != candidate.get("unit")
                         or baseline.get("throughput_unit") != candidate.get("throughput_unit")):
            comparable = False
            notes.append(f"{name}: units differ between the two sides; no ratio")
        if measured and baseline.get("samples") != candidate.get("samples"):
            notes.append(f"{name}: sample counts differ ({baseline.get('samples')} vs {candidate.get('samples')})")
        throughput_ratio = ratio(throughput(candidate), throughput(baseline)) if comparable else None
        pipelined_ratio = (ratio(measured_number(candidate, "pipelined_gpoints_per_s"),
                                 measured_number(baseline, "pipelined_gpoints_per_s")) if comparable else None)
        target_cell = NOT_APPLICABLE
        if has_target(name, baseline, candidate):
            total_targets += 1
            target_cell, met = evaluate_target(pipelined_ratio, comparable)
            if met is not None:
                measured_targets += 1
                met_count += int(met)

        cells = [name, format_points(points_of(baseline, candidate))]
        for record in (baseline, candidate):
            if is_measured(record):
                cells += [format_value(number(record, "p50")), format_value(number(record, "p99"))]
            else:
                cells += [describe_unmeasured(record), NOT_APPLICABLE]
        cells += [format_value(measured_number(baseline, "gpoints_per_s")),
                  format_value(measured_number(candidate, "gpoints_per_s")), format_ratio(throughput_ratio)]
        cells += [format_value(measured_number(baseline, "pipelined_gpoints_per_s")),
                  format_value(measured_number(candidate, "pipelined_gpoints_per_s")), format_ratio(pipelined_ratio)]
        cells += [format_value(measured_number(baseline, "plan_create_ms")),
                  format_value(measured_number(candidate, "plan_create_ms")), target_cell]
        rows.append(cells)
        for side_name, record in ((baseline_name, baseline), (candidate_name, candidate)):
            if not is_measured(record):
                reason = record.get("reason") if record is not None else None
                detail = f": {reason}" if reason else ""
                notes.append(f"{name} ({side_name}): {describe_unmeasured(record)}{detail}")

    out = [f"## agileos_cufft_bench: {baseline_name} vs. {candidate_name}", ""]
    if hardware:
        out += [f"Hardware: {hardware}", ""]
    if command:
        out += [f"Command: `{command}`", ""]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join(" --- " for _ in header) + "|")
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out += [
        "",
        f"targets met: {met_count} of the {total_targets} rows that have one"
        + (f" ({total_targets - measured_targets} not measured)" if measured_targets < total_targets else ""),
        "",
        f"p50/p99: host time of one cufftExec* and its cudaStreamSynchronize (nearest-rank percentiles; "
        f"plan_create: one cufftPlan1d and cufftDestroy). GPoints/s: points / p50. Pipelined: 100 execs "
        f"back to back and one synchronize, median of the rounds. Ratios are {candidate_name} / "
        f"{baseline_name} throughput ({candidate_name}'s as a fraction of {baseline_name}'s; for "
        f"plan_create, of plans per second). Plan ms: the workload's one plan creation (the first cuFFT "
        f"call of its process); for plan_create, the median create after warm-up. Target: throughput, i.e. "
        f"the pipelined ratio, >= {TARGET_RATIO:g}x for every exec workload whose transforms have at least 1M "
        f"points each (M = 2^20; batched workloads of smaller transforms have none).",
    ]
    if notes:
        out += ["", "Notes:"] + [f"- {note}" for note in notes]
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("inputs", nargs="+", metavar="JSONL",
                        help="cufft.jsonl (both sides), or BASELINE.jsonl CANDIDATE.jsonl")
    parser.add_argument("--baseline-name", default="native")
    parser.add_argument("--candidate-name", default="AgileOS")
    parser.add_argument("--hardware", help="the hardware line printed above the table")
    parser.add_argument("--command", help="the command that produced the results")
    args = parser.parse_args(argv)
    if len(args.inputs) > 2:
        parser.error("one combined file or two files (baseline, candidate)")
    try:
        if len(args.inputs) == 1:
            baseline, candidate = load_combined(args.inputs[0])
        else:
            baseline, candidate = load_results(args.inputs[0]), load_results(args.inputs[1])
    except InputError as error:
        print(f"format_cufft_table.py: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(make_table(baseline, candidate, args.baseline_name, args.candidate_name,
                                args.hardware, args.command))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
