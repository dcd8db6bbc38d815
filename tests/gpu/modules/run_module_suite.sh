#!/usr/bin/env bash
# run_module_suite.sh: the protected-module GPU tests (issue 5). Runs on the GPU machine, from the
# repository root, against the bundle (tests/gpu/bundle.sh); run_suite.sh calls it as a step.
#
# Usage: tests/gpu/modules/run_module_suite.sh [--bench]
#   --bench  also run the storage benchmark (host pread + cudaMemcpy natively, then the storage
#            module under AgileOS) and write $OUT/storage_bench.txt
#
# Starts its own agileosd (a module pool with kvstore, queue, storage and two admission decoys,
# and the storage service over a root directory that the sandboxed clients cannot see), then:
#   kvstore_absent_native / kvstore_absent_agileos  placeholders return ENOSYS without the module
#   kvstore            device functions and host control (incl. refusals before the plugin)
#   attack_trap_read / attack_trap_write / attack_poison_write
#                      a kernel that computes the module state's address is stopped by the guard
#                      (trap: it faults; poison: redirected to the quarantine, the client poisoned)
#   admission_*        a module not in the pool, not allowed, a wrong version, a dependency the
#                      policy does not allow: the session is refused naming the reason
#   storage            GPU-initiated reads of the file, compared byte for byte
#   storage_kill       a client killed mid-I/O; storage_after_kill: its lease was revoked and the
#                      service serves the next client
#   service_restart    the daemon restarts a killed service; a new client is served
#   replies_clean      no reply of the kvstore or storage sessions carries a protected address, a
#                      service socket, a device path or a descriptor-passing marker
#   service_failed     (last) once the daemon has given up on the killed-again storage service, a
#                      client asking for storage is refused naming it; service_failed_others: a
#                      kvstore client is still served
# Every client runs in agileos-sandbox. Writes $OUT/modules_summary.txt as it goes, ending with
# "modules: N passed, M failed"; exit status 0 only if nothing failed, 77 without a GPU. Stops the
# daemon (trap). The daemon's start and stop, the library lookup and the reporting are
# tests/gpu/lib/harness.sh's.
set -uo pipefail
# shellcheck source=../lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

readonly TIMEOUT_S=90
harness_bundle_dirs # bin_dir, shim_dir, deps_dir
modules_dir="${AGILEOS_MODULES_DIR:-$PWD/.bundle/modules}"
programs_dir="${AGILEOS_MODULE_PROGRAMS_DIR:-$PWD/.bundle/module-programs}"
bench_program="${AGILEOS_STORAGE_BENCH:-$PWD/.bundle/bench/agileos_storage_bench}"
out_dir="${OUT:-$PWD/gpu-suite-out}"
suite_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_bench=0
[[ "${1:-}" == "--bench" ]] && run_bench=1
export AGILEOS_LOG="${AGILEOS_LOG:-warn}"

mkdir -p "$out_dir"
summary_init "$out_dir/modules_summary.txt" # say, pass, fail, quote_tail write there
runtime_dir="$(harness_runtime_dir agileos-modules)"
logs="$runtime_dir/logs"
files="$runtime_dir/files"
traces="$runtime_dir/traces"
mkdir -p "$logs" "$files" "$traces"
chmod 1777 "$traces" # written by the clients, each as its sandbox's unprivileged uid
file_bytes=$((48 * 1024 * 1024 + 12345))

# The programs run natively with the driver's directory first, then the CUDA runtime's.
driver_dir="$(cuda_driver_dir)"
cudart_dir="$(cuda_runtime_dir)"
native_path="$(harness_path_join "$driver_dir" "$cudart_dir")"
daemon_path="$(harness_path_join "$deps_dir" "$native_path")"

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  stop_daemon
  if pgrep -f "agileos-storage-service --root $files" >/dev/null; then
    fail "service_stopped: a storage service outlived the daemon"
    pkill -KILL -f "agileos-storage-service --root $files"
  fi
  tar -czf "$out_dir/modules_logs.tar.gz" -C "$runtime_dir" logs 2>/dev/null
  rm -rf -- "$runtime_dir" "$runtime_dir-services" "$runtime_dir-admin"
}
harness_exit_trap finish

# ------------------------------------------------------------------ set-up

