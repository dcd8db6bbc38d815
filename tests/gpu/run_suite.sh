#!/usr/bin/env bash
# run_suite.sh: the AgileOS GPU suite. Runs on the GPU machine, from the repository root.
#
# Usage: tests/gpu/run_suite.sh [--native-only] [FILTER]
#   FILTER         an extended regular expression; only the steps whose name matches run
#                  (program names, sandbox_probe, concurrent_adversary_api, adversary_cufft, adversary_wire,
#                  guard_escape, tensor_map_premises, nvrtc_cubin_guard, nvrtc_jail, protected_modules, tenants, tenant_matrix,
#                  service_after_attacks, pytorch, samples), e.g. 'matmul|adversary'.
#   --native-only  run the CUDA programs (and the guard escape routes) natively only
#                  (validates the programs on a new machine; no daemon, no sandbox).
#
# Steps:
#   1. checks that there is a GPU (exit 77 "SKIPPED: ..." if /dev/nvidia0 is absent);
#   2. starts agileosd (setsid, config and sockets in a fresh runtime dir under /tmp);
#   3. runs every CUDA program natively and through AgileOS inside agileos-sandbox, and
#      compares stdout and exit status exactly;
#   4. sandbox proof: sandbox_probe must find every way to the GPU blocked inside the
#      sandbox, and must open the device outside it; inside, it runs as an unprivileged uid and
#      reads neither the module cache, the services' directory nor (with /etc kept) /etc/shadow;
#      sandbox_start: 30 starts of /bin/true natively, with the shim, and in the sandbox (p50/p99,
#      reported);
#   5. adversary_api in one sandbox while matmul_tiled runs in another: both must pass;
#      adversary_cufft (the cuFFT adapter's refusals) under AgileOS;
#   6. adversary_wire, a raw gRPC client, against the daemon and its worker;
#   7. guard_escape: the kernel memory guard's escape suite (guard/run_escape_suite.sh): every
#      route natively and under each guard policy; needs the daemon's "guard" section to allow
#      all five policies and the worker argument --test-guard-canary (and, for its trusted_body_*
#      routes, kvstore in the daemon's module pool: added when AGILEOS_MODULES_DIR has it);
#      tensor_map_premises: the hardware premises of tensor copies, measured natively;
#   8. nvrtc_cubin_guard: an NVRTC CUBIN aimed at protected memory is stopped by the guard;
#      nvrtc_jail: a secret planted on the worker's side stays out of every NVRTC output;
#   9. protected_modules: tests/gpu/modules/run_module_suite.sh (its own daemon with the module
#      pool and the storage service; AGILEOS_MODULE_SUITE_ARGS=--bench adds the storage benchmark);
#  10. tenants: tests/gpu/tenants/run_tenant_suite.sh (quotas and cudaMemGetInfo, capacity
#      admission, twelve clients against six slots with the default and a short queue wait);
#  11. tenant_matrix: tests/gpu/tenants/two_tenant_matrix.sh (its own daemon, at most 200 s): the
#      two-tenant matrix of seed 002, rows 2G-01..2G-09 (two tenants side by side: payloads,
#      quotas, address and handle collisions, cross-talk, ownership, faults, kill -9, 20 start/stop
#      cycles, and the residue probe: a new client sees none of a previous client's memory);
#  12. the daemon is still alive and still serves a new client;
#  13. on a daemon of the default configuration (the libraries carry SASS only): the programs
#      that use the real cuBLAS, compared like the others, and pytorch: the installed torch
#      (AGILEOS_TORCH_PYTHON, else a virtual environment under /opt/torch; SKIP without one)
#      trains tests/gpu/pytorch/train_small.py natively and in the sandbox, losses equal within
#      1e-5 and step times reported;
#  14. samples: NVIDIA's cuda-samples (tests/gpu/samples/run_samples.sh, its own two daemons) with
#      what is left of the budget, at most AGILEOS_SUITE_SAMPLES_S (120) s; the whole list needs
#      a call of its own (tests/gpu/samples/run_samples.sh, about 560 s);
#   and on exit stops the daemon (trap), whatever happened.
# The daemon's start and stop, the library lookup and the reporting are tests/gpu/lib/harness.sh's.
#
# Inputs (environment; the defaults are the bundle made by tests/gpu/bundle.sh):
#   AGILEOS_BIN_DIR       agileosd, agileos-worker, agileos-sandbox, sandbox_probe,
#                         adversary_wire                            (.bundle/bin)
#   AGILEOS_SHIM_DIR      libagileos_cudart.so                      (.bundle/shim)
#   AGILEOS_DEPS_DIR      bundled libraries, may be empty          (.bundle/deps)
#   AGILEOS_PROGRAMS_DIR  the CUDA programs and adversary_api      (.bundle/programs)
#   AGILEOS_STATIC_PROGRAMS_DIR  the same programs with the CUDA runtime linked in (nvcc's
#                         default), <name>_static; compared with native like the others
#                         (.bundle/programs-static, unpacked from .bundle/programs-static.tar.gz)
#   AGILEOS_GUARD_DIR     guard_escape                              (.bundle/guard)
#   AGILEOS_MODULES_DIR   kvstore.ptx and libkvstore.so, for guard_escape's clients admitted
#                         with kvstore                              (.bundle/modules)
#   AGILEOS_SUITE_BUDGET_S  seconds after which remaining steps are not started (480)
#   AGILEOS_SUITE_SKIP    an extended regular expression: the steps whose name matches do not run
#                         (with FILTER, one device call can run what another skipped: the whole
#                         suite no longer fits one 560 s call)
#   AGILEOS_WORKER_ARGS   extra worker arguments, space-separated
#   AGILEOS_GUARD_POLICY  the daemon's default kernel memory guard policy (trap); every policy
#                         is allowed, so that guard_escape can ask for each
#   AGILEOS_LOG           the clients' log level (warn)
#   AGILEOS_TORCH_PYTHON  the python of an environment with torch (default: found under /opt/torch)
#   OUT                   where summary.txt, logs.tar.gz and daemon.log.tail go
#                         (./gpu-suite-out)
#
# Output: $OUT/summary.txt, written as the suite goes, ending with the line
# "N passed, M failed". Exit status 0 only if nothing failed.
set -uo pipefail
# shellcheck source=lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"

readonly PROGRAM_TIMEOUT_S=120
readonly START_SECONDS=$SECONDS

native_only=0
filter=""
for argument in "$@"; do
  case "$argument" in
    --native-only) native_only=1 ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) filter="$argument" ;;
  esac
done

harness_bundle_dirs # bin_dir, shim_dir, deps_dir
programs_dir="${AGILEOS_PROGRAMS_DIR:-$PWD/.bundle/programs}"
guard_dir="${AGILEOS_GUARD_DIR:-$PWD/.bundle/guard}"
static_programs_dir="${AGILEOS_STATIC_PROGRAMS_DIR:-$PWD/.bundle/programs-static}"
if [[ -z "${AGILEOS_STATIC_PROGRAMS_DIR:-}" && -f "$PWD/.bundle/programs-static.tar.gz" ]]; then
  rm -rf -- "$static_programs_dir"
  mkdir -p "$static_programs_dir"
  tar -xzf "$PWD/.bundle/programs-static.tar.gz" -C "$static_programs_dir"
