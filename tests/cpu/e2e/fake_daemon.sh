# Sourced by the CPU end-to-end scripts: start_fake_daemon BIN_DIR [EXTRA_JSON] starts agileosd
# with fake-GPU workers in a fresh directory ($dir, removed at exit with the daemon stopped),
# EXTRA_JSON being further top-level config members (",\n  \"modules\": {...}"; @DIR@ in it
# stands for $dir; WORKER_EXTRA adds members to the worker object). On return the
# daemon listens, $daemon is its pid and AGILEOS_SOCKET points at it (FAKE_WORKER names another
# fake worker executable, e.g. agileos-worker-fake-sass); the preloaded shim may
# bring a sanitizer runtime in after the program, which ASAN_OPTIONS allows.
start_fake_daemon() {
  local bin=$1 extra=${2:-}
  dir=$(mktemp -d /tmp/agileos-e2e.XXXXXX)
  extra=${extra//@DIR@/$dir}
  trap 'stop_fake_daemon' EXIT
  # As root, the workers run as uids of their own (privileges, the daemon's default) when the
  # build tree is reachable by such a uid; otherwise the run says why they do not.
  local privileges=false
  if ((EUID == 0)); then
    if setpriv --reuid=199100 --regid=199100 --clear-groups test -x "$bin/${FAKE_WORKER:-agileos-worker-fake}" 2>/dev/null; then
      privileges=true
      chmod 755 "$dir"
    else
      echo "fake_daemon: workers run as root: $bin is not reachable by an unprivileged uid"
    fi
  fi
  cat >"$dir/config.json" <<JSON
{
  "socket_path": "$dir/run/agileosd.sock",
  "runtime_dir": "$dir/run",
  "log_level": "info",
  "privileges": {"enabled": $privileges},
  "guard": {"cache_dir": "$dir/module-cache"},
  "worker": {"executable": "${FAKE_WORKER:-agileos-worker-fake}", "prestart": 1, "max_workers": 3${WORKER_EXTRA:-}}$extra
}
JSON
  "$bin/agileosd" --config "$dir/config.json" >"$dir/daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do [[ -S $dir/run/agileosd.sock ]] && break; sleep 0.1; done
  [[ -S $dir/run/agileosd.sock ]] || { cat "$dir/daemon.log"; echo "agileosd did not start"; exit 1; }
  export AGILEOS_SOCKET=$dir/run/agileosd.sock
  export ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0
}

stop_fake_daemon() {
  [[ -n ${daemon:-} ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$dir"
}
