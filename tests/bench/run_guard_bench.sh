#!/usr/bin/env bash
# run_guard_bench.sh: the kernel memory guard's overhead benchmark (docs/performance.md). Runs
# agileos_guard_bench on the GPU machine, from the repository root, with the bundle of
# tests/gpu/bundle.sh: for each kernel of tests/bench/guard_kernels.cu, the original and the
# guarded PTX (trap and poison) are JIT-compiled, verified to give identical output and timed
# interleaved on the same GPU in the same process. The tool uses the CUDA driver directly;
# AgileOS's daemon is not involved.
#
# Usage: tests/bench/run_guard_bench.sh [--quick] [--samples N] [--timeout S] [FILTER]
#   FILTER       a regular expression (ECMAScript); only the kernels whose name matches run
#                (agileos_guard_bench --list names them), e.g. 'gemm|spmv'.
#   --quick      30 samples per variant instead of 100.
#   --samples N  samples per variant.
#   --timeout S  hard limit for the whole tool (default: the budget + 120 s); it is killed
#                after that, and the log says so.
#
# Inputs (environment; the defaults are the bundle's):
#   AGILEOS_GUARD_BENCH           the tool              (.bundle/bench/agileos_guard_bench)
#   AGILEOS_GUARD_BENCH_PTX       the kernels' PTX      (.bundle/bench/guard_kernels.ptx)
#   AGILEOS_DEPS_DIR              bundled libraries     (.bundle/deps; may be empty)
#   AGILEOS_GUARD_BENCH_BUDGET_S  no kernel is started after this many seconds (240)
#   OUT                           where the results go  (./bench-out)
#
# Output in $OUT: guard_bench.md (the table, with the hardware line on top) and
# guard_bench.log (the tool's progress and stderr).
# Exit status: the tool's (0 all measured and verified, 1 a failure such as a guarded kernel
# whose output differs, 3 the budget left kernels unmeasured), 124/137 if it was killed by the
# timeout, 77 without a GPU, 2 for a usage error.
set -uo pipefail
# shellcheck source=../gpu/lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/lib/harness.sh"

samples=100
timeout_s=""
filter=""
while (($# > 0)); do
  case "$1" in
    --quick) samples=30 ;;
    --samples | --timeout)
      if [[ ! "${2:-}" =~ ^[1-9][0-9]*$ ]]; then
        echo "run_guard_bench.sh: $1 needs a positive number" >&2
        exit 2
      fi
      if [[ "$1" == --samples ]]; then samples="$2"; else timeout_s="$2"; fi
      shift
      ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) echo "run_guard_bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) filter="$1" ;;
  esac
  shift
done

tool="${AGILEOS_GUARD_BENCH:-$PWD/.bundle/bench/agileos_guard_bench}"
ptx="${AGILEOS_GUARD_BENCH_PTX:-$PWD/.bundle/bench/guard_kernels.ptx}"
harness_bundle_dirs # deps_dir
budget_s="${AGILEOS_GUARD_BENCH_BUDGET_S:-240}"
out_dir="${OUT:-$PWD/bench-out}"
[[ "$budget_s" =~ ^[1-9][0-9]*$ ]] || { echo "run_guard_bench.sh: bad AGILEOS_GUARD_BENCH_BUDGET_S" >&2; exit 2; }
timeout_s="${timeout_s:-$((budget_s + 120))}"

mkdir -p "$out_dir"
log="$out_dir/guard_bench.log"
table="$out_dir/guard_bench.md"
summary_init "$log" # say and fail write there
rm -f -- "$table"

require_gpu # "SKIPPED: ..." and exit 77 without /dev/nvidia0
require_files "$tool" "$ptx" || exit 1
# libcuda.so.1: the machine's own driver library, wherever it is.
driver_dir="$(cuda_driver_dir)"
[[ -n "$driver_dir" ]] || { fail "setup: libcuda.so.1 not found on this machine"; exit 1; }

hardware="Hardware: GPU: $(gpu_description); CPU: $(cpu_description); $(uname -sr)."
say "$hardware"

arguments=(--ptx "$ptx" --out "$table" --samples "$samples" --budget-s "$budget_s")
[[ -n "$filter" ]] && arguments+=(--filter "$filter")
say "agileos_guard_bench ${arguments[*]} (timeout ${timeout_s} s)"
# The tool's JIT must be cold every time: no driver JIT cache.
LD_LIBRARY_PATH="$(harness_path_join "$deps_dir" "$driver_dir")" CUDA_CACHE_DISABLE=1 \
  timeout --kill-after=10 "$timeout_s" "$tool" "${arguments[@]}" >>"$log" 2>&1 </dev/null
status=$?

if [[ -s "$table" ]]; then
  { echo "$hardware"; echo; cat "$table"; } >"$table.tmp" && mv -- "$table.tmp" "$table"
  cat "$table"
else
  tail -n 30 "$log"
fi
case "$status" in
  0) say "guard benchmark: every kernel measured and verified" ;;
  124 | 137) fail "guard benchmark: killed after ${timeout_s} s" ;;
  3) say "INCOMPLETE guard benchmark: the budget of ${budget_s} s left kernels unmeasured" ;;
  *) fail "guard benchmark: exit status $status (see $log)" ;;
esac
exit "$status"
