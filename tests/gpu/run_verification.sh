#!/usr/bin/env bash
# run_verification.sh: one device call's worth of evidence. Runs the whole GPU suite, then the
# launch and math-library benchmarks with the time that is left, and puts the summaries where a
# caller that can fetch only a few files finds them. Runs on the GPU machine, from the repository
# root, on a bundle (tests/gpu/bundle.sh).
#
# Usage: tests/gpu/run_verification.sh [TOTAL_SECONDS [FILTER]]   (default 560: a 600 s command limit)
#   FILTER and the environment's AGILEOS_SUITE_SKIP go to run_suite.sh: the whole suite no longer
#   fits one call, so two calls split it, e.g.
#     AGILEOS_SUITE_SKIP='^(tenants|tenant_matrix|operator|math_libraries|cublas_gemm|pytorch|samples)$' ... 560
#     ... 560 '^(tenants|tenant_matrix|operator|math_libraries|cublas_gemm|pytorch)$'
#   and the cuda-samples take a call of their own (tests/gpu/samples/run_samples.sh).
# Output under $OUT (default ./verification-out):
#   suite.log          run_suite.sh's output; suite-summary.txt and suite-logs.tar.gz its summary and
#                      logs (the rest of its files stay in a scratch directory: a caller may fetch
#                      only a few files)
#   launch.md          run_bench.sh --timeout 40 'launch|driver_launch|memcpy_d2h_4b' (bench.md)
#   math.md            run_math_bench.sh (math-run/bench.md)
#   verification.txt   one line per part: what ran, its result, how long it took
# The suite gets at most TOTAL - 90 s (its budget 30 s less: steps not started then are reported
# as not run); each benchmark runs only if the time left allows it. Every part is under a timeout,
# and verification.txt is written as each part ends, so a command stopped at its limit still
# returns what finished.
set -uo pipefail

total_s="${1:-560}"
suite_filter=("${@:2:1}")
out="${OUT:-$PWD/verification-out}"
mkdir -p "$out"
summary="$out/verification.txt"
: >"$summary"
started=$SECONDS
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench_dir="$(cd "$script_dir/../bench" && pwd)"

left() { echo $((total_s - (SECONDS - started))); }
note() { echo "$*" | tee -a "$summary"; }

suite_limit=$((total_s - 90))
suite_started=$SECONDS
suite_out="$(mktemp -d /tmp/agileos-verification-suite.XXXXXX)"
OUT="$suite_out" AGILEOS_SUITE_BUDGET_S=$((suite_limit - 30)) \
  timeout --kill-after=10 "$suite_limit" bash "$script_dir/run_suite.sh" "${suite_filter[@]}" >"$out/suite.log" 2>&1
suite_status=$?
cp "$suite_out/summary.txt" "$out/suite-summary.txt" 2>/dev/null
cp "$suite_out/logs.tar.gz" "$out/suite-logs.tar.gz" 2>/dev/null
rm -rf -- "$suite_out"
note "suite: exit $suite_status, $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/suite.log" | tail -n 1), $((SECONDS - suite_started)) s"
grep -E '^FAIL' "$out/suite.log" | head -n 20 >>"$summary"

# Benchmarks write many files: each runs in a scratch directory, and only its table is kept.
run_bench_part() {
  local name="$1" need="$2" table="$3"
  shift 3
  if (($(left) < need)); then
    note "$name: not run ($(left) s left, $need s needed)"
    return
  fi
  local scratch part_started=$SECONDS
  scratch="$(mktemp -d /tmp/agileos-verification.XXXXXX)"
  OUT="$scratch" timeout --kill-after=10 "$need" "$@" >"$scratch/run.log" 2>&1
  local status=$?
  if [[ -f "$scratch/$table" ]]; then cp "$scratch/$table" "$out/$name.md"; fi
  note "$name: exit $status, $((SECONDS - part_started)) s"
  grep -E '^\| [a-z_0-9]+ \|' "$out/$name.md" 2>/dev/null | cut -d'|' -f2,8,9,12,13 >>"$summary"
  rm -rf -- "$scratch"
}
run_bench_part launch 60 bench.md bash "$bench_dir/run_bench.sh" --timeout 40 'launch|driver_launch|memcpy_d2h_4b'
run_bench_part math 60 math-run/bench.md bash "$bench_dir/run_math_bench.sh"
note "total: $((SECONDS - started)) s"
exit "$suite_status"
