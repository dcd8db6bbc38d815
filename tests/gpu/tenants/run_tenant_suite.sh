#!/usr/bin/env bash
# run_tenant_suite.sh: issue 14's tenant checks on the GPU machine, every client in agileos-sandbox.
#
#   quotas     a daemon whose reserve leaves 100 GiB of the device to promise (less on a smaller
#              card: its memory less 16 GiB) and memory.quota_bytes 2/5 of that (40 GiB on the
#              H200): tenants A and B each see their quota as the device (cudaMemGetInfo),
#              take all of it, and are refused a byte more; tenant C waits in the admission queue
#              while A and B hold their memory (though worker slots are free), and is served with
#              its full quota once they leave;
#   endpoints  while A and B hold their workers, a third sandbox can connect to no worker socket;
#   queue      twelve clients against max_workers 6 all complete with the default wait; with
#              worker.queue_wait_ms 1500, the six that find no slot in time get the clear error.
#
# Usage: tests/gpu/tenants/run_tenant_suite.sh   (from the repository root, after tests/gpu/bundle.sh)
# Inputs (environment; defaults are the bundle's): AGILEOS_BIN_DIR, AGILEOS_SHIM_DIR,
# AGILEOS_DEPS_DIR, AGILEOS_TENANTS_DIR, OUT (tenants_summary.txt and tenants_logs.tar.gz go there).
# Exit status: 0 all passed, 1 a check failed, 77 no GPU.
# The daemons' start and stop, the library lookup and the reporting are tests/gpu/lib/harness.sh's.
set -uo pipefail
# shellcheck source=../lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

harness_bundle_dirs # bin_dir, shim_dir, deps_dir
tenants_dir="${AGILEOS_TENANTS_DIR:-$PWD/.bundle/tenants}"
out_dir="${OUT:-$PWD/gpu-suite-out}"
mkdir -p "$out_dir"
summary_init "$out_dir/tenants_summary.txt" # say, pass, fail, quote_tail write there
require_gpu # "SKIPPED: ..." and exit 77 without /dev/nvidia0 (before anything needs cleaning up)
runtime_dir="$(harness_runtime_dir agileos-tenants)"
logs="$(mktemp -d /tmp/agileos-tenants-logs.XXXXXX)"
tenant_pids=()
readonly GIB=$((1 << 30))

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  stop_daemon
  tar -czf "$out_dir/tenants_logs.tar.gz" -C "$logs" . 2>/dev/null
  rm -rf -- "$runtime_dir" "$runtime_dir-admin" "$logs"
  summary_line "tenant suite" # "tenant suite: N passed, M failed"
  ((failed == 0)) || harness_exit_status=1
}
harness_exit_trap finish

# The daemons get the bundled libraries and the driver's (not the CUDA runtime's).
driver_dir="$(cuda_driver_dir)"
daemon_path="$(harness_path_join "$deps_dir" "$driver_dir")"

# tenant_daemon NAME WORKER MEMORY: a daemon (log level info, at most 400 s) whose configuration
# adds the JSON fragments to its "worker" and "memory" sections; its log is $logs/agileosd.NAME.log.
tenant_daemon() {
  local name="$1" worker="$2" memory="$3"
  start_daemon --library-path "$daemon_path" --lifetime 400 --quote 20 "$name" \
    "$(daemon_config "$runtime_dir" info "\"worker\": {\"executable\": \"$bin_dir/agileos-worker\", $worker}" \
      "\"memory\": {$memory}" '"guard": {"cache_dir": ""}')" "$logs/agileosd.$name.log"
}

