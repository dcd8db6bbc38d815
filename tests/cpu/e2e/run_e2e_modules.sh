#!/usr/bin/env bash
# CPU end-to-end of protected modules: agileosd with a module pool holding the test counter
# plugin and fake-GPU workers; one client is admitted with the module and calls it, clients
# asking for a version or a module the pool and policy do not offer are refused.
# Usage: run_e2e_modules.sh BIN_DIR LIB_DIR CLIENT PLUGIN
set -euo pipefail
bin=$1 lib=$2 client=$3 plugin=$4
source "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.sh"
start_fake_daemon "$bin" ',
  "modules": {
    "pool": [{"name": "counter", "version": "1.2.0", "host_library": "'"$plugin"'"}],
    "allowed": ["counter"]
  }'
status=0
run() {  # run NAME MODULES MODE
  echo "--- $1 (AGILEOS_MODULES=$2)"
  AGILEOS_MODULES=$2 LD_PRELOAD=$lib/libagileos_cudart.so timeout 60 "$client" "$3" || status=1
}
run admitted "counter@^1.2" admitted
run "wrong version" "counter@>=2" refused
run "not in the pool" "kvstore" refused
kill -0 "$daemon" || { echo "agileosd died"; status=1; }
grep -E "module admission|modules counter" "$dir/daemon.log" | sed 's/^/daemon: /' || true
if ((status)); then echo "--- daemon log"; tail -50 "$dir/daemon.log"; fi
exit $status
