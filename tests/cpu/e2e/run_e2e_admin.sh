#!/usr/bin/env bash
# CPU end-to-end test of the admin API, agileosctl, the metrics endpoint and the audit trail, with
# fake-GPU workers. Usage: run_e2e_admin.sh BIN_DIR LIB_DIR HOLD_MEMORY_CLIENT AGILEOSCTL
set -euo pipefail
bin=$1 lib=$2 client=$3 ctl=$4
source "$(dirname "${BASH_SOURCE[0]}")/fake_daemon.sh"
# Two devices of the fake GPU host: a client that asks for one gets it, one that does not is
# placed by free capacity.
export WORKER_EXTRA=', "devices": [0, 1]'
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_fake_daemon "$bin" ",
  \"audit_log\": \"@DIR@/audit.log\",
  \"metrics\": {\"listen\": \"127.0.0.1:$port\"}"
admin=$dir/run-admin/admin.sock
failures=0
check() {  # check DESCRIPTION COMMAND...: runs the command, counts a failure
  local what=$1
  shift
  if "$@"; then echo "PASS $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}
scrape() { python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=10).read().decode())"; }
# metric NAME [LABELS]: the value of one sample of the last scrape (0 if absent).
metric() {
  local name=$1
  [[ -n ${2:-} ]] && name+="{$2}"
  METRIC=$name awk '$1 == ENVIRON["METRIC"] { print $2; found = 1 } END { if (!found) print 0 }' "$dir/scrape"
}
at_least() { python3 -c "import sys; sys.exit(0 if float('$1') >= float('$2') else 1)"; }
ctl() { "$ctl" --socket "$admin" "$@"; }
json_field() {  # json_field FILE PYTHON-EXPRESSION over `d`
  python3 -c "import json, sys; d = json.load(open('$1')); print($2)"
}
wait_for() {  # wait_for SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

for _ in $(seq 100); do [[ -S $admin ]] && break; sleep 0.1; done
check "the admin socket is root's, mode 0660, in a 0750 directory" \
  test "$(stat -c '%a %u' "$admin") $(stat -c '%a' "$dir/run-admin")" = "660 0 750"
check "health of the admin socket" test "$(ctl health)" = SERVING
check "health of the clients' socket" test "$(ctl health --of "$AGILEOS_SOCKET")" = SERVING

scrape >"$dir/scrape"
check "a first scrape: no session yet" test "$(metric agileos_sessions_started_total)" = 0

# A client that holds 64 MiB until told to release, or until its session is ended.
AGILEOS_DEVICE=1 LD_PRELOAD=$lib/libagileos_cudart.so "$client" "$dir/release" 67108864 >"$dir/client.log" 2>&1 &
client_pid=$!
check "the client holds its memory" wait_for 60 grep -q holding "$dir/client.log"
listed() {
  ctl --json clients >"$dir/clients.json" &&
    [[ $(json_field "$dir/clients.json" "[c['id'] for c in d['clients'] if c['state'] == 'attached' and int(c['device_memory_bytes']) >= 67108864]") != "[]" ]]
}
check "agileosctl lists the client with its memory (a usage report within seconds)" wait_for 20 listed
client_id=$(json_field "$dir/clients.json" "d['clients'][0]['id']")
check "the daemon serves both devices" test "$(json_field "$dir/clients.json" "d['devices']")" = "[0, 1]"
check "the client is on the device it asked for (AGILEOS_DEVICE=1)" \
  test "$(json_field "$dir/clients.json" "d['clients'][0]['device']")" = 1
check "the client's pid and uid are the kernel's" \
  test "$(json_field "$dir/clients.json" "(d['clients'][0]['pid'], d['clients'][0]['uid'])")" = "($client_pid, $EUID)"
check "the table shows the memory held" bash -c "'$ctl' --socket '$admin' clients | grep -q '64.0 MiB'"
check "status names the attached client" bash -c "'$ctl' --socket '$admin' status | grep -q '1 client(s) attached'"

scrape >"$dir/scrape"
check "metrics: one session" test "$(metric agileos_sessions)" = 1
check "metrics: the allocation was counted" at_least "$(metric agileos_calls_total 'operation="mem_alloc"')" 1
check "metrics: the 64 MiB copy was counted" \
  at_least "$(metric agileos_bytes_copied_total 'direction="host_to_device"')" 67108864
check "metrics: the memory is held on device 1" \
  at_least "$(metric agileos_device_memory_held_bytes 'device="1"')" 67108864
check "metrics: none on device 0" test "$(metric agileos_device_memory_held_bytes 'device="0"')" = 0
check "metrics: a ready worker on each device" \
  test "$(metric agileos_workers 'device="0",phase="ready"')$(metric agileos_workers 'device="1",phase="ready"')" != 00
check "metrics: call latency histogram" at_least "$(metric agileos_call_duration_seconds_count 'operation="mem_alloc"')" 1
check "metrics over the admin API equal in name" bash -c "'$ctl' --socket '$admin' metrics | grep -q '^agileos_sessions_started_total 1'"

check "an administrator ends the session" ctl end "$client_id" --reason "e2e test over"
client_status=0
wait "$client_pid" || client_status=$?
check "the client saw its session end (exit 3)" test "$client_status" = 3
grep -q "session over" "$dir/client.log" || { cat "$dir/client.log"; }
# A client that asks for a device the daemon does not serve is refused with the reason.
AGILEOS_DEVICE=3 LD_PRELOAD=$lib/libagileos_cudart.so "$client" "$dir/release" 4096 >"$dir/client3.log" 2>&1 || true
check "a device that is not served is refused" grep -q "device 3 is not served here" "$dir/client3.log"
check "ending an unknown session is refused" bash -c "! '$ctl' --socket '$admin' end 999999 2>/dev/null"

# Drain a worker that holds no client: it retires and a fresh spare replaces it.
spare_ready() {
  ctl --json workers >"$dir/workers.json" &&
    [[ $(json_field "$dir/workers.json" "[w['id'] for w in d['workers'] if w['phase'] == 'ready' and not w.get('clients')]") != "[]" ]]
}
check "a spare worker is ready" wait_for 30 spare_ready
spare=$(json_field "$dir/workers.json" "[w['id'] for w in d['workers'] if w['phase'] == 'ready' and not w.get('clients')][0]")
check "drain the spare" ctl drain "$spare" --reason "e2e drain"
replaced() {
  ctl --json workers >"$dir/workers.json" &&
    [[ $(json_field "$dir/workers.json" "[w['id'] for w in d['workers'] if w['id'] == '$spare' or w['id'] == $spare]") == "[]" ]] &&
    [[ $(json_field "$dir/workers.json" "[w['id'] for w in d['workers'] if w['phase'] == 'ready']") != "[]" ]]
}
check "the drained worker is gone and a new one is ready" wait_for 30 replaced
check "draining an unknown worker is refused" bash -c "! '$ctl' --socket '$admin' drain 999999 2>/dev/null"
check "reload-modules re-reads the file" ctl reload-modules

scrape >"$dir/scrape"
check "metrics: ended by an administrator" test "$(metric agileos_sessions_ended_by_admin_total)" = 1
check "metrics: one drain" test "$(metric agileos_worker_drains_total)" = 1
check "metrics: the session ended" test "$(metric agileos_sessions_ended_total)" = 1

check "audit: the end, with the administrator's uid" \
  grep -q "\"action\":\"end_session\".*\"uid\":$EUID\|\"uid\":$EUID.*\"action\":\"end_session\"" "$dir/audit.log"
check "audit: the drain" grep -q '"event":"worker_drained"' "$dir/audit.log"
check "audit: the session's end" grep -q '"event":"session_end"' "$dir/audit.log"

# Someone who is not an administrator: first the socket's mode stops them; with the mode opened
# up (as a mistake would), the check of the kernel's credentials still does.
if ((EUID == 0)) && command -v setpriv >/dev/null; then
  nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  check "a non-administrator cannot reach the admin socket" bash -c "! ${nobody[*]} '$ctl' --socket '$admin' clients 2>/dev/null"
  chmod 0755 "$dir" "$dir/run-admin"
  chmod 0666 "$admin"
  "${nobody[@]}" "$ctl" --socket "$admin" clients >"$dir/denied.log" 2>&1 || true
  check "with the socket opened up, the credential check refuses" grep -q "admin API is for root" "$dir/denied.log"
  ctl --json workers >"$dir/workers-before.json"
  victim=$(json_field "$dir/workers-before.json" "d['workers'][0]['id']")
  drains_before=$(grep -c '"action":"drain_worker"' "$dir/audit.log" || true)
  "${nobody[@]}" "$ctl" --socket "$admin" drain "$victim" >"$dir/denied.log" 2>&1 || true
  check "and refuses actions" grep -q "admin API is for root" "$dir/denied.log"
  ctl --json workers >"$dir/workers-after.json"
  check "the refused drain changed nothing" test "$(json_field "$dir/workers-after.json" "[w.get('draining', False) for w in d['workers'] if w['id'] == '$victim']")" = "[False]"
  check "and reached neither the pool nor the trail" test "$(grep -c '"action":"drain_worker"' "$dir/audit.log" || true)" = "$drains_before"
else
  echo "SKIP non-administrator checks: need root and setpriv"
fi
check "agileosd is alive" kill -0 "$daemon"

if ((failures)); then
  echo "--- daemon log"
  tail -60 "$dir/daemon.log"
  echo "--- client log"
  cat "$dir/client.log"
fi
echo "e2e_admin: $failures failure(s)"
exit $((failures != 0))