require_gpu # "SKIPPED: ..." and exit 77 without /dev/nvidia0
LD_LIBRARY_PATH="$native_path" timeout 60 "$programs_dir/module_storage" --make-file "$files/data.bin" "$file_bytes" \
  || { fail "setup: cannot write the test file"; exit 1; }
ln -s /etc/passwd "$files/escape-link"
mkdir "$files/subdir"
# The storage service runs as services[0]'s uid (privileges.service_uid_base + 0): its root is
# that uid's (docs/operations.md, "Privilege separation").
storage_uid=199000
chown -hR "$storage_uid:$storage_uid" "$files"

# The daemon: the module pool, its policy and the storage service (log level info, at most 900 s).
daemon_sections="$(
  cat <<JSON
"privileges": {"service_uid_base": $storage_uid},
  "worker": {"executable": "$bin_dir/agileos-worker", "prestart": 1, "max_workers": 6},
  "guard": {"policy": "trap", "allowed_policies": ["poison"], "cache_dir": ""},
  "modules": {
    "pool": [
      {"name": "queue", "version": "1.0.3", "ptx": "$modules_dir/queue.ptx"},
      {"name": "kvstore", "version": "1.2.0", "ptx": "$modules_dir/kvstore.ptx",
       "host_library": "$modules_dir/libkvstore.so"},
      {"name": "storage", "version": "1.0.0", "depends": [{"name": "queue", "version": "^1.0"}],
       "ptx": "$modules_dir/storage.ptx", "host_library": "$modules_dir/libstorage.so", "service": "storage"},
      {"name": "hidden", "version": "1.0.0", "ptx": "$modules_dir/queue.ptx"},
      {"name": "needs_hidden", "version": "1.0.0", "depends": [{"name": "hidden"}], "ptx": "$modules_dir/queue.ptx"}
    ],
    "allowed": ["queue", "kvstore", "storage", "needs_hidden"]
  },
  "services": [
    {"name": "storage", "executable": "$bin_dir/agileos-storage-service", "args": ["--root", "$files"],
     "max_restarts": 5, "restart_window_s": 60}
  ]
JSON
)"
start_daemon --library-path "$daemon_path" --lifetime 900 --quote 15 \
  --tail-file "$out_dir/modules_daemon.log.tail" --tail-lines 300 \
  daemon "$(daemon_config "$runtime_dir" info "$daemon_sections")" "$logs/agileosd.log" || exit 1
say "daemon: listening; services: $(ls "$runtime_dir-services" 2>/dev/null | tr '\n' ' ')"

# run_client NAME ENV... -- PROGRAM ARGS...: in agileos-sandbox, output in $logs/NAME.{out,err}.
run_client() {
  local name="$1"
  shift
  local environment=()
  while [[ "$1" != "--" ]]; do environment+=("$1"); shift; done
  shift
  local sandbox=("$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" --shim "$shim_dir" --keep "$programs_dir"
    --keep "$bin_dir" --keep "$(dirname "$bench_program")" --keep-rw "$traces")
  [[ -n "$deps_dir" ]] && sandbox+=(--lib-path "$deps_dir")
  env "${environment[@]}" timeout --kill-after=5 "$TIMEOUT_S" "${sandbox[@]}" -- "$@" \
    >"$logs/$name.out" 2>"$logs/$name.err" </dev/null
  client_status=$?
}

expect_success() {  # NAME PATTERN: status 0 and PATTERN in stdout
  if ((client_status == 0)) && grep -qE "$2" "$logs/$1.out"; then
    pass "$1: $(grep -E "$2" "$logs/$1.out" | head -1)"
  else
    fail "$1: status $client_status"
    quote_tail "$logs/$1.out" 15
    quote_tail "$logs/$1.err" 15
  fi
}

# ------------------------------------------------------------------ kvstore

LD_LIBRARY_PATH="$native_path" timeout "$TIMEOUT_S" "$programs_dir/module_kvstore" --expect-absent \
  >"$logs/kvstore_absent_native.out" 2>"$logs/kvstore_absent_native.err" </dev/null
client_status=$?
expect_success kvstore_absent_native 'absent: OK'

run_client kvstore_absent_agileos -- "$programs_dir/module_kvstore" --expect-absent
expect_success kvstore_absent_agileos 'absent: OK'