fi
modules_dir="${AGILEOS_MODULES_DIR:-$PWD/.bundle/modules}"
suite_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
budget_s="${AGILEOS_SUITE_BUDGET_S:-480}"
out_dir="${OUT:-$PWD/gpu-suite-out}"
export AGILEOS_LOG="${AGILEOS_LOG:-warn}"

mkdir -p "$out_dir"
summary_init "$out_dir/summary.txt" # say, pass, fail, quote (a file's first lines) write there
logs="$(mktemp -d /tmp/agileos-suite-logs.XXXXXX)"
runtime_dir=""
sandbox_extra=() # more agileos-sandbox options for the next run_agileos

# ------------------------------------------------------------------ reporting

wanted() {
  local skip="${AGILEOS_SUITE_SKIP:-}"
  if [[ -n "$skip" && "$1" =~ $skip ]]; then return 1; fi
  [[ -z "$filter" ]] || [[ "$1" =~ $filter ]]
}

budget_left() {
  (((SECONDS - START_SECONDS) < budget_s))
}

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  local status=$1
  stop_daemon
  # The compiled-module cache lies beside the runtime directory, not in it: sandboxes see the
  # runtime directory (its sockets), and must not see the cache.
  if [[ -n "$runtime_dir" ]]; then rm -rf -- "$runtime_dir" "$runtime_dir-module-cache" "$runtime_dir-admin"; fi
  tar -C "$logs" -czf "$out_dir/logs.tar.gz" . 2>/dev/null
  rm -rf -- "$logs"
  ((status == 77)) && return
  say ""
  summary_line "" # "N passed, M failed"
  harness_exit_status=$((failed == 0 ? 0 : 1))
}
harness_exit_trap finish

# ------------------------------------------------------------------ the machine

check_machine() {
  say "AgileOS GPU suite, $(date -u '+%Y-%m-%d %H:%M:%S UTC')${filter:+, filter \"$filter\"}"
  require_gpu # "SKIPPED: ..." and exit 77 without /dev/nvidia0
  if command -v nvidia-smi >/dev/null; then
    timeout 30 nvidia-smi -L 2>&1 | sed 's/ (UUID.*//' | tee -a "$summary"
  fi
  cudart_dir="$(cuda_runtime_dir)"
  driver_dir="$(cuda_driver_dir)"
  [[ -n "$cudart_dir" ]] || { fail "setup: libcudart.so.13 not found on this machine"; exit 1; }
  [[ -n "$driver_dir" ]] || { fail "setup: libcuda.so.1 not found on this machine"; exit 1; }
  native_library_path="$cudart_dir:$driver_dir"
  say "native CUDA runtime: $cudart_dir/libcudart.so.13, driver: $driver_dir/libcuda.so.1"
  local required=("$programs_dir")
  if ((!native_only)); then
    required+=("$bin_dir/agileosd" "$bin_dir/agileos-worker" "$bin_dir/agileos-sandbox" "$bin_dir/sandbox_probe"
      "$bin_dir/adversary_wire" "$bin_dir/agileos-nvrtc-compiler" "$shim_dir/libagileos_cudart.so")
  fi
  require_files "${required[@]}" || exit 1
}

# Sandboxed programs run as an unprivileged host uid (agileos-sandbox leases one per launch), and
# bubblewrap binds what they need as that uid: every directory above the bundle must let others
# pass. On a test machine whose checkout lies under a private directory (/root), this opens the
# path (o+x only: nothing becomes listable or readable) and says so.
make_bundle_reachable() {
  local dir path
  for path in "$bin_dir" "$shim_dir" "$programs_dir" "$static_programs_dir" ${deps_dir:+"$deps_dir"} ${guard_dir:+"$guard_dir"} "$PWD/.bundle"; do
    [[ -e "$path" ]] || continue
    chmod -R a+rX "$path"
    dir="$(cd "$path" && pwd)"
    while [[ "$dir" != / ]]; do
      dir="$(dirname "$dir")"
      if [[ "$(stat -c %A "$dir")" != ?????????[xt]* ]]; then
        chmod o+x "$dir" && say "note: made $dir passable for the sandboxes' unprivileged uids (chmod o+x)"
      fi
    done
  done
}

# ------------------------------------------------------------------ the daemon

# The suite's daemon: every guard policy allowed, workers with --test-guard-canary, kvstore in its
# module pool when the bundle has it, log level info; it lives the suite's budget and 120 s. Exits
# (through the trap) if it does not start.
suite_daemon() {
  runtime_dir="$(harness_runtime_dir agileos-suite-run)"
  local config="$runtime_dir/agileosd.json"
  local worker_args="" argument
  for argument in ${AGILEOS_WORKER_ARGS:-}; do worker_args+="${worker_args:+, }\"$argument\""; done
  local sections=(
    "\"worker\": {\"executable\": \"agileos-worker\", \"prestart\": 8, \"max_workers\": 12,
             \"args\": [\"--test-guard-canary\"${worker_args:+, $worker_args}]}"
    "\"guard\": {\"policy\": \"${AGILEOS_GUARD_POLICY:-trap}\", \"require\": \"always\",
            \"allowed_policies\": [\"off\", \"trap\", \"poison\", \"sink\", \"remap_or\", \"report\"],
            \"cache_dir\": \"$runtime_dir-module-cache\"}")
  # guard_escape's trusted_body_* routes run as clients admitted with kvstore (AGILEOS_MODULES).
  if [[ -f "$modules_dir/kvstore.ptx" && -f "$modules_dir/libkvstore.so" ]]; then
    sections+=("\"modules\": {\"pool\": [{\"name\": \"kvstore\", \"version\": \"1.2.0\", \"ptx\": \"$modules_dir/kvstore.ptx\",
                         \"host_library\": \"$modules_dir/libkvstore.so\"}], \"allowed\": [\"kvstore\"]}")
  fi
  daemon_config "$runtime_dir" info "${sections[@]}" >"$config"
  if ! check_daemon_config "$config" "$logs/check-config.log"; then
    fail "daemon: agileosd --check-config rejected the configuration"
    quote "$logs/check-config.log"
    exit 1
  fi
  start_daemon --lifetime $((budget_s + 120)) --stop-wait 15 --quote 30 \
    --tail-file "$out_dir/daemon.log.tail" --tail-lines 400 daemon "$config" "$logs/agileosd.log" || exit 1
  say "daemon: listening at $daemon_socket after $daemon_waited s"
  say "kernel memory guard: ${AGILEOS_GUARD_POLICY:-trap} by default; workers: --test-guard-canary ${AGILEOS_WORKER_ARGS:-}"
}

# ------------------------------------------------------------------ running programs

