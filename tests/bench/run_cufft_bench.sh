#!/usr/bin/env bash
# run_cufft_bench.sh: issue 6's cuFFT benchmark. Runs every workload of agileos_cufft_bench natively
# and then through AgileOS (inside agileos-sandbox, where libcufft.so.12 is AgileOS's cuFFT shim),
# one after the other on the same GPU in the same run, and writes a table of per-exec p50/p99,
# throughput, pipelined throughput, plan creation time and the ratios to native. Runs on the GPU
# machine, from the repository root, with the bundle of tests/gpu/bundle.sh.
#
# Usage: tests/bench/run_cufft_bench.sh [--quick] [--timeout S] [FILTER]
#   The options are run_bench.sh's, which does the runs (daemon, native and sandboxed processes,
#   per-run timeout, time budget): FILTER an extended regular expression on the workload names
#   (agileos_cufft_bench --list), --quick fewer samples on both sides, --timeout S the limit for
#   one workload on one side (default 120 s).
#
# Inputs (environment; the defaults are the bundle made by tests/gpu/bundle.sh):
#   AGILEOS_CUFFT_BENCH_PROGRAM  the benchmark program       (.bundle/bench/agileos_cufft_bench)
#   AGILEOS_CUFFT_LIB_DIR        the directory of the native libcufft.so.12 (found like run_bench.sh
#                                finds libcudart.so.13, by tests/gpu/lib/harness.sh's cuda_library_dir:
#                                /usr/local/cuda/lib64, the toolkit's targets/x86_64-linux/lib, the
#                                linker cache, then /usr/local/cuda-*/lib64)
#   AGILEOS_SHIM_DIR             libagileos_cudart.so and libcufft.so.12, AgileOS's shims (.bundle/shim)
#   AGILEOS_BIN_DIR, AGILEOS_DEPS_DIR, AGILEOS_BENCH_BUDGET_S, AGILEOS_BENCH_SETTLE_S,
#   AGILEOS_BENCH_LABEL          as for run_bench.sh
#   OUT                          where the results go        (./bench-out)
#
# Output, in $OUT:
#   cufft.jsonl  one line per workload and side, in the order they were measured: the program's
#                JSON line with "side", "status": "ok" and "process_s" added, or a line with
#                "status": "timeout" | "failed" | "no_result" | "not_run" (run_bench.sh's bench.jsonl);
#   cufft.md     the Markdown table (format_cufft_table.py) with the hardware line on top;
#   cufft-run/   run_bench.sh's own output for this run: bench.log, native.jsonl, agileos.jsonl,
#                logs.tar.gz (every run's stdout/stderr), daemon.log.tail, and bench.md (its generic
#                table, not printed here).
# Exit status: run_bench.sh's (0 if every selected workload was measured on both sides, 1 otherwise,
# 2 for a usage error, 77 without a GPU); 1 also if the table cannot be made.
set -uo pipefail
# shellcheck source=../gpu/lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/lib/harness.sh"

for argument in "$@"; do
  case "$argument" in
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  esac
done

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
program="${AGILEOS_CUFFT_BENCH_PROGRAM:-$PWD/.bundle/bench/agileos_cufft_bench}"
harness_bundle_dirs # shim_dir (bin_dir and deps_dir are run_bench.sh's)
summary_init ""     # say and fail: stdout only (run_bench.sh keeps the log)
out_dir="${OUT:-$PWD/bench-out}"
run_dir="$out_dir/cufft-run"
label="${AGILEOS_BENCH_LABEL:-AgileOS}"

mkdir -p "$out_dir"
rm -f -- "$out_dir/cufft.jsonl" "$out_dir/cufft.md"

# The directory of the native libcufft.so.12 (found as run_bench.sh finds libcudart.so.13).
cufft_dir="${AGILEOS_CUFFT_LIB_DIR:-$(cuda_library_dir libcufft.so.12)}"
if have_gpu; then
  # (Without a GPU run_bench.sh says SKIPPED and exits 77 before it needs any library.)
  if [[ -z "$cufft_dir" || ! -e "$cufft_dir/libcufft.so.12" ]]; then
    fail "setup: libcufft.so.12 not found on this machine (set AGILEOS_CUFFT_LIB_DIR)"
    exit 1
  fi
  if [[ ! -e "$shim_dir/libcufft.so.12" ]]; then
    say "NOTE $shim_dir has no libcufft.so.12 (AgileOS's cuFFT shim): the AgileOS runs will fail"
  fi
fi

# run_bench.sh does the runs with this program and its own output in $run_dir; its generic table
# (format_table.py's, made for agileos_bench) stays in $run_dir/bench.md and is left out here.
AGILEOS_BENCH_PROGRAM="$program" AGILEOS_BENCH_NATIVE_LIB_PATH="$cufft_dir" OUT="$run_dir" \
  bash "$script_dir/run_bench.sh" "$@" |
  sed -u '/^## agileos_bench: /,/^finished after /{/^finished after /!d}'
status="${PIPESTATUS[0]}"
if ((status == 2 || status == 77)); then exit "$status"; fi
if [[ ! -s "$run_dir/bench.jsonl" ]]; then
  say "no results in $run_dir/bench.jsonl; see $run_dir/bench.log"
  exit "$((status == 0 ? 1 : status))"
fi
cp -- "$run_dir/bench.jsonl" "$out_dir/cufft.jsonl"

command_line="tests/bench/run_cufft_bench.sh"
if (($# > 0)); then command_line+="$(printf ' %q' "$@")"; fi
hardware="$(grep -m 1 '^GPU: ' "$run_dir/bench.log")"
if ! command -v python3 >/dev/null; then
  say "NOTE no python3 here: make the table elsewhere with"
  say "  tests/bench/format_cufft_table.py --hardware '$hardware' cufft.jsonl"
  exit "$status"
fi
if python3 "$script_dir/format_cufft_table.py" --hardware "$hardware" --command "$command_line" \
  --candidate-name "$label" "$out_dir/cufft.jsonl" >"$out_dir/cufft.md"; then
  echo ""
  cat -- "$out_dir/cufft.md"
else
  fail "format_cufft_table.py could not make the table; the results are in $out_dir/cufft.jsonl"
  status=1
fi
exit "$status"
