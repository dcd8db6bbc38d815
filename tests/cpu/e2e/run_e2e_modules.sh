#!/usr/bin/env bash
# CPU end-to-end of protected modules: agileosd with a module pool holding the test counter
# plugin and fake-GPU workers; one client is admitted with the module and calls it, clients
# asking for a version or a module the pool and policy do not offer are refused.
# Usage: run_e2e_modules.sh BIN_DIR LIB_DIR CLIENT PLUGIN
set -euo pipefail
bin=$1 lib=$2 client=$3 plugin=$4
dir=$(mktemp -d /tmp/agileos-e2e-modules.XXXXXX)
cleanup() {
  [[ -n ${daemon:-} ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/config.json" <<JSON
{
  "socket_path": "$dir/run/agileosd.sock",
  "runtime_dir": "$dir/run",
  "log_level": "info",
  "worker": {"executable": "agileos-worker-fake", "prestart": 1, "max_workers": 3},
  "modules": {
    "pool": [{"name": "counter", "version": "1.2.0", "host_library": "$plugin"}],
    "allowed": ["counter"]
  }
}
JSON
"$bin/agileosd" --config "$dir/config.json" >"$dir/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $dir/run/agileosd.sock ]] && break; sleep 0.1; done
[[ -S $dir/run/agileosd.sock ]] || { cat "$dir/daemon.log"; echo "agileosd did not start"; exit 1; }

export AGILEOS_SOCKET=$dir/run/agileosd.sock
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0
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
