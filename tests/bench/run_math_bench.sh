#!/usr/bin/env bash
# run_math_bench.sh: issue 16's benchmark of the CUDA math libraries in the client. Runs
# agileos_math_bench (tests/bench/math_bench.cu: large SGEMM and DGEMM, batched SGEMM, the latency
# of a small SGEMM, a cuDNN convolution) natively and through AgileOS with run_bench.sh's machinery
# (same GPU, same run, a daemon of the default configuration: the libraries' kernels are SASS only)
# and writes the same table, in $OUT/math-run/bench.md.
#
# Usage: tests/bench/run_math_bench.sh [--quick] [--timeout S] [FILTER]   (run_bench.sh's options)
# Inputs: run_bench.sh's, and
#   AGILEOS_MATH_BENCH_PROGRAM  the program (.bundle/bench/agileos_math_bench)
#   AGILEOS_MATH_LIB_DIRS       directories of libcublas.so.13 and libcudnn.so.9 for the native runs
#                               (default: where this machine's loader finds them)
set -uo pipefail
# shellcheck source=../gpu/lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/lib/harness.sh"

for argument in "$@"; do
  case "$argument" in
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  esac
done

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
program="${AGILEOS_MATH_BENCH_PROGRAM:-$PWD/.bundle/bench/agileos_math_bench}"
out_dir="${OUT:-$PWD/bench-out}"
library_dirs="${AGILEOS_MATH_LIB_DIRS:-$(harness_path_join "$(cuda_library_dir libcublas.so.13)" "$(cuda_library_dir libcudnn.so.9)")}"
if [[ ! -x "$program" ]]; then
  echo "FAIL setup: $program is not there (tests/gpu/bundle.sh builds it where the toolkit has cuBLAS and cuDNN)"
  exit 1
fi
# cuDNN 9's libcudnn.so.9 opens its sublibraries (graph, engines, heuristics, ops, cnn, adv) at run
# time from its own directory: the sandbox binds them by name (--library), as it does the loader's
# closure of the program.
cudnn_libraries=""
if cudnn_dir="$(cuda_library_dir libcudnn.so.9)"; then
  for library in "$cudnn_dir"/libcudnn_*.so.9; do
    [[ -e "$library" ]] && cudnn_libraries+="${cudnn_libraries:+:}$library"
  done
fi
AGILEOS_BENCH_PROGRAM="$program" AGILEOS_BENCH_NATIVE_LIB_PATH="$library_dirs" OUT="$out_dir/math-run" \
  AGILEOS_BENCH_LIBRARIES="$cudnn_libraries" exec bash "$script_dir/run_bench.sh" "$@"
