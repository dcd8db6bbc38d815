#!/usr/bin/env bash
# CPU end-to-end test of the driver shim: agileosd with fake-GPU workers, one client that links
# libcuda.so.1 (the shim, through SHIM_DIR) and libcudart.so.13 (the runtime shim, preloaded),
# or, with --static-runtime, a client with the CUDA runtime linked in (nvcc's default), which
# reaches the driver shim alone (nothing preloaded).
# Usage: run_e2e_driver.sh BIN_DIR SHIM_DIR CLIENT [--static-runtime]
set -euo pipefail
bin=$1 shim=$2 client=$3
preload=$shim/libagileos_cudart.so
[[ ${4:-} == --static-runtime ]] && preload=""
source "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.sh"
start_fake_daemon "$bin"
status=0
AGILEOS_LOG=info LD_LIBRARY_PATH=$shim LD_PRELOAD=$preload timeout 120 "$client" >"$dir/client.log" 2>&1 ||
  status=1
cat "$dir/client.log"
connections=$(grep -c "connected: client" "$dir/client.log" || true)
if ((connections != 1)); then
  echo "FAIL the process made $connections connections (one session per process expected)"
  status=1
fi
kill -0 "$daemon" || { echo "agileosd died"; status=1; }
if ((status)); then echo "--- daemon log"; tail -50 "$dir/daemon.log"; fi
exit $status
