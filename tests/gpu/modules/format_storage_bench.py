#!/usr/bin/env python3
"""Formats the storage benchmark (tests/bench/storage_bench.cu) as a markdown table.

Usage: format_storage_bench.py BASELINE_OUT MODULE_OUT
Lines "RESULT <mode> <block> <GB/s> <p50 us> <p99 us> <reads>" from both runs.
"""
import sys


def results(path, mode):
    rows = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 7 and parts[0] == "RESULT" and parts[1] == mode:
                rows[int(parts[2])] = (float(parts[3]), float(parts[4]), float(parts[5]), int(parts[6]))
    return rows


def size(block):
    return f"{block // 1048576} MiB" if block >= 1048576 else f"{block // 1024} KiB"


def main(baseline_path, module_path):
    baseline = results(baseline_path, "baseline")
    for mode, title in (("module", "storage module, into its slot + device copy"),
                        ("direct", "storage module, straight into a registered buffer")):
        table(baseline, results(module_path, mode), title)
        print()


def table(baseline, module, title):
    print(f"| block | host read + cudaMemcpy GB/s | p50 us | p99 us | {title}: GB/s (32 in flight) "
          "| p50 us (1 in flight) | p99 us | throughput ratio | p50 ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for block in sorted(set(baseline) | set(module)):
        b = baseline.get(block)
        m = module.get(block)
        if b is None or m is None:
            continue
        print(f"| {size(block)} | {b[0]:.2f} | {b[1]:.1f} | {b[2]:.1f} | {m[0]:.2f} | {m[1]:.1f} | {m[2]:.1f} "
              f"| {m[0] / b[0]:.2f}x | {m[1] / b[1]:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
