#!/usr/bin/env bash
# check_guarded_ptx.sh: the ctest guard_bench_ptxas (label cpu, no GPU needed).
# agileos_guard_bench --emit-guarded writes each benchmark kernel's original, trap and poison
# PTX (checking the guarded ones with ptx::findUnguardedAccesses); every file must then
# assemble with ptxas for sm_90, as the driver's JIT will have to on the GPU machine. Prints each
# kernel's registers per thread from ptxas -v: a preview of the benchmark's "regs" column (the
# JIT's counts, which the benchmark reports, can differ slightly).
#
# Usage: check_guarded_ptx.sh TOOL PTX PTXAS OUTDIR
# AGILEOS_CUDA_DRIVER_STUB: a libcuda.so to stand in for libcuda.so.1 where the machine has no
# driver (the tool links libcuda; --emit-guarded never calls it).
set -euo pipefail

(($# == 4)) || { echo "usage: check_guarded_ptx.sh TOOL PTX PTXAS OUTDIR" >&2; exit 2; }
tool="$1" ptx="$2" ptxas="$3" out="$4"

rm -rf -- "$out"
mkdir -p "$out"
# (ldd's output is captured first: with pipefail, `ldd | grep -q` fails whenever grep's early
# exit cuts ldd off.)
libraries="$(ldd "$tool")"
if grep -q 'libcuda\.so\.1 => not found' <<<"$libraries"; then
  stub="${AGILEOS_CUDA_DRIVER_STUB:-}"
  [[ -f "$stub" ]] || { echo "check_guarded_ptx.sh: no libcuda.so.1 here and no stub to use" >&2; exit 1; }
  mkdir -p "$out/driver-stub"
  ln -s "$stub" "$out/driver-stub/libcuda.so.1"
  export LD_LIBRARY_PATH="$out/driver-stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

"$tool" --ptx "$ptx" --emit-guarded "$out"

# registers FILE: the entry's register count from ptxas -v, or "FAILED" (with the log shown
# on stderr). Runs in a command substitution, so the caller counts the failures.
registers() {
  local log
  if ! log="$("$ptxas" -arch=sm_90 -v "$1" -o "$out/ptxas.cubin" 2>&1)"; then
    echo "FAIL ptxas -arch=sm_90 $1:" >&2
    echo "$log" | head -n 20 >&2
    echo FAILED
    return
  fi
  awk '/Compiling entry function/ { entry = 1 } entry && /Used [0-9]+ registers/ {
         sub(/.*Used /, ""); print $1; exit }' <<<"$log"
}

kernels=0 failures=0
for original in "$out"/*.ptx; do
  case "$original" in *.trap.ptx | *.poison.ptx) continue ;; esac
  name="$(basename "$original" .ptx)"
  before="$(registers "$original")"
  trap_regs="$(registers "$out/$name.trap.ptx")"
  poison_regs="$(registers "$out/$name.poison.ptx")"
  echo "$name: registers $before -> $trap_regs (trap), $poison_regs (poison)"
  for count in "$before" "$trap_regs" "$poison_regs"; do
    [[ "$count" != FAILED ]] || failures=$((failures + 1))
  done
  kernels=$((kernels + 1))
done
rm -f -- "$out/ptxas.cubin"

((kernels > 0)) || { echo "check_guarded_ptx.sh: no kernel was emitted" >&2; exit 1; }
((failures == 0)) || { echo "check_guarded_ptx.sh: $failures of $((3 * kernels)) files did not assemble" >&2; exit 1; }
echo "all $((3 * kernels)) files of $kernels kernels assemble with ptxas for sm_90"