# run_native NAME PROGRAM ARGS...: output in $logs/NAME.native.{out,err}; sets run_status, run_seconds.
run_native() {
  local name="$1" started=$EPOCHREALTIME
  shift
  LD_LIBRARY_PATH="$native_library_path" timeout "$PROGRAM_TIMEOUT_S" "$@" \
    >"$logs/$name.native.out" 2>"$logs/$name.native.err" </dev/null
  run_status=$?
  run_seconds="$(elapsed_since "$started")"
}

# run_agileos NAME PROGRAM ARGS...: the same, inside agileos-sandbox, output in $logs/NAME.agileos.*.
run_agileos() {
  local name="$1" started=$EPOCHREALTIME
  shift
  local sandbox=("$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" --shim "$shim_dir"
    --keep "$programs_dir" --keep "$bin_dir" "${sandbox_extra[@]}")
  if [[ -d "$guard_dir" ]]; then sandbox+=(--keep "$guard_dir"); fi
  if [[ -d "$static_programs_dir" ]]; then sandbox+=(--keep "$static_programs_dir"); fi
  if [[ -n "$deps_dir" ]]; then sandbox+=(--lib-path "$deps_dir"); fi
  LD_LIBRARY_PATH="$deps_dir" timeout --kill-after=10 "$PROGRAM_TIMEOUT_S" "${sandbox[@]}" -- "$@" \
    >"$logs/$name.agileos.out" 2>"$logs/$name.agileos.err" </dev/null
  run_status=$?
  run_seconds="$(elapsed_since "$started")"
}

describe_status() {
  case "$1" in
    124) echo "124 (timed out after ${PROGRAM_TIMEOUT_S} s)" ;;
    125) echo "125 (sandbox could not be set up)" ;;
    0) echo "0" ;;
    *) if (($1 > 128)); then echo "$1 (signal $(($1 - 128)))"; else echo "$1"; fi ;;
  esac
}

compare_program() {
  local name="$1" program="$2"
  run_native "$name" "$program"
  local native_status=$run_status native_seconds=$run_seconds
  if ((native_only)); then
    if ((native_status == 0)); then
      pass "$name (native ${native_seconds} s)"
    else
      fail "$name: native exit $(describe_status "$native_status")"
      quote "$logs/$name.native.out" 20
      quote "$logs/$name.native.err" 10
    fi
    return
  fi
  run_agileos "$name" "$program"
  local agileos_status=$run_status agileos_seconds=$run_seconds
  if ((native_status != 0)); then
    fail "$name: the native run failed, exit $(describe_status "$native_status") (a test program bug?)"
    quote "$logs/$name.native.out" 20
    quote "$logs/$name.native.err" 10
  elif ((agileos_status != native_status)); then
    fail "$name: exit $(describe_status "$agileos_status") under AgileOS, $native_status natively"
    diff -u "$logs/$name.native.out" "$logs/$name.agileos.out" >"$logs/$name.diff"
    quote "$logs/$name.diff" 30
    say "    stderr under AgileOS (last lines):"
    tail -n 12 "$logs/$name.agileos.err" >"$logs/$name.agileos.err.tail"
    quote "$logs/$name.agileos.err.tail" 12
  elif ! diff -u "$logs/$name.native.out" "$logs/$name.agileos.out" >"$logs/$name.diff"; then
    fail "$name: stdout differs between native and AgileOS runs (both exit 0)"
    quote "$logs/$name.diff" 40
  else
    pass "$name (native ${native_seconds} s, AgileOS ${agileos_seconds} s, $(wc -l <"$logs/$name.native.out") lines)"
  fi
}

