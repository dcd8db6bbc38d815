#!/usr/bin/env bash
# CPU end-to-end test of nvcc's default build (static cudart) on the driver shim: agileosd with
# fake-GPU workers, one program whose CUDA runtime is linked in and finds the driver shim as
# libcuda.so.1 through SHIM_DIR. Nothing is preloaded.
# Usage: run_e2e_static_runtime.sh BIN_DIR SHIM_DIR PROGRAM
set -euo pipefail
bin=$1 shim=$2 program=$3
source "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.sh"
start_fake_daemon "$bin"
status=0
AGILEOS_LOG=info LD_LIBRARY_PATH=$shim timeout 120 "$program" >"$dir/client.log" 2>&1 || status=1
cat "$dir/client.log"
connections=$(grep -c "connected: client" "$dir/client.log" || true)
if ((connections != 1)); then
  echo "FAIL the process made $connections connections (one session per process expected)"
  status=1
fi
kill -0 "$daemon" || { echo "agileosd died"; status=1; }
if ((status)); then echo "--- daemon log"; tail -50 "$dir/daemon.log"; fi
exit $status
