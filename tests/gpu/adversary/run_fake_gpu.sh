#!/usr/bin/env bash
# Runs both adversaries against agileosd with fake-GPU workers, on the CPU machine (CI).
# Every refusal they test happens in the shim or in the worker before the GPU backend is
# reached, so it is the same as on the GPU; only kernels do not run (hence --fake-gpu).
#
# Usage: run_fake_gpu.sh BIN_DIR SHIM_DIR PROGRAMS_DIR
#   BIN_DIR       agileosd, agileos-worker-fake, agileos-sandbox, adversary_wire
#   SHIM_DIR      libagileos_cudart.so
#   PROGRAMS_DIR  adversary_api
# adversary_api runs inside agileos-sandbox where the machine permits it (root, bubblewrap with
# unprivileged user namespaces, and a build tree that unprivileged uids can read), else with
# LD_PRELOAD only (said so in the output).
# Exit status: 0 if both adversaries passed, 1 otherwise.
set -uo pipefail

readonly BIN_DIR="$1" SHIM_DIR="$2" PROGRAMS_DIR="$3"

runtime_dir="$(mktemp -d /tmp/agileos-adversaries.XXXXXX)"
chmod 755 "$runtime_dir" # the sandbox's unprivileged uid reaches the daemon's socket through it
daemon_pid=""
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  if [[ -n "$daemon_pid" ]]; then
    kill -TERM "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
  fi
  rm -rf -- "$runtime_dir" "$runtime_dir-admin"
}
trap cleanup EXIT

cat >"$runtime_dir/agileosd.json" <<JSON
{
  "socket_path": "$runtime_dir/agileosd.sock",
  "runtime_dir": "$runtime_dir",
  "log_level": "info",
  "worker": {"executable": "agileos-worker-fake", "prestart": 1, "max_workers": 4}
}
JSON
timeout 280 "$BIN_DIR/agileosd" --config "$runtime_dir/agileosd.json" >"$runtime_dir/agileosd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S "$runtime_dir/agileosd.sock" ]] && break; sleep 0.1; done
if [[ ! -S "$runtime_dir/agileosd.sock" ]]; then
  echo "FAIL: agileosd did not start"
  tail -n 20 "$runtime_dir/agileosd.log"
  exit 1
fi

status=0
echo "== adversary_api --fake-gpu"
sandbox_usable() {
  ((EUID == 0)) && command -v bwrap >/dev/null &&
    setpriv --reuid=65534 --regid=65534 --clear-groups bwrap --unshare-user --ro-bind / / \
      test -r "$SHIM_DIR/libagileos_cudart.so" -a -r "$PROGRAMS_DIR/adversary_api" 2>/dev/null
}
if sandbox_usable; then
  timeout 120 "$BIN_DIR/agileos-sandbox" --socket-dir "$runtime_dir" --shim "$SHIM_DIR" --keep "$PROGRAMS_DIR" \
    -- "$PROGRAMS_DIR/adversary_api" --fake-gpu || status=1
else
  echo "NOTE: agileos-sandbox is not usable here (needs root, bubblewrap with unprivileged user namespaces," \
    "and a build tree others can read); running with LD_PRELOAD only"
  AGILEOS_SOCKET="$runtime_dir/agileosd.sock" LD_PRELOAD="$SHIM_DIR/libagileos_cudart.so" \
    timeout 120 "$PROGRAMS_DIR/adversary_api" --fake-gpu || status=1
fi

echo "== adversary_wire --fake-gpu"
timeout 120 "$BIN_DIR/adversary_wire" --socket "$runtime_dir/agileosd.sock" \
  --fatbin-from "$PROGRAMS_DIR/adversary_api" --fake-gpu || status=1

if ! kill -0 "$daemon_pid" 2>/dev/null; then
  echo "FAIL: agileosd exited during the attacks"
  status=1
fi
if ((status != 0)); then
  echo "--- agileosd log (last lines)"
  tail -n 40 "$runtime_dir/agileosd.log"
fi
exit "$status"
