#!/usr/bin/env bash
# run_operator_suite.sh: issue 18's operator checks on the GPU machine, against real workers on the
# H200, every client in agileos-sandbox (no device nodes, no CUDA libraries):
#   - agileosctl lists a running client with the device memory it holds (a tenant holding 4 GiB),
#     its kernel-attested uid and pid, and its worker on device 0;
#   - a metrics scrape before and during the run shows the counters move (sessions, calls,
#     bytes copied, memory held), and after it the session's end;
#   - health answers SERVING on both sockets; an administrator ends a session and drains a worker,
#     both in the audit trail; a non-administrator is refused.
#
# Usage: tests/gpu/operator/run_operator_suite.sh   (from the repository root, after tests/gpu/bundle.sh)
# Inputs (environment; defaults are the bundle's): AGILEOS_BIN_DIR, AGILEOS_SHIM_DIR,
# AGILEOS_DEPS_DIR, AGILEOS_TENANTS_DIR, OUT (operator_summary.txt and operator_logs.tar.gz go there).
# Exit status: 0 all passed, 1 a check failed, 77 no GPU.
set -uo pipefail
# shellcheck source=../lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

harness_bundle_dirs # bin_dir, shim_dir, deps_dir
tenants_dir="${AGILEOS_TENANTS_DIR:-$PWD/.bundle/tenants}"
out_dir="${OUT:-$PWD/gpu-suite-out}"
mkdir -p "$out_dir"
summary_init "$out_dir/operator_summary.txt" # say, pass, fail, quote_tail write there
require_gpu
runtime_dir="$(harness_runtime_dir agileos-operator)"
logs="$(mktemp -d /tmp/agileos-operator-logs.XXXXXX)"
tenant_pid=""

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  [[ -n "$tenant_pid" ]] && kill "$tenant_pid" 2>/dev/null
  stop_daemon
  tar -czf "$out_dir/operator_logs.tar.gz" -C "$logs" . 2>/dev/null
  rm -rf -- "$runtime_dir" "$runtime_dir-admin" "$logs"
  summary_line "operator suite"
  ((failed == 0)) || harness_exit_status=1
}
harness_exit_trap finish

driver_dir="$(cuda_driver_dir)"
daemon_path="$(harness_path_join "$deps_dir" "$driver_dir")"
ctl=("$bin_dir/agileosctl" --socket "$runtime_dir-admin/admin.sock")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 19464)

check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then pass "operator: $what"; else fail "operator: $what"; fi
}
scrape() { # scrape FILE: the /metrics text (python3's HTTP client; curl where there is no python)
  if command -v python3 >/dev/null; then
    python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=10).read().decode())" >"$1"
  else
    curl -s "http://127.0.0.1:$port/metrics" >"$1"
  fi
}
metric() { # metric FILE NAME[{LABELS}]: its value, 0 if absent
  METRIC=$2 awk '$1 == ENVIRON["METRIC"] { print $2; found = 1 } END { if (!found) print 0 }' "$1"
}
greater() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }
wait_for() { # wait_for SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

say "== operator: agileosctl, metrics, health and the audit trail against real workers"
start_daemon --library-path "$daemon_path" --lifetime 240 --quote 20 operator \
  "$(daemon_config "$runtime_dir" info "\"worker\": {\"executable\": \"$bin_dir/agileos-worker\", \"prestart\": 2, \"max_workers\": 4}" \
    "\"metrics\": {\"listen\": \"127.0.0.1:$port\"}" "\"audit_log\": \"$logs/audit.log\"" '"guard": {"cache_dir": ""}')" \
  "$logs/agileosd.log" || exit 1
check "health of the admin socket" bash -c "[[ \$(LD_LIBRARY_PATH='$deps_dir' ${ctl[*]} health) == SERVING ]]"
check "health of the clients' socket" bash -c "[[ \$(LD_LIBRARY_PATH='$deps_dir' ${ctl[*]} health --of '$daemon_socket') == SERVING ]]"
wait_for 60 bash -c "LD_LIBRARY_PATH='$deps_dir' ${ctl[*]} --json workers | grep -q '\"ready\"'"
scrape "$logs/scrape.before"

