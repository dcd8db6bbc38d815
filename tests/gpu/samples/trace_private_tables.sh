#!/usr/bin/env bash
# trace_private_tables.sh: runs cuda-samples natively on the GPU machine with the driver's private
# tables traced (client/cuda/tools/trace_private_tables.c), so that the answers a library expects
# from an entry AgileOS does not serve yet can be read off the real driver (for example cuBLAS on a
# non-default stream with managed memory, which asks table f8cff951-2146-8b4e-b9e2-fb469e7c0dd9 and
# the tools-context table's entry 51: UnifiedMemoryStreams, conjugateGradientCudaGraphs).
#
# Usage (repository root, bundle of tests/gpu/bundle.sh and .bundle-samples/samples.tar.xz):
#   tests/gpu/samples/trace_private_tables.sh [--tables ID,ID] SAMPLE...
# Output in $OUT (./trace-out): SAMPLE.out, SAMPLE.err (the trace is on stderr) and summary.txt,
# written as each sample ends. Each sample runs at most 60 s.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

tables="21318c60971432488ca641ff7324c8f2,f8cff95121468b4eb9e2fb469e7c0dd9"
if [[ "${1:-}" == --tables ]]; then
  tables="$2"
  shift 2
fi
(($# > 0)) || { echo "usage: trace_private_tables.sh [--tables ID,ID] SAMPLE..." >&2; exit 2; }
root="$PWD"
out="${OUT:-$root/trace-out}"
mkdir -p "$out"
require_gpu
driver_dir="$(cuda_driver_dir)"
library_path="$(cuda_runtime_dir):$driver_dir:$root/.bundle/deps"
tracer="$root/.bundle/tools/libagileos_trace_private_tables.so"
[[ -f "$tracer" ]] || { echo "no $tracer: run tests/gpu/bundle.sh" >&2; exit 1; }
samples="$(mktemp -d)"
xz -dc "$root/.bundle-samples/samples.tar.xz" | tar -xf - -C "$samples" || exit 1
for name in "$@"; do
  dir="$samples/samples/$name"
  if [[ ! -x "$dir/$name" ]]; then
    echo "$name: not in the samples archive" >>"$out/summary.txt"
    continue
  fi
  (cd "$dir" && AGILEOS_TRACE_DRIVER="$driver_dir/libcuda.so.1" AGILEOS_TRACE_TABLES="$tables" \
    LD_PRELOAD="$tracer" LD_LIBRARY_PATH="$library_path" timeout --kill-after=5 60 "./$name" \
    >"$out/$name.out" 2>"$out/$name.err" </dev/null)
  echo "$name: exit $?, $(grep -c '^\[table' "$out/$name.err") traced calls" >>"$out/summary.txt"
done
rm -rf -- "$samples"
cat "$out/summary.txt"