# tenant NAME ARGS...: tenant_memory in agileos-sandbox, in the background; output in $logs/NAME.*,
# its exit status in $logs/NAME.status when it ends. TENANT_PROGRAM names another program of the
# tenants directory.
tenant() {
  local name="$1"
  shift
  (
    LD_LIBRARY_PATH="$deps_dir" timeout --kill-after=5 180 "$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" \
      --shim "$shim_dir" ${deps_dir:+--lib-path "$deps_dir"} --keep "$tenants_dir" \
      -- "$tenants_dir/${TENANT_PROGRAM:-tenant_memory}" "$@" >"$logs/$name.out" 2>"$logs/$name.err" </dev/null
    echo $? >"$logs/$name.status"
  ) &
  tenant_pids+=($!)
}
# Waits for the tenants started so far (not for the daemon, which is a child too).
wait_tenants() {
  ((${#tenant_pids[@]} == 0)) || wait "${tenant_pids[@]}"
  tenant_pids=()
}
status_of() { cat "$logs/$1.status" 2>/dev/null || echo none; }

# ------------------------------------------------------------------ quotas

device_mib="$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -dc 0-9)"
if [[ -z "$device_mib" ]]; then
  fail "quotas: nvidia-smi did not report the device's memory"
else
  # Capacity 100 GiB (the H200), or what an 80 GiB card leaves after 16 GiB for the driver and the
  # other steps: two quotas of 2/5 of it fit, a third does not.
  device_bytes=$((device_mib * 1024 * 1024))
  capacity=$((100 * GIB))
  if ((device_bytes - 16 * GIB < capacity)); then capacity=$(((device_bytes - 16 * GIB) / GIB * GIB)); fi
  quota=$((capacity * 2 / 5 / (1 << 20) * (1 << 20)))
  reserve=$((device_bytes - capacity))
  quota_text="$((quota >> 20)) MiB" capacity_text="$((capacity / GIB)) GiB"
  say "== quotas: device ${device_mib} MiB, quota $quota_text each, capacity $capacity_text, reserve $((reserve >> 20)) MiB"
  if tenant_daemon quotas '"prestart": 2, "max_workers": 6' "\"quota_bytes\": $quota, \"reserve_bytes\": $reserve"; then
    tenant A --alloc-all --more $((2 << 20)) --hold 12
    tenant B --alloc-all --more $((2 << 20)) --hold 12
    if wait_for_line "$logs/A.out" "tenant: holding" 90 && wait_for_line "$logs/B.out" "tenant: holding" 90; then
      tenant C --alloc-all --hold 1
      # A and B hold their workers: a third sandbox (its own uid) can connect to none of the
      # workers' sockets (A's and B's belong to their uids, the spares' to their worker uids, all 0600).
      mapfile -t worker_sockets < <(find "$runtime_dir" -maxdepth 2 -type s -path '*/worker-*/*')
      LD_LIBRARY_PATH="$deps_dir" timeout 60 "$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" \
        --shim "$shim_dir" ${deps_dir:+--lib-path "$deps_dir"} --keep "$bin_dir" \
        -- "$bin_dir/sandbox_probe" "${worker_sockets[@]}" >"$logs/probe.out" 2>"$logs/probe.err" </dev/null
      if grep -q "^probe: all [0-9]* attempts blocked$" "$logs/probe.out" && ((${#worker_sockets[@]} >= 4)) &&
        (($(grep -c "^connect .*: blocked (Permission denied)" "$logs/probe.out") == ${#worker_sockets[@]})); then
        pass "endpoints: another sandbox cannot connect to any of the ${#worker_sockets[@]} worker sockets (A's, B's, the spares'): Permission denied"
      else
        fail "endpoints: a sandbox reached a worker socket that is not its own (${#worker_sockets[@]} sockets)"
        quote_tail "$logs/probe.out" 30
      fi
      sleep 3
      if grep -q "tenant: total" "$logs/C.out" 2>/dev/null; then
        fail "quotas: tenant C was served while A and B held the capacity"
      else
        pass "quotas: tenant C waits while A and B hold $((2 * quota >> 20)) MiB of the $capacity_text that can be promised"
      fi
    else
      fail "quotas: tenants A and B did not get to hold their memory"
    fi
    wait_tenants
    for name in A B C; do
      say "  $name (exit $(status_of "$name")): $(grep -E '^tenant: (total|allocated|more|FAILED)' "$logs/$name.out" 2>/dev/null | tr '\n' ';')"
      allocated="$(sed -n 's/^tenant: allocated //p' "$logs/$name.out" 2>/dev/null)"
      if [[ "$(status_of "$name")" == 0 ]] && grep -qx "tenant: total=$quota free=[0-9]*" "$logs/$name.out" &&
        [[ -n "$allocated" ]] && ((allocated >= quota - 8 * (1 << 20))); then
        pass "quotas: tenant $name sees its $quota_text quota as the device and gets it ($((allocated / 1024 / 1024)) MiB)"
      else
        fail "quotas: tenant $name (exit $(status_of "$name"), allocated ${allocated:-nothing})"
        quote_tail "$logs/$name.out"
        quote_tail "$logs/$name.err"
      fi
    done
    for name in A B; do
      if grep -q "^tenant: more refused (cudaErrorMemoryAllocation)" "$logs/$name.out"; then
        pass "quotas: tenant $name is refused 2 MiB beyond its quota (cudaErrorMemoryAllocation)"
      else
        fail "quotas: tenant $name was not refused memory beyond its quota"
      fi
    done
    if grep -qE "waits: the memory of device [0-9]+ is promised to other clients" "$logs/agileosd.quotas.log"; then
      pass "quotas: the daemon says why C waits ($(grep -m1 -o "waits: .*" "$logs/agileosd.quotas.log"))"
    else
      fail "quotas: the daemon's log does not say why C waited"
    fi
  fi
fi

# ------------------------------------------------------------------ the driver's share, pinned memory

# What the driver really sets aside for raised limits, natively (the worker charges estimates:
# worker/driver_limit_cost.h); recorded for comparison, not checked.
if timeout 60 "$tenants_dir/tenant_limits" --native-probe >"$logs/native_probe.out" 2>&1; then
  while read -r line; do say "  native $line"; done < <(grep '^probe:' "$logs/native_probe.out")
fi
say "== limits: quota 8 GiB; memory.pinned_total_bytes 4 GiB, 1 GiB per client"
if tenant_daemon limits '"prestart": 1, "max_workers": 4' \
  "\"quota_bytes\": $((8 * GIB)), \"pinned_total_bytes\": $((4 * GIB)), \"pinned_per_client_bytes\": $GIB"; then
  TENANT_PROGRAM=tenant_limits tenant L
  wait_tenants
  TENANT_PROGRAM=tenant_limits tenant P --pinned $GIB
  wait_tenants
  if [[ "$(status_of L)" == 0 ]] && grep -q "^limits: done, 0 failed" "$logs/L.out"; then
    pass "limits: a stack limit past the 8 GiB quota is refused, a 1 GiB bigger heap is charged and works, after cudaDeviceReset the charge is what the context still holds ($(grep -o "after reset .*" "$logs/L.out"))"
    pass "limits: a kernel whose local memory would grow the stack past the quota is refused ($(grep -o "64 KiB local memory -> .*" "$logs/L.out")); one that fits runs and its stack is charged ($(grep -o "16 KiB local memory: .*" "$logs/L.out"))"
    pass "limits: modules' global variables are charged: $(grep -o "modules with a 1 GiB global: .*" "$logs/L.out")"
  else
    fail "limits: context limits and the quota (exit $(status_of L))"
    quote_tail "$logs/L.out" 20
    quote_tail "$logs/L.err" 5
  fi
  if [[ "$(status_of P)" == 0 ]] && ! grep -q "^limits: FAILED" "$logs/P.out"; then
    pass "limits: the client's 1 GiB share of pinned host memory bounds cudaMallocHost ($(grep -o 'pinned 1/2 more -> .*' "$logs/P.out"))"
  else
    fail "limits: the pinned host share (exit $(status_of P))"
    quote_tail "$logs/P.out" 10
    quote_tail "$logs/P.err" 5
  fi
  if grep -q "pinned host memory: $((4 * GIB)) bytes for all clients, $GIB per client" "$logs/agileosd.limits.log"; then
    pass "limits: the daemon reports its pinned host budget"
  else
    fail "limits: the daemon did not report the configured pinned host budget"
  fi
fi

# ------------------------------------------------------------------ the admission queue

say "== queue: twelve clients, max_workers 6, the default wait"
if tenant_daemon queue '"prestart": 2, "max_workers": 6' '"quota_bytes": 0'; then
  for i in $(seq 1 12); do tenant "q$i" --alloc $GIB --hold 3; done
  wait_tenants
  completed=0
  for i in $(seq 1 12); do [[ "$(status_of "q$i")" == 0 ]] && completed=$((completed + 1)); done
  if ((completed == 12)); then
    pass "queue: all 12 clients completed with the default wait (worker.queue_wait_ms 60000)"
  else
    fail "queue: $completed of 12 clients completed"
    for i in $(seq 1 12); do [[ "$(status_of "q$i")" == 0 ]] || { quote_tail "$logs/q$i.out" 3; quote_tail "$logs/q$i.err" 3; }; done
  fi
fi

say "== queue: twelve clients, max_workers 6, worker.queue_wait_ms 1500"
if tenant_daemon short '"prestart": 6, "max_workers": 6, "queue_wait_ms": 1500' '"quota_bytes": 0'; then
  for i in $(seq 1 12); do tenant "s$i" --alloc $GIB --hold 8; done
  wait_tenants
  completed=0
  refused=0
  for i in $(seq 1 12); do
    if [[ "$(status_of "s$i")" == 0 ]]; then
      completed=$((completed + 1))
    elif grep -q "no worker slot became free within" "$logs/s$i.err" "$logs/s$i.out" 2>/dev/null; then
      refused=$((refused + 1))
      [[ -n "${refusal_line:-}" ]] || refusal_line="$(grep -h -m1 -o "no worker slot became free within.*" "$logs/s$i.err" "$logs/s$i.out" | head -1)"
    fi
  done
  if ((completed == 6 && refused == 6)); then
    pass "queue: with a 1.5 s wait, 6 completed and the other 6 got the clear error (${refusal_line:-})"
  else
    fail "queue: with a 1.5 s wait, $completed completed and $refused got the error (expected 6 and 6)"
    for i in $(seq 1 12); do [[ "$(status_of "s$i")" == 0 ]] || { quote_tail "$logs/s$i.err" 3; }; done
  fi
fi