run_client kvstore "AGILEOS_MODULES=kvstore@^1.2" "AGILEOS_TRACE_REPLIES=$traces/kvstore.bin" -- \
  "$programs_dir/module_kvstore"
expect_success kvstore '^module_kvstore: OK'
grep -E '^(put|get|add|remove|refusals|stats|host get|control refusals|plugin saw)' "$logs/kvstore.out" \
  | sed 's/^/    /' | tee -a "$summary"

for mode in read write; do
  run_client "attack_trap_$mode" "AGILEOS_MODULES=kvstore" -- "$programs_dir/module_state_attack" "$mode"
  expect_success "attack_trap_$mode" "attack \\($mode\\) stopped"
done
# Under poison the accesses go to the quarantine and the client is poisoned (its later calls
# fail): the worker's log counts what it redirected.
run_client attack_poison_write "AGILEOS_MODULES=kvstore" "AGILEOS_GUARD_POLICY=poison" -- \
  "$programs_dir/module_state_attack" write
expect_success attack_poison_write 'attack \(write\) stopped'
grep -hoE 'redirected [0-9]+ access\(es\) to protected memory' "$logs/agileosd.log" | tail -1 | sed 's/^/    poison: /' \
  | tee -a "$summary"

# ------------------------------------------------------------------ admission

admission() {  # NAME REQUEST REASON-PATTERN
  run_client "admission_$1" "AGILEOS_MODULES=$2" -- "$programs_dir/module_kvstore" --expect-absent
  if ((client_status != 0)) && grep -qE "module admission: .*$3" "$logs/admission_$1.err" "$logs/admission_$1.out"; then
    pass "admission_$1: refused: $(grep -ohE "module admission: .*$3[^\"]*" "$logs/admission_$1.err" | head -1)"
  else
    fail "admission_$1: status $client_status, expected a refusal naming '$3'"
    quote_tail "$logs/admission_$1.err" 15
  fi
}
admission not_in_pool nosuch "not in the pool"
admission not_allowed hidden "not allowed by the policy"
admission wrong_version "kvstore@^2" "does not satisfy"
admission dependency needs_hidden "which the policy does not allow"

# ------------------------------------------------------------------ storage

run_client storage "AGILEOS_MODULES=storage" "AGILEOS_TRACE_REPLIES=$traces/storage.bin" -- \
  "$programs_dir/module_storage" data.bin "$file_bytes"
expect_success storage '^module_storage: OK'
grep -E '^(read|refusals|open|register|direct)' "$logs/storage.out" | sed 's/^/    /' | tee -a "$summary"

# A client killed while its reads are in flight.
setsid env AGILEOS_MODULES=storage timeout --kill-after=5 "$TIMEOUT_S" "$bin_dir/agileos-sandbox" \
  --socket-dir "$runtime_dir" --shim "$shim_dir" --keep "$programs_dir" --keep "$bin_dir" \
  ${deps_dir:+--lib-path "$deps_dir"} -- "$programs_dir/module_storage" --hold data.bin "$file_bytes" 60 \
  >"$logs/storage_kill.out" 2>"$logs/storage_kill.err" </dev/null &
hold_pid=$!
for _ in $(seq 1 300); do grep -q '^reading' "$logs/storage_kill.err" && break; sleep 0.1; done
if grep -q '^reading' "$logs/storage_kill.err"; then
  sleep 1.5
  kill -KILL -- "-$hold_pid" 2>/dev/null
  wait "$hold_pid" 2>/dev/null
  pass "storage_kill: client killed mid-I/O"
else
  kill -KILL -- "-$hold_pid" 2>/dev/null
  wait "$hold_pid" 2>/dev/null
  fail "storage_kill: the client never started reading"
  quote_tail "$logs/storage_kill.err" 15
fi
run_client storage_after_kill "AGILEOS_MODULES=storage" -- "$programs_dir/module_storage" --after-kill data.bin \
  "$file_bytes"
expect_success storage_after_kill 'the service still serves: 0 mismatches'
grep -h 'service stats' "$logs/storage_after_kill.err" | sed 's/^/    /' | tee -a "$summary"

