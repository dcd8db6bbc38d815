#!/usr/bin/env bash
# sandbox_start_bench.sh: what agileos-sandbox adds to a program's start (issue 14's target: at
# most 50 ms over native at p50 and p99). Runs /bin/true RUNS times in each of three ways,
# interleaved so that machine noise hits all of them alike:
#   native   /bin/true
#   shim     /bin/true with the AgileOS shim preloaded, no sandbox (what loading the shim costs)
#   sandbox  agileos-sandbox -- /bin/true (the shim preloaded inside)
# and prints p50/p99 of each and of sandbox - native. No daemon is needed: /bin/true makes no
# CUDA call.
#
# Usage: tests/bench/sandbox_start_bench.sh SANDBOX SHIM_DIR [RUNS [DEPS_DIR]]
#   DEPS_DIR  the libraries the shim needs when they are not the system's (the GPU bundle's deps/):
#             LD_LIBRARY_PATH for the shim row, --lib-path for the sandbox
# Output: a markdown table on stdout (and $OUT/sandbox_start.md when OUT is set).
set -uo pipefail
# shellcheck source=../gpu/lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/lib/harness.sh"
sandbox=${1:?agileos-sandbox}
shim=${2:?shim dir}
runs=${3:-20}
deps=${4:-}
extra=(${deps:+--lib-path "$deps"})
sockets=$(harness_runtime_dir agileos-sandbox-bench) # the sandbox's socket directory (no daemon)
# shellcheck disable=SC2317  # called from the EXIT trap
remove_sockets() { rm -rf "$sockets"; }
harness_exit_trap remove_sockets

micros() { local t=$EPOCHREALTIME; echo "${t/./}"; }
declare -a native=() shimmed=() sandboxed=() failures=0
for ((i = 0; i < runs; i++)); do
  s=$(micros); /bin/true; e=$(micros); native+=($((e - s)))
  s=$(micros); LD_PRELOAD="$shim/libagileos_cudart.so" LD_LIBRARY_PATH="$shim${deps:+:$deps}" /bin/true || ((failures++))
  e=$(micros); shimmed+=($((e - s)))
  s=$(micros); "$sandbox" --socket-dir "$sockets" --shim "$shim" "${extra[@]}" -- /bin/true || ((failures++))
  e=$(micros); sandboxed+=($((e - s)))
done
# percentile P VALUES...: nearest-rank percentile in ms with one decimal.
percentile() {
  local p=$1; shift
  printf '%s\n' "$@" | sort -n | awk -v p="$p" '{ v[NR] = $1 } END { r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; printf "%.1f", v[r] / 1000 }'
}
diffs=()
for ((i = 0; i < runs; i++)); do diffs+=($((sandboxed[i] - native[i]))); done
{
  echo "| start of /bin/true ($runs runs) | p50 ms | p99 ms |"
  echo "| --- | ---: | ---: |"
  echo "| native | $(percentile 50 "${native[@]}") | $(percentile 99 "${native[@]}") |"
  echo "| shim preloaded, no sandbox | $(percentile 50 "${shimmed[@]}") | $(percentile 99 "${shimmed[@]}") |"
  echo "| agileos-sandbox | $(percentile 50 "${sandboxed[@]}") | $(percentile 99 "${sandboxed[@]}") |"
  echo "| sandbox over native | $(percentile 50 "${diffs[@]}") | $(percentile 99 "${diffs[@]}") |"
  echo
  echo "launches that failed (shim row or sandbox row): $failures"
} | tee ${OUT:+"$OUT/sandbox_start.md"}
((failures == 0))