# compare_directory DIR: compare_program for each program of DIR the suite runs here (adversaries
# and math-library programs have steps of their own); adds to `count`.
compare_directory() {
  local program name
  for program in "$1"/*; do
    name="$(basename "$program")"
    [[ -x "$program" && "$name" != adversary_* ]] || continue
    math_library_program "$name" && continue # math_libraries_step runs it
    tensor_map_program "$name" && continue   # tensor_maps_step runs it
    wanted "$name" || continue
    count=$((count + 1))
    if ! budget_left; then
      fail "$name: not run, the suite's time budget (${budget_s} s) is spent"
      continue
    fi
    compare_program "$name" "$program"
  done
}

run_programs() {
  say ""
  say "== CUDA programs: native vs. AgileOS"
  local count=0
  compare_directory "$programs_dir"
  # The same programs built as nvcc builds by default (static cudart): under AgileOS the runtime
  # inside each reaches the GPU through the driver shim alone.
  if [[ -d "$static_programs_dir" ]]; then
    say ""
    say "== CUDA programs with the CUDA runtime linked in (nvcc's default): native vs. AgileOS"
    compare_directory "$static_programs_dir"
  else
    say "(no programs with the CUDA runtime linked in: $static_programs_dir does not exist)"
  fi
  ((count > 0)) || say "(no program matches)"
}

# ------------------------------------------------------------------ sandbox proof

sandbox_proof() {
  wanted sandbox_probe || return 0
  say ""
  say "== sandbox proof"
  # Besides the GPU: the probe must not read the workers' compiled-module cache nor the services'
  # socket directory (both root's alone), and must not run as uid 0.
  run_agileos sandbox_probe "$bin_dir/sandbox_probe" "$runtime_dir-module-cache" "$runtime_dir-services"
  if ((run_status == 0)) && grep -q '^probe: all [0-9]* attempts blocked$' "$logs/sandbox_probe.agileos.out"; then
    pass "sandbox_probe inside agileos-sandbox: every way to the GPU is blocked"
  else
    fail "sandbox_probe inside agileos-sandbox: exit $(describe_status "$run_status")"
    quote "$logs/sandbox_probe.agileos.err" 10
  fi
  quote "$logs/sandbox_probe.agileos.out" 30
  timeout 60 "$bin_dir/sandbox_probe" >"$logs/sandbox_probe.outside.out" 2>&1
  if grep -q '^open /dev/nvidia0: REACHED' "$logs/sandbox_probe.outside.out"; then
    pass "sandbox_probe outside the sandbox opens /dev/nvidia0 (so the blocks above are the sandbox's doing)"
  else
    fail "sandbox_probe outside the sandbox could not open /dev/nvidia0"
  fi
  quote "$logs/sandbox_probe.outside.out" 30
  # Privilege separation (issue 14): every worker of this daemon runs as a uid of its own, not
  # root, without capabilities, and still reached the GPU (the programs above ran on it).
  local worker_ids worker_pid worker_bad=0 worker_count=0
  worker_ids=""
  for worker_pid in $(pgrep -x agileos-worker); do
    worker_count=$((worker_count + 1))
    local uid cap
    uid="$(awk '/^Uid:/ {print $2 "/" $3 "/" $4}' "/proc/$worker_pid/status" 2>/dev/null)"
    cap="$(awk '/^CapEff:/ {print $2}' "/proc/$worker_pid/status" 2>/dev/null)"
    worker_ids+=" $uid(cap $cap)"
    [[ "$uid" == 0/* || "$uid" == */0/* || "$cap" != 0000000000000000 ]] && worker_bad=1
  done
  if ((worker_count > 0 && worker_bad == 0)); then
    pass "privileges: the daemon's $worker_count worker(s) run as their own uids, no capabilities:$worker_ids"
  else
    fail "privileges: workers (real/effective/saved uid):${worker_ids:- none found}"
  fi
  # With /etc kept visible, root's files there exist but stay unreadable: the program's uid is an
  # unprivileged host uid of its own, not root mapped to another number.
  sandbox_extra=(--keep /etc)
  run_agileos sandbox_probe_etc "$bin_dir/sandbox_probe" /etc/shadow
  sandbox_extra=()
  if grep -q '^read /etc/shadow: blocked (Permission denied)' "$logs/sandbox_probe_etc.agileos.out" &&
    grep -q '^run as uid 0: blocked' "$logs/sandbox_probe_etc.agileos.out"; then
    pass "sandbox_probe with /etc kept: not uid 0, and root's /etc/shadow is unreadable (Permission denied)"
  else
    fail "sandbox_probe with /etc kept: exit $(describe_status "$run_status")"
    quote "$logs/sandbox_probe_etc.agileos.out" 10
    quote "$logs/sandbox_probe_etc.agileos.err" 10
  fi
}

# What the sandbox adds to a program's start (tests/bench/sandbox_start_bench.sh): reported, not
# asserted; the step fails only if a launch fails.
sandbox_start() {
  wanted sandbox_start || return 0
  say ""
  say "== sandbox start (30 starts of /bin/true each way)"
  if timeout 120 bash "$suite_dir/../bench/sandbox_start_bench.sh" "$bin_dir/agileos-sandbox" "$shim_dir" 30 \
    "$deps_dir" >"$logs/sandbox_start.log" 2>&1; then
    pass "sandbox_start: every launch succeeded"
  else
    fail "sandbox_start: a launch failed"
  fi
  sed 's/^/  /' "$logs/sandbox_start.log" | tee -a "$summary"
}

# cgroup limits (issue 14): where the host's cgroup v2 root delegates controllers, a CUDA program
# runs through the shim under --cgroup require with pids and memory limits, is seen in its
# sandbox's cgroup with those limits while it runs, and the cgroup is gone afterwards. The
# parent is made at the root, since the suite's own cgroup usually holds processes and so
# cannot enable controllers for children (the "no internal processes" rule).
sandbox_cgroup() {
  wanted sandbox_cgroup || return 0
  say ""
  say "== sandbox cgroup limits (--cgroup require, --max-pids 512, --max-memory 16G)"
  local parent_name=agileos-suite-sandboxes root=/sys/fs/cgroup
  if [[ "$(stat -f -c %T "$root" 2>/dev/null)" != cgroup2fs ]] || ! mkdir -p "$root/$parent_name" 2>/dev/null; then
    say "SKIPPED sandbox_cgroup: no writable cgroup v2 root here ($(stat -f -c %T "$root" 2>/dev/null))"
    return 0
  fi
  local tenants="$PWD/.bundle/tenants" seen="" status
  (
    LD_LIBRARY_PATH="$deps_dir" timeout --kill-after=5 60 "$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" \
      --shim "$shim_dir" ${deps_dir:+--lib-path "$deps_dir"} --keep "$tenants" --cgroup require \
      --cgroup-parent "/$parent_name" --max-pids 512 --max-memory 16G \
      -- "$tenants/tenant_memory" --alloc $((1 << 30)) --hold 4 >"$logs/cgroup.out" 2>"$logs/cgroup.err" </dev/null
    echo $? >"$logs/cgroup.status"
  ) &
  local runner=$!
  for _ in $(seq 1 100); do
    local dir
    for dir in "$root/$parent_name"/agileos-sandbox-*; do
      [[ -f "$dir/pids.max" ]] || continue
      if grep -q "tenant: holding" "$logs/cgroup.out" 2>/dev/null; then
        seen="pids.max $(cat "$dir/pids.max"), memory.max $(cat "$dir/memory.max"), memory.swap.max $(cat "$dir/memory.swap.max" 2>/dev/null), $(wc -l <"$dir/cgroup.procs") processes, pids.current $(cat "$dir/pids.current")"
      fi
    done
    [[ -n "$seen" ]] && break
    sleep 0.1
  done
  wait "$runner"
  status="$(cat "$logs/cgroup.status" 2>/dev/null || echo none)"
  local left
  left="$(find "$root/$parent_name" -mindepth 1 -maxdepth 1 -type d -name 'agileos-sandbox-*' | wc -l)"
  if [[ "$status" == 0 && "$seen" == "pids.max 512, memory.max 17179869184, memory.swap.max 0,"* && "$left" == 0 ]]; then
    pass "sandbox_cgroup: tenant_memory (1 GiB on the GPU) ran in its sandbox's cgroup ($seen); the cgroup was removed after it"
  else
    fail "sandbox_cgroup: exit $status, seen '${seen:-no cgroup with the program in it}', $left cgroup(s) left"
    quote "$logs/cgroup.out" 5
    quote "$logs/cgroup.err" 5
  fi
  rmdir "$root/$parent_name" 2>/dev/null
}

# ------------------------------------------------------------------ adversaries

# Quotes the FAIL rows and the closing line of an adversary's table.
quote_table() {
  local file="$1"
  grep -E '\| FAIL$|CRASH|cannot|fails before' "$file" >"$file.excerpt"
  quote "$file.excerpt" 60
}

concurrent_adversary() {
  wanted concurrent_adversary_api || return 0
  say ""
  say "== adversary_api, while matmul_tiled runs in another sandbox"
  if ! budget_left; then
    fail "concurrent_adversary_api: not run, the suite's time budget is spent"
    return
  fi
  local matmul="$programs_dir/matmul_tiled"
  [[ -s "$logs/matmul_tiled.native.out" ]] || run_native matmul_tiled "$matmul"
  (
    for round in 1 2 3; do
      run_agileos "matmul_concurrent_$round" "$matmul"
      echo "$run_status" >"$logs/matmul_concurrent_$round.status"
    done
  ) &
  local neighbour=$!
  run_agileos adversary_api "$programs_dir/adversary_api"
  local adversary_status=$run_status
  wait "$neighbour"
  if ((adversary_status == 0)); then
    pass "adversary_api: $(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/adversary_api.agileos.out" | tail -1)"
  else
    fail "adversary_api: exit $(describe_status "$adversary_status"):" \
      "$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/adversary_api.agileos.out" | tail -1)"
    tail -n 8 "$logs/adversary_api.agileos.err" >"$logs/adversary_api.err.tail"
    quote "$logs/adversary_api.err.tail" 8
  fi
  quote_table "$logs/adversary_api.agileos.out"
  local round bad=0
  for round in 1 2 3; do
    local status
    status="$(cat "$logs/matmul_concurrent_$round.status" 2>/dev/null || echo missing)"
    if [[ "$status" != 0 ]] || ! cmp -s "$logs/matmul_tiled.native.out" "$logs/matmul_concurrent_$round.agileos.out"; then
      bad=1
      say "    matmul_tiled round $round next to the adversary: exit $status"
      diff -u "$logs/matmul_tiled.native.out" "$logs/matmul_concurrent_$round.agileos.out" >"$logs/matmul_concurrent.diff"
      quote "$logs/matmul_concurrent.diff" 20
      quote "$logs/matmul_concurrent_$round.agileos.err" 8
    fi
  done
  if ((bad == 0)); then
    pass "matmul_tiled x3 next to the adversary: exit 0 and output identical to the native run"
  else
    fail "matmul_tiled next to the adversary"
  fi
}

# adversary_cufft: the cuFFT adapter's refusals (buffers too small for the plan's extent, freed,
# protected or foreign memory, forged and stale plans, short work areas, callbacks), then the
# same plans still give correct results. Under AgileOS only: natively these calls corrupt memory.
cufft_adversary() {
  wanted adversary_cufft || return 0
  [[ -x "$programs_dir/adversary_cufft" ]] || return 0
  say ""
  say "== adversary_cufft"
  if ! budget_left; then
    fail "adversary_cufft: not run, the suite's time budget is spent"
    return
  fi
  run_agileos adversary_cufft "$programs_dir/adversary_cufft"
  local counts
  counts="$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/adversary_cufft.agileos.out" | tail -1)"
  if ((run_status == 0)); then
    pass "adversary_cufft: $counts"
  else
    fail "adversary_cufft: exit $(describe_status "$run_status"): $counts"
    grep '^FAIL' "$logs/adversary_cufft.agileos.out" | head -n 12 >"$logs/adversary_cufft.fails"
    quote "$logs/adversary_cufft.fails" 12
    tail -n 8 "$logs/adversary_cufft.agileos.err" >"$logs/adversary_cufft.err.tail"
    quote "$logs/adversary_cufft.err.tail" 8
  fi
}

wire_adversary() {
  wanted adversary_wire || return 0
  say ""
  say "== adversary_wire (raw gRPC client)"
  if ! budget_left; then
    fail "adversary_wire: not run, the suite's time budget is spent"
    return
  fi
  LD_LIBRARY_PATH="${deps_dir}" timeout --kill-after=10 180 "$bin_dir/adversary_wire" \
    --socket "$runtime_dir/agileosd.sock" --fatbin-from "$programs_dir/adversary_api" \
    >"$logs/adversary_wire.out" 2>"$logs/adversary_wire.err" </dev/null
  local status=$?
  if ((status == 0)); then
    pass "adversary_wire: $(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/adversary_wire.out" | tail -1)"
  else
    fail "adversary_wire: exit $(describe_status "$status"):" \
      "$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/adversary_wire.out" | tail -1)"
    tail -n 8 "$logs/adversary_wire.err" >"$logs/adversary_wire.err.tail"
    quote "$logs/adversary_wire.err.tail" 8
  fi
  quote_table "$logs/adversary_wire.out"
}

# ------------------------------------------------------------------ guard escape suite

guard_escape_step() {
  wanted guard_escape || return 0
  say ""
  say "== guard escape suite (kernel memory guard, every policy)"
  if ! budget_left; then
    fail "guard_escape: not run, the suite's time budget is spent"
    return
  fi
  # shellcheck disable=SC1091  # checked on its own (shellcheck tests/gpu/guard/run_escape_suite.sh)
  source "$suite_dir/guard/run_escape_suite.sh"
  # The daemon lives budget_s + 120 s (suite_daemon): start no process that could outlive it.
  local budget="${AGILEOS_GUARD_ESCAPE_BUDGET_S:-240}" daemon_left=$((budget_s + 90 - (SECONDS - START_SECONDS)))
  ((daemon_left >= budget)) || budget=$daemon_left
  if ((native_only)); then
    AGILEOS_GUARD_ESCAPE_BUDGET_S=$budget run_guard_escape_suite "$guard_dir/guard_escape" --native-only
  else
    AGILEOS_GUARD_ESCAPE_BUDGET_S=$budget run_guard_escape_suite "$guard_dir/guard_escape"
  fi
}

# tensor_map_premises: the hardware premises of the guard's tensor copies, measured natively
# (probes/tensor_map_premises.cu; docs/security-model.md, "Tensor maps"): a store through the
# generic address of a map parameter, and boxes past a map's end. PASS where a premise holds, FAIL
# where it does not (then tensor copies must stay confined); each measurement is also run through
# AgileOS on the suite's daemon, and its line reported, for comparison.
tensor_map_premises_step() {
  wanted tensor_map_premises || return 0
  local program="$guard_dir/tensor_map_premises" measurement line
  say ""
  say "== tensor-map premises (measured natively)"
  [[ -x "$program" ]] || { fail "tensor_map_premises: $program is missing from the bundle"; return; }
  for measurement in store store_fenced bounds; do
    if ! budget_left; then
      fail "tensor_map_premises $measurement: not run, the suite's time budget is spent"
      continue
    fi
    run_native "tensor_map_premises_$measurement" "$program" "$measurement"
    if ((run_status != 0)) || ! grep -q '^PREMISE ' "$logs/tensor_map_premises_$measurement.native.out"; then
      fail "tensor_map_premises $measurement: no measurement, exit $(describe_status "$run_status")"
      quote "$logs/tensor_map_premises_$measurement.native.out" 10
      quote "$logs/tensor_map_premises_$measurement.native.err" 10
      continue
    fi
    while IFS= read -r line; do
      case "$line" in
        "PREMISE "*" HOLDS:"*) pass "tensor_map_premises: ${line#PREMISE }" ;;
        *) fail "tensor_map_premises: ${line#PREMISE }" ;;
      esac
    done < <(grep '^PREMISE ' "$logs/tensor_map_premises_$measurement.native.out")
    if ((!native_only)); then
      run_agileos "tensor_map_premises_$measurement" "$program" "$measurement"
      say "    under AgileOS (exit $(describe_status "$run_status")): $(head -c 600 "$logs/tensor_map_premises_$measurement.agileos.out" | tr '\n' ' ')"
    fi
  done
}

# nvrtc_cubin_guard: a CUBIN compiled by NVRTC through AgileOS, aimed at the protected canary, is
# stopped by the guard (the worker loads the PTX it came from), and the canary stays intact.
nvrtc_cubin_guard_step() {
  wanted nvrtc_cubin_guard || return 0
  [[ -x "$guard_dir/nvrtc_cubin_guard" ]] || return 0
  say ""
  say "== nvrtc_cubin_guard"
  if ! budget_left; then
    fail "nvrtc_cubin_guard: not run, the suite's time budget is spent"
    return
  fi
  local policy name counts
  for policy in trap poison; do
    name="nvrtc_cubin_guard_$policy"
    AGILEOS_GUARD_POLICY=$policy run_agileos "$name" "$guard_dir/nvrtc_cubin_guard"
    counts="$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/$name.agileos.out" | tail -1)"
    if ((run_status == 0)); then
      pass "nvrtc_cubin_guard under $policy: $counts"
    else
      fail "nvrtc_cubin_guard under $policy: exit $(describe_status "$run_status"): $counts"
      quote "$logs/$name.agileos.out" 12
      tail -n 8 "$logs/$name.agileos.err" >"$logs/$name.err.tail"
      quote "$logs/$name.err.tail" 8
    fi
  done
}

# nvrtc_jail (issue 13): NVRTC runs in a jail that cannot see the worker's files. A world-readable
# secret header (a fresh marker on every line) is planted outside the sandbox, on the worker's side
# (under /var/tmp); adversary_nvrtc_jail names it every way it can through NVRTC under AgileOS. It
# passes only if the program passes (each compilation fails or succeeds without the secret), the
# marker appears in none of its output nor in the daemon's and workers' log, and nothing was
# written beside the secret (-time and friends).
nvrtc_jail_step() {
  wanted nvrtc_jail || return 0
  [[ -x "$programs_dir/adversary_nvrtc_jail" ]] || return 0
  say ""
  say "== nvrtc_jail"
  if ! budget_left; then
    fail "nvrtc_jail: not run, the suite's time budget is spent"
    return
  fi
  local secret_dir marker line name=nvrtc_jail counts problems=""
  if ! secret_dir="$(mktemp -d /var/tmp/agileos-nvrtc-secret.XXXXXX)"; then
    fail "nvrtc_jail: cannot create the secret's directory under /var/tmp"
    return
  fi
  chmod 755 "$secret_dir"
  marker="AGILEOSSECRET$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  for line in 1 2 3 4 5 6 7 8; do
    printf '__device__ int %s_%d = 1; // %s\n' "$marker" "$line" "$marker"
  done >"$secret_dir/secret.h"
  cp -- "$secret_dir/secret.h" "$secret_dir/main.cu"
  chmod 644 "$secret_dir/secret.h" "$secret_dir/main.cu"
  run_agileos "$name" "$programs_dir/adversary_nvrtc_jail" "$secret_dir/secret.h" "$marker"
  counts="$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/$name.agileos.out" | tail -1)"
  if grep -qF -- "$marker" "$logs/$name.agileos.out" "$logs/$name.agileos.err" "$logs/agileosd.log"; then
    problems+=" the marker appears in the program's output or the daemon's log;"
  fi
  local extra
  extra="$(find "$secret_dir" -mindepth 1 ! -name secret.h ! -name main.cu -printf '%f ' 2>/dev/null)"
  [[ -z "$extra" ]] || problems+=" files were written beside the secret: $extra;"
  if ((run_status == 0)) && [[ -z "$problems" ]]; then
    pass "nvrtc_jail: $counts; the secret reached no output"
  else
    fail "nvrtc_jail: exit $(describe_status "$run_status"): $counts;$problems"
    grep '^FAIL' "$logs/$name.agileos.out" | head -n 20 >"$logs/$name.fails"
    quote "$logs/$name.fails" 20
    tail -n 8 "$logs/$name.agileos.err" >"$logs/$name.err.tail"
    quote "$logs/$name.err.tail" 8
  fi
  rm -rf -- "$secret_dir"
}

service_after_attacks() {
  say ""
  say "== the service after all of the above"
  if kill -0 "$daemon_pid" 2>/dev/null; then
    pass "daemon_alive: agileosd is still running"
  else
    fail "daemon_alive: agileosd has exited"
    tail -n 20 "$logs/agileosd.log" >"$logs/agileosd.log.tail"
    quote "$logs/agileosd.log.tail" 20
    return
  fi
  wanted service_after_attacks || return 0
  [[ -x "$programs_dir/vector_add" ]] || return 0
  [[ -s "$logs/vector_add.native.out" ]] || run_native vector_add "$programs_dir/vector_add"
  run_agileos vector_add_after "$programs_dir/vector_add"
  if ((run_status == 0)) && cmp -s "$logs/vector_add.native.out" "$logs/vector_add_after.agileos.out"; then
    pass "service_after_attacks: a new client (vector_add) is served correctly"
  else
    fail "service_after_attacks: vector_add as a new client: exit $(describe_status "$run_status")"
    quote "$logs/vector_add_after.agileos.err" 10
  fi
}

# ------------------------------------------------------------------ protected modules

# A step that is a script of its own (own daemon, own summary): NAME SCRIPT SUMMARY LIMIT_S. Each
# PASS/FAIL line of $out_dir/SUMMARY counts here; a script that fails without a FAIL line is one.
summary_script_step() {
  local name=$1 script=$2 summary_file=$3 limit_s=$4
  wanted "$name" || return 0
  if ! budget_left; then
    fail "$name: not run, the suite's time budget (${budget_s} s) is spent"
    return
  fi
  say ""
  say "== $name (tests/gpu/$script)"
  OUT="$out_dir" timeout --kill-after=10 "$limit_s" bash "$suite_dir/$script" >"$logs/$name.log" 2>&1
  local status=$? step_passed step_failed
  step_passed="$(grep -c '^PASS' "$out_dir/$summary_file" 2>/dev/null)"
  step_failed="$(grep -c '^FAIL' "$out_dir/$summary_file" 2>/dev/null)"
  passed=$((passed + ${step_passed:-0}))
  failed=$((failed + ${step_failed:-0}))
  sed 's/^/  /' "$out_dir/$summary_file" 2>/dev/null | tee -a "$summary"
  if ((status != 0)) && ((${step_failed:-0} == 0)); then
    fail "$name: $script exited $(describe_status "$status") without a FAIL line"
    quote "$logs/$name.log" 20
  fi
}

# Issue 14: quotas, capacity admission and the admission queue (its own daemons).
tenants_step() { summary_script_step tenants tenants/run_tenant_suite.sh tenants_summary.txt 300; }

# Issue 14: the two-tenant matrix of seed 002 (its own daemon): one PASS or FAIL line per row
# 2G-01..2G-09.
tenant_matrix_step() { summary_script_step tenant_matrix tenants/two_tenant_matrix.sh tenant_matrix_summary.txt 200; }

# Issue 18: agileosctl, metrics, health and the audit trail against real workers (its own daemon).
operator_step() { summary_script_step operator operator/run_operator_suite.sh operator_summary.txt 200; }

# The protected-module tests (issue 5) need their own daemon (a module pool and the storage
# service): tests/gpu/modules/run_module_suite.sh runs them; each of its results counts here.
protected_modules_step() {
  wanted protected_modules || return 0
  if ! budget_left; then
    fail "protected_modules: not run, the suite's time budget (${budget_s} s) is spent"
    return
  fi
  say "== protected modules (tests/gpu/modules/run_module_suite.sh)"
  OUT="$out_dir" timeout --kill-after=10 300 bash "$suite_dir/modules/run_module_suite.sh" ${AGILEOS_MODULE_SUITE_ARGS:-} \
    >"$logs/module_suite.log" 2>&1
  local status=$? module_passed module_failed
  module_passed="$(grep -c '^PASS' "$out_dir/modules_summary.txt" 2>/dev/null)"
  module_failed="$(grep -c '^FAIL' "$out_dir/modules_summary.txt" 2>/dev/null)"
  passed=$((passed + ${module_passed:-0}))
  failed=$((failed + ${module_failed:-0}))
  sed 's/^/  /' "$out_dir/modules_summary.txt" >>"$summary" 2>/dev/null
  if ((status != 0)) && ((${module_failed:-0} == 0)); then
    fail "protected_modules: the module suite exited $(describe_status "$status") without a failed step"
    quote "$logs/module_suite.log" 20
  fi
}

# The real CUDA math libraries in the client (issue 16): their kernels are SASS only, which the
# guard cannot rewrite, so they load only into a context without protected state, never with the
# suite daemon's test canary. These programs run last, against a daemon of the default
# configuration (no canary, the guard where a context holds protected state), each compared with
# its native run; the suite's daemon is stopped first (its steps are done).
math_library_program() {
  [[ "$1" == cublas_* || "$1" == math_libraries* ]]
}

# The installed torch: AGILEOS_TORCH_PYTHON, else the first python3 of a virtual environment
# under /opt/torch (the GPU machine's), else none.
torch_python() {
  if [[ -n "${AGILEOS_TORCH_PYTHON:-}" ]]; then
    echo "$AGILEOS_TORCH_PYTHON"
    return
  fi
  find /opt/torch -maxdepth 5 -path '*/bin/python3' 2>/dev/null | sort | head -n 1
}

