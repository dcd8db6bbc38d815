#!/usr/bin/env bash
# CPU end-to-end test: agileosd with fake-GPU workers, two clients at once
# through libagileos_cudart.so. Usage: run_e2e.sh BIN_DIR LIB_DIR CLIENT
set -euo pipefail
bin=$1 lib=$2 client=$3
dir=$(mktemp -d /tmp/agileos-e2e.XXXXXX)
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
  "worker": {"executable": "agileos-worker-fake", "prestart": 1, "max_workers": 3}
}
JSON
"$bin/agileosd" --config "$dir/config.json" >"$dir/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $dir/run/agileosd.sock ]] && break; sleep 0.1; done
[[ -S $dir/run/agileosd.sock ]] || { cat "$dir/daemon.log"; echo "agileosd did not start"; exit 1; }

export AGILEOS_SOCKET=$dir/run/agileosd.sock
# In sanitizer builds the preloaded shim brings the sanitizer runtime in after the program.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0
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
