#!/usr/bin/env bash
# CPU end-to-end test: agileosd with fake-GPU workers, two clients at once
# through libagileos_cudart.so. Usage: run_e2e.sh BIN_DIR LIB_DIR CLIENT
set -euo pipefail
bin=$1 lib=$2 client=$3
source "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.sh"
start_fake_daemon "$bin"
status=0
LD_PRELOAD=$lib/libagileos_cudart.so timeout 120 "$client" >"$dir/client1.log" 2>&1 &
first=$!
LD_PRELOAD=$lib/libagileos_cudart.so timeout 120 "$client" >"$dir/client2.log" 2>&1 || status=1
wait "$first" || status=1
cat "$dir/client1.log"
echo "--- second client"
cat "$dir/client2.log"
kill -0 "$daemon" || { echo "agileosd died"; status=1; }
if ((status)); then echo "--- daemon log"; tail -50 "$dir/daemon.log"; fi
exit $status