# PyTorch in the client (issue 16): tests/gpu/pytorch/train_small.py trains a small model natively
# and inside the sandbox (its virtual environment kept); the losses must agree within 1e-5
# (relative) at every step, and the step times are reported side by side. Runs on the daemon
# math_libraries_step started (torch's libraries carry SASS only).
pytorch_compare() {
  local python venv script="$suite_dir/pytorch/train_small.py"
  python="$(torch_python)"
  if [[ -z "$python" ]] || ! timeout 120 "$python" -c 'import torch' >/dev/null 2>&1; then
    say "SKIP pytorch: no python with torch here (AGILEOS_TORCH_PYTHON names one)"
    return
  fi
  venv="$(dirname "$(dirname "$python")")"
  run_native pytorch "$python" "$script"
  local native_status=$run_status
  if ((native_status != 0)); then
    fail "pytorch: native exit $(describe_status "$native_status")"
    quote "$logs/pytorch.native.err" 20
    return
  fi
  # A virtual environment holds links to its base interpreter: the sandbox binds the interpreter
  # itself (it resolves the program's links); the base's standard library and the system library
  # directory that holds libstdc++ (torch's libraries need it; the python binary does not, so it
  # is not in the program's closure) are kept read-only, their driver libraries masked.
  local stdlib cxx_dir
  stdlib="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
  cxx_dir="$(ldconfig -p | awk '$1 == "libstdc++.so.6" && /x86-64|AArch64/ {print $NF; exit}')"
  if [[ -n "$cxx_dir" ]]; then cxx_dir="$(dirname "$(readlink -f "$cxx_dir")")"; fi
  sandbox_extra=(--keep "$venv" --keep "$suite_dir/pytorch" --keep "$stdlib")
  if [[ -n "$cxx_dir" ]]; then sandbox_extra+=(--keep "$cxx_dir"); fi
  run_agileos pytorch "$python" "$script"
  sandbox_extra=()
  if ((run_status != 0)); then
    fail "pytorch: exit $(describe_status "$run_status") under AgileOS, 0 natively"
    quote_tail "$logs/pytorch.agileos.err" 30
    return
  fi
  local verdict
  if verdict="$("$python" - "$logs/pytorch.native.out" "$logs/pytorch.agileos.out" <<'PY'
import json, sys
native, agileos = (json.loads(open(path).read().strip().splitlines()[-1]) for path in sys.argv[1:3])
worst = max(abs(a - b) / max(1.0, abs(a)) for a, b in zip(native["losses"], agileos["losses"]))
same = len(native["losses"]) == len(agileos["losses"]) and worst <= 1e-5
print(f"{'ok' if same else 'differ'} {len(native['losses'])} steps, largest relative loss difference {worst:.2e}; "
      f"step p50 {native['step_ms_p50']:.3f} ms native, {agileos['step_ms_p50']:.3f} ms AgileOS "
      f"({agileos['step_ms_p50'] / native['step_ms_p50']:.2f}x), p99 {native['step_ms_p99']:.3f} / "
      f"{agileos['step_ms_p99']:.3f} ms; torch {native['torch']}, cuDNN {native['cudnn']}")
sys.exit(0 if same else 1)
PY
  )"; then
    pass "pytorch: $verdict"
  else
    fail "pytorch: ${verdict:-the outputs could not be read}"
  fi
  # torch.fft through the cuFFT shim (cufftXtMakePlanMany, cufftXtExec), in processes of their
  # own: each run against torch's CPU FFT, and the AgileOS run's results against the native run's.
  run_native pytorch_fft "$python" "$script" --fft
  sandbox_extra=(--keep "$venv" --keep "$suite_dir/pytorch" --keep "$stdlib")
  if [[ -n "$cxx_dir" ]]; then sandbox_extra+=(--keep "$cxx_dir"); fi
  run_agileos pytorch_fft "$python" "$script" --fft
  sandbox_extra=()
  if verdict="$("$python" - "$logs/pytorch_fft.native.out" "$logs/pytorch_fft.agileos.out" <<'PY'