service_pid="$(pgrep -f "agileos-storage-service --root $files" | head -1)"
if [[ -n "$service_pid" ]]; then
  kill -KILL "$service_pid"
  for _ in $(seq 1 100); do
    new_pid="$(pgrep -f "agileos-storage-service --root $files" | head -1)"
    [[ -n "$new_pid" && "$new_pid" != "$service_pid" ]] && break
    sleep 0.1
  done
  run_client service_restart "AGILEOS_MODULES=storage" -- "$programs_dir/module_storage" data.bin "$file_bytes"
  if [[ -n "${new_pid:-}" && "$new_pid" != "$service_pid" ]]; then
    expect_success service_restart '^module_storage: OK'
  else
    fail "service_restart: the daemon did not restart the storage service"
  fi
else
  fail "service_restart: no storage service process found"
fi

# ------------------------------------------------------------------ what clients saw

if python3 "$suite_dir/check_replies.py" --protected 0xEFF00000000 0xF8000000000 \
  --forbid "$runtime_dir-services" --forbid "service-storage" --forbid "/dev/nvidia" --forbid "memfd:" \
  --forbid "$files" "$traces/kvstore.bin" "$traces/storage.bin" >"$logs/replies.txt" 2>&1; then
  pass "replies_clean: $(tail -1 "$logs/replies.txt")"
else
  fail "replies_clean"
  quote_tail "$logs/replies.txt" 15
fi

# ------------------------------------------------------------------ benchmark

if ((run_bench)); then
  LD_LIBRARY_PATH="$native_path" timeout 120 "$bench_program" baseline "$files/data.bin" "$file_bytes" \
    >"$logs/bench_baseline.out" 2>"$logs/bench_baseline.err" </dev/null
  baseline_status=$?
  run_client bench_module "AGILEOS_MODULES=storage" -- "$bench_program" module data.bin "$file_bytes"
  if ((baseline_status == 0 && client_status == 0)); then
    python3 "$suite_dir/format_storage_bench.py" "$logs/bench_baseline.out" "$logs/bench_module.out" \
      >"$out_dir/storage_bench.txt"
    pass "storage_bench: $out_dir/storage_bench.txt"
    sed 's/^/    /' "$out_dir/storage_bench.txt" | tee -a "$summary"
  else
    fail "storage_bench: baseline $baseline_status, module $client_status"
    quote_tail "$logs/bench_baseline.err" 15
    quote_tail "$logs/bench_module.err" 15
  fi
fi

# ------------------------------------------------------------------ a service down for good (last:
# it takes the storage service away for the rest of the run)

# Kill the storage service until the daemon gives up on it (max_restarts 5 within 60 s; the
# service_restart step used one), then a client asking for storage is refused at once, naming the
# service, and a client of a module without a service is still served.
for _ in $(seq 1 8); do
  grep -q 'service storage .*it stays down' "$logs/agileosd.log" && break
  victim="$(pgrep -f "agileos-storage-service --root $files" | head -1)"
  [[ -n "$victim" ]] && kill -KILL "$victim"
  for _ in $(seq 1 60); do  # the restart backoff doubles up to 1.6 s here
    grep -q 'service storage .*it stays down' "$logs/agileosd.log" && break
    next="$(pgrep -f "agileos-storage-service --root $files" | head -1)"
    [[ -n "$next" && "$next" != "$victim" ]] && grep -q "service storage (pid $next): ready" "$logs/agileosd.log" && break
    sleep 0.1
  done
done
if grep -q 'service storage .*it stays down' "$logs/agileosd.log"; then
  run_client service_failed "AGILEOS_MODULES=storage" -- "$programs_dir/module_storage" data.bin "$file_bytes"
  reason="module 'storage' cannot be served: service 'storage' is down \\(failed"
  if ((client_status != 0)) && grep -qE "$reason" "$logs/service_failed.err" "$logs/service_failed.out"; then
    pass "service_failed: refused: $(grep -hoE "${reason}.*" "$logs/service_failed.err" "$logs/service_failed.out" | head -1)"
  else
    fail "service_failed: status $client_status, expected a refusal naming the failed service"
    quote_tail "$logs/service_failed.err" 15
  fi
  run_client service_failed_others "AGILEOS_MODULES=kvstore" -- "$programs_dir/module_kvstore"
  expect_success service_failed_others '^module_kvstore: OK'
else
  fail "service_failed: the daemon never marked the storage service failed"
  quote_tail "$logs/agileosd.log" 15
fi

summary_line modules # "modules: N passed, M failed"
((failed == 0))
