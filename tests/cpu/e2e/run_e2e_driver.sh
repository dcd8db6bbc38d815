#!/usr/bin/env bash
# CPU end-to-end test of the driver shim: agileosd with fake-GPU workers, one client that links
# libcuda.so.1 (the shim, through SHIM_DIR) and libcudart.so.13 (the runtime shim, preloaded),
# or, with --static-runtime, a client with the CUDA runtime linked in (nvcc's default), which
# reaches the driver shim alone (nothing preloaded). With TRACER (the developer's tool
# client/cuda/tools/trace_driver_calls.c) that client runs through it, and its trace must show
# the runtime's private tables and library loads.
# Usage: run_e2e_driver.sh BIN_DIR SHIM_DIR CLIENT [--static-runtime [TRACER]]
set -euo pipefail
bin=$1 shim=$2 client=$3
preload=$shim/libagileos_cudart.so library_path=$shim tracer=""
if [[ ${4:-} == --static-runtime ]]; then
  preload=""
  tracer=${5:-}
elif [[ ${4:-} == --math-library ]]; then
  preload=""
  export FAKE_WORKER=agileos-worker-fake-sass
fi
source "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.sh"
start_fake_daemon "$bin"
if [[ -n $tracer ]]; then
  mkdir -p "$dir/tracer"
  ln -s "$tracer" "$dir/tracer/libcuda.so.1"
  library_path=$dir/tracer:$shim
  export AGILEOS_TRACE_DRIVER=$shim/libcuda.so.1
fi
status=0
AGILEOS_LOG=info LD_LIBRARY_PATH=$library_path LD_PRELOAD=$preload timeout 120 "$client" >"$dir/client.log" 2>&1 ||
  status=1
cat "$dir/client.log"
if [[ -n $tracer ]]; then
  for line in "cuGetExportTable(6bd5fb6c5bf4e74a8987d93912fd9df9) -> 0" "cuLibraryLoadData(" "cuLaunchKernel("; do
    grep -qF "[driver] $line" "$dir/client.log" || { echo "FAIL the trace has no [driver] $line"; status=1; }
  done
fi
connections=$(grep -c "connected: client" "$dir/client.log" || true)
if ((connections != 1)); then
  echo "FAIL the process made $connections connections (one session per process expected)"
  status=1
fi
kill -0 "$daemon" || { echo "agileosd died"; status=1; }
if ((status)); then echo "--- daemon log"; tail -50 "$dir/daemon.log"; fi
exit $status