# A tenant that holds 4 GiB for 20 s inside the sandbox.
(
  LD_LIBRARY_PATH="$deps_dir" timeout --kill-after=5 120 "$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" \
    --shim "$shim_dir" ${deps_dir:+--lib-path "$deps_dir"} --keep "$tenants_dir" \
    -- "$tenants_dir/tenant_memory" --alloc $((4 << 30)) --hold 20 >"$logs/tenant.out" 2>"$logs/tenant.err" </dev/null
  echo $? >"$logs/tenant.status"
) &
tenant_pid=$!
check "the tenant holds its memory" wait_for 60 grep -q "tenant: holding" "$logs/tenant.out"
listed() {
  LD_LIBRARY_PATH="$deps_dir" "${ctl[@]}" --json clients >"$logs/clients.json" &&
    python3 -c "import json, sys; d = json.load(open('$logs/clients.json')); sys.exit(0 if any(c['state'] == 'attached' and int(c['device_memory_bytes']) >= (4 << 30) and c.get('device', -1) == 0 for c in d['clients']) else 1)"
}
check "agileosctl lists the running client with its 4 GiB on device 0" wait_for 20 listed
cp "$logs/clients.json" "$out_dir/operator_clients.json" 2>/dev/null
LD_LIBRARY_PATH="$deps_dir" "${ctl[@]}" status >"$logs/status.txt" 2>&1
quote "$logs/status.txt" 12
check "the table shows 4.0 GiB" grep -q "4.0 GiB" "$logs/status.txt"
scrape "$logs/scrape.during"
check "metrics: a session now" greater "$(metric "$logs/scrape.during" agileos_sessions)" 0
check "metrics: sessions_started_total moved" \
  greater "$(metric "$logs/scrape.during" agileos_sessions_started_total)" "$(metric "$logs/scrape.before" agileos_sessions_started_total)"
check "metrics: mem_alloc calls moved" \
  greater "$(metric "$logs/scrape.during" 'agileos_calls_total{operation="mem_alloc"}')" "$(metric "$logs/scrape.before" 'agileos_calls_total{operation="mem_alloc"}')"
check "metrics: device memory held on device 0 (4 GiB)" \
  greater "$(metric "$logs/scrape.during" 'agileos_device_memory_held_bytes{device="0"}')" $(((4 << 30) - 1))
grep -E '^agileos_(sessions|calls_total|bytes_copied_total|device_memory_held_bytes|workers)' "$logs/scrape.during" |
  head -30 >"$out_dir/operator_scrape_during.txt"

client_id=$(python3 -c "import json; d = json.load(open('$logs/clients.json')); print([c['id'] for c in d['clients'] if c['state'] == 'attached'][0])" 2>/dev/null)
check "an administrator ends the session" env LD_LIBRARY_PATH="$deps_dir" "${ctl[@]}" end "$client_id" --reason "operator suite"
wait "$tenant_pid" 2>/dev/null
tenant_pid=""
check "the tenant's session ended early (it did not finish its hold)" bash -c "! grep -q 'tenant: done' '$logs/tenant.out'"
spare=$(LD_LIBRARY_PATH="$deps_dir" "${ctl[@]}" --json workers |
  python3 -c "import json, sys; d = json.load(sys.stdin); print([w['id'] for w in d['workers'] if w['phase'] == 'ready' and not w.get('clients')][0])" 2>/dev/null)
check "an administrator drains a spare" env LD_LIBRARY_PATH="$deps_dir" "${ctl[@]}" drain "$spare" --reason "operator suite"
check "audit: the end and the drain, with the administrator's uid" \
  bash -c "grep -q '\"end_session\"' '$logs/audit.log' && grep -q '\"worker_drained\"' '$logs/audit.log'"
if command -v setpriv >/dev/null; then
  check "a non-administrator is refused" bash -c "! LD_LIBRARY_PATH='$deps_dir' setpriv --reuid=65534 --regid=65534 --clear-groups ${ctl[*]} clients"
fi
scrape "$logs/scrape.after"
check "metrics: the session ended (by an administrator)" \
  greater "$(metric "$logs/scrape.after" agileos_sessions_ended_by_admin_total)" 0
check "agileosd is still running" daemon_alive