import json, sys
def read(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1]).get("fft", {})
    except Exception as error:
        return {"error": f"no result ({error})"}
native, agileos = read(sys.argv[1]), read(sys.argv[2])
if "sums" not in native:
    print(f"the native run's FFT check failed: {native.get('error')}")
    sys.exit(1)
if "sums" not in agileos:
    print(f"failed under AgileOS: {agileos.get('error')}")
    sys.exit(1)
error = agileos["max_relative_error_vs_cpu"]
# The worker's cuFFT may be another build than the one torch loads natively: sums agree closely,
# not bit for bit.
close = all(abs(agileos["sums"][k] - v) <= 1e-5 * max(1.0, abs(v)) for k, v in native["sums"].items())
same = close and error <= 1e-4
print(f"{'ok' if same else 'differ'}: {', '.join(f'{k} {v}' for k, v in agileos['sums'].items())}; "
      f"largest relative error against the CPU {error:.1e} (native {native['max_relative_error_vs_cpu']:.1e})")
sys.exit(0 if same else 1)
PY
  )"; then
    pass "pytorch_fft: $verdict"
  else
    fail "pytorch_fft: ${verdict:-the outputs could not be read}"
    quote_tail "$logs/pytorch_fft.agileos.err" 20
  fi
}

# wanted_programs PREDICATE: the programs, shared and statically linked, whose name PREDICATE
# accepts and the filter wants, one per line.
wanted_programs() {
  local program name
  for program in "$programs_dir"/* "$static_programs_dir"/*; do
    name="$(basename "$program")"
    [[ -x "$program" ]] && "$1" "$name" && wanted "$name" && echo "$program"
  done
}

math_libraries_step() {
  local programs=() program
  mapfile -t programs < <(wanted_programs math_library_program)
  ((${#programs[@]})) || wanted pytorch || return 0
  say ""
  say "== the CUDA math libraries and PyTorch in the client, on a daemon of the default configuration: native vs. AgileOS"
  if ! budget_left; then
    fail "math_libraries: not run, the suite's time budget (${budget_s} s) is spent"
    return
  fi
  local suite_runtime_dir="$runtime_dir"
  runtime_dir="$(harness_runtime_dir agileos-suite-libraries)"
  if ! start_daemon --lifetime 300 math_libraries \
    "$(daemon_config "$runtime_dir" info '"worker": {"executable": "agileos-worker", "prestart": 2, "max_workers": 4}')" \
    "$logs/agileosd-libraries.log"; then
    runtime_dir="$suite_runtime_dir"
    return
  fi
  for program in "${programs[@]}"; do
    compare_program "$(basename "$program")" "$program"
  done
  if wanted pytorch; then pytorch_compare; fi
  if daemon_alive; then pass "math_libraries: agileosd is still running"; else fail "math_libraries: agileosd died"; fi
  stop_daemon
  runtime_dir="$suite_runtime_dir"
}

# Tensor copies are confined as SASS-only code is (docs/security-model.md, "Tensor maps"): a module
# with them never loads into a context that holds protected state, and the suite daemon's test
# canary is protected state. So the tensor-map programs run against a daemon whose guard rewrites
# every module ("require": "always", trap) and whose workers have no canary: the copies are still
# rewritten by the guard and each launch's maps checked against the ones the worker issued.
tensor_map_program() {
  [[ "$1" == tensor_maps || "$1" == tensor_maps_static ]]
}

tensor_maps_step() {
  local programs=() program
  mapfile -t programs < <(wanted_programs tensor_map_program)
  ((${#programs[@]})) || return 0
  if ! budget_left; then
    fail "tensor_maps: not run, the suite's time budget (${budget_s} s) is spent"
    return
  fi
  say ""
  say "== tensor copies, guarded, on a daemon without protected state (\"require\": \"always\"): native vs. AgileOS"
  local suite_runtime_dir="$runtime_dir"
  runtime_dir="$(harness_runtime_dir agileos-suite-tensor-maps)"
  if ! start_daemon --lifetime 120 tensor_maps \
    "$(daemon_config "$runtime_dir" info '"worker": {"executable": "agileos-worker", "prestart": 1, "max_workers": 2}' \
      '"guard": {"policy": "trap", "require": "always"}')" \
    "$logs/agileosd-tensor-maps.log"; then
    runtime_dir="$suite_runtime_dir"
    return
  fi
  for program in "${programs[@]}"; do
    compare_program "$(basename "$program")" "$program"
  done
  stop_daemon
  runtime_dir="$suite_runtime_dir"
}

# __managed__ variables on a daemon of the default configuration (no guard section: the module's
# PTX is rewritten and loaded unguarded); run_programs ran the same program on the suite's daemon
# ("require": "always", guarded).
managed_variables_default_step() {
  wanted managed_variables_default || return 0
  local program="$programs_dir/managed_variables"
  [[ -x "$program" ]] || { fail "managed_variables_default: $program is missing from the bundle"; return; }
  if ! budget_left; then
    fail "managed_variables_default: not run, the suite's time budget (${budget_s} s) is spent"
    return
  fi
  say ""
  say "== __managed__ variables on a daemon of the default configuration: native vs. AgileOS"
  local suite_runtime_dir="$runtime_dir"
  runtime_dir="$(harness_runtime_dir agileos-suite-managed)"
  if ! start_daemon --lifetime 120 managed_default \
    "$(daemon_config "$runtime_dir" info '"worker": {"executable": "agileos-worker", "prestart": 1, "max_workers": 2}')" \
    "$logs/agileosd-managed.log"; then
    runtime_dir="$suite_runtime_dir"
    return
  fi
  compare_program managed_variables_default "$program"
  stop_daemon
  runtime_dir="$suite_runtime_dir"
}

# Issue 17's bar: NVIDIA's cuda-samples natively and through AgileOS, on a daemon of the default
# configuration and on one with "require": "always" (tests/gpu/samples/run_samples.sh, its own two
# daemons). Last, with what is left of the suite's budget, at most AGILEOS_SUITE_SAMPLES_S (120 s):
# each sample's PASS or FAIL counts here; samples skipped (failing natively) or not reached in
# time do not, and the whole list needs a device call of its own (tests/gpu/README.md).
samples_step() {
  wanted samples || return 0
  if [[ ! -f "$PWD/.bundle-samples/samples.tar.xz" && -z "${AGILEOS_SAMPLES_ARCHIVE:-}${AGILEOS_SAMPLES_DIR:-}" ]]; then
    skip "samples: no .bundle-samples/samples.tar.xz (not carried: the samples have a call of their own)"
    return 0
  fi
  local left=$((budget_s - (SECONDS - START_SECONDS))) limit="${AGILEOS_SUITE_SAMPLES_S:-120}"
  ((left < limit)) && limit=$left
  if ((limit < 45)); then
    skip "samples: not run, $left s of the suite's budget left (run tests/gpu/samples/run_samples.sh in a call of its own)"
    return 0
  fi
  say ""
  say "== cuda-samples (tests/gpu/samples/run_samples.sh, $((limit - 30)) s): native vs. AgileOS (default; require always)"
  # Its daemons take the default worker uids: the suite's own daemon, if still running, goes first.
  stop_daemon
  OUT="$out_dir" AGILEOS_SAMPLES_BUDGET_S=$((limit - 30)) timeout --kill-after=10 $((limit + 30)) \
    bash "$suite_dir/samples/run_samples.sh" >"$logs/samples.log" 2>&1
  local status=$? sample_passed sample_failed
  sample_passed="$(awk '$5 == "PASS"' "$out_dir/samples_summary.txt" 2>/dev/null | wc -l)"
  sample_failed="$(awk '$5 == "FAIL"' "$out_dir/samples_summary.txt" 2>/dev/null | wc -l)"
  passed=$((passed + sample_passed))
  failed=$((failed + sample_failed))
  sed 's/^/  /' "$out_dir/samples_summary.txt" 2>/dev/null | tee -a "$summary"
  if ((status != 0)) && ((sample_failed == 0)); then
    fail "samples: run_samples.sh exited $(describe_status "$status") without a failed sample"
    quote_tail "$logs/samples.log" 20
  fi
}

# ------------------------------------------------------------------ main

check_machine
((native_only)) || make_bundle_reachable
if ((native_only)); then
  run_programs
  guard_escape_step
  tensor_map_premises_step
  exit 0
fi
suite_daemon
run_programs
sandbox_proof
sandbox_start
sandbox_cgroup
concurrent_adversary
cufft_adversary
wire_adversary
guard_escape_step
tensor_map_premises_step
nvrtc_cubin_guard_step
nvrtc_jail_step
protected_modules_step
tenants_step
tenant_matrix_step
operator_step
service_after_attacks
math_libraries_step
tensor_maps_step
managed_variables_default_step
samples_step
exit 0
