# shellcheck shell=bash disable=SC2034  # it sets globals for the scripts that source it
# harness.sh: the shell functions the GPU scripts share (issue 15). Sourced, never run:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"     # from tests/gpu/run_suite.sh
#
# Sourcing it only defines functions and readonly constants (a second `source` is a no-op), so
# a script that sources another script that sources it (run_suite.sh and
# guard/run_escape_suite.sh) gets one copy. Safe under `set -u`; does not set -e. Tested on the
# CPU machine by lib/harness_test.sh (ctest gpu_harness_library, label cpu).
#
# Globals it sets, by the function that sets them (the scripts' own names for them):
#   harness_bundle_dirs   bin_dir, shim_dir, deps_dir
#   summary_init          summary, passed, failed, skipped
#   start_daemon          daemon_pid, daemon_socket, daemon_runtime_dir, daemon_config_file,
#                         daemon_log, daemon_waited
#   stop_daemon           daemon_status, daemon_forced
#   harness_exit_trap     harness_exit_status (which the script's exit function may change)
#
# The machine
#   have_gpu                   whether /dev/nvidia0 exists
#   require_gpu                if not: says "SKIPPED: no NVIDIA GPU (/dev/nvidia0 absent)" and exits 77
#   cuda_driver_dir            the directory of the machine's libcuda.so.1
#   cuda_library_dir NAME      the directory of a CUDA toolkit library (libcudart.so.13, libcufft.so.12)
#   cuda_runtime_dir           cuda_library_dir libcudart.so.13
#   harness_path_join DIR...   the non-empty DIRs joined with ':' (for LD_LIBRARY_PATH)
#   harness_bundle_dirs        bin_dir, shim_dir, deps_dir from AGILEOS_BIN_DIR, AGILEOS_SHIM_DIR,
#                              AGILEOS_DEPS_DIR, or the bundle (.bundle/bin, .bundle/shim,
#                              .bundle/deps; AGILEOS_DEPS_DIR may be set empty: no bundled libraries)
#   require_files PATH...      a FAIL "setup: PATH is missing ..." line for each missing PATH
#   gpu_description, cpu_description   one line each, for a results table's hardware line
#
# Reporting: every line goes to stdout and, when $summary names a file, to that file too.
#   summary_init [FILE]        starts FILE empty (none: stdout only) and the counters at 0
#   say TEXT...                one line
#   pass / fail / skip TEXT... "PASS TEXT" / "FAIL TEXT" / "SKIP TEXT", counted
#   quote FILE [N]             FILE's first N lines (40), indented "    | "; nothing if empty
#   quote_tail FILE [N]        its last N lines (10), the same way
#   summary_line SUITE         "SUITE: N passed, M failed" ("N passed, M failed" if SUITE is "")
#
# The daemon (one at a time)
#   harness_runtime_dir PREFIX    a fresh /tmp/PREFIX.XXXXXX, mode 755 (sandboxes see its sockets)
#   daemon_config RUNTIME_DIR LOG_LEVEL [MEMBER...]   prints agileosd's JSON configuration: the
#                                 socket RUNTIME_DIR/agileosd.sock, the runtime directory, the log
#                                 level, then each MEMBER ('"worker": {...}') as it is
#   check_daemon_config [--library-path P] CONFIG LOG   agileosd --check-config, output in LOG
#   start_daemon [OPTIONS] NAME CONFIG [LOG]          see below
#   stop_daemon                   SIGTERM, a bounded wait, then SIGKILL to the process group
#   daemon_alive                  the daemon runs and its socket exists
#   harness_exit_trap [FUNCTION]  on exit FUNCTION runs, then stop_daemon
#
# Helpers
#   elapsed_since START           seconds since START (an $EPOCHREALTIME value), two decimals
#   wait_for_line FILE PATTERN SECONDS   whether PATTERN (grep) appears in FILE within SECONDS

[[ -z "${HARNESS_SH_LOADED:-}" ]] || return 0
readonly HARNESS_SH_LOADED=1

readonly HARNESS_GPU_DEVICE=/dev/nvidia0
# Where the CUDA toolkit's libraries are (then the linker cache, then any /usr/local/cuda-*/lib64).
readonly HARNESS_TOOLKIT_LIBRARY_DIRS="/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib"
# Where the driver's libcuda.so.1 is (then the linker cache): the container's mount first.
readonly HARNESS_DRIVER_LIBRARY_DIRS="/usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64"

# ------------------------------------------------------------------ the machine

have_gpu() {
  [[ -e "$HARNESS_GPU_DEVICE" ]]
}

require_gpu() {
  have_gpu && return 0
  say "SKIPPED: no NVIDIA GPU ($HARNESS_GPU_DEVICE absent)"
  exit 77
}

# The directory in which the linker cache has NAME (the x86-64 entry if there are several).
harness_ldconfig_dir() {
  ldconfig -p 2>/dev/null | awk -v n="$1" '
    $1 == n { path = $0; sub(/.* => /, "", path); if (/x86-64/) { print path; found = 1; exit } if (first == "") first = path }
    END { if (!found && first != "") print first }' | xargs -r dirname
}

cuda_library_dir() {
  local name="$1" dir
  for dir in $HARNESS_TOOLKIT_LIBRARY_DIRS; do
    [[ -e "$dir/$name" ]] && { echo "$dir"; return 0; }
  done
  dir="$(harness_ldconfig_dir "$name")"
  [[ -n "$dir" ]] && { echo "$dir"; return 0; }
  for dir in /usr/local/cuda*/lib64; do
    [[ -e "$dir/$name" ]] && { echo "$dir"; return 0; }
  done
  return 1
}

cuda_runtime_dir() {
  cuda_library_dir libcudart.so.13
}

cuda_driver_dir() {
  local dir
  for dir in $HARNESS_DRIVER_LIBRARY_DIRS; do
    [[ -e "$dir/libcuda.so.1" ]] && { echo "$dir"; return 0; }
  done
  dir="$(harness_ldconfig_dir libcuda.so.1)"
  [[ -n "$dir" ]] && { echo "$dir"; return 0; }
  return 1
}

harness_path_join() {
  local joined="" part
  for part in "$@"; do
    if [[ -n "$part" ]]; then joined+="${joined:+:}$part"; fi
  done
  echo "$joined"
}

harness_bundle_dirs() {
  bin_dir="${AGILEOS_BIN_DIR:-$PWD/.bundle/bin}"
  shim_dir="${AGILEOS_SHIM_DIR:-$PWD/.bundle/shim}"
  deps_dir="${AGILEOS_DEPS_DIR-$PWD/.bundle/deps}"
}

require_files() {
  local path missing=0
  for path in "$@"; do
    [[ -e "$path" ]] || { fail "setup: $path is missing (run tests/gpu/bundle.sh first)"; missing=1; }
  done
  ((missing == 0))
}

gpu_description() {
  local gpu="unknown GPU"
  if command -v nvidia-smi >/dev/null; then
    gpu="$(timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
      head -n 1 | awk -F', ' '{ printf "%s (%s), driver %s", $1, $2, $3 }')"
  fi
  echo "$gpu"
}

cpu_description() {
  echo "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo) x $(nproc) cores"
}

# ------------------------------------------------------------------ reporting

summary_init() {
  summary="${1:-}"
  passed=0
  failed=0
  skipped=0
  if [[ -n "$summary" ]]; then
    mkdir -p -- "$(dirname -- "$summary")"
    : >"$summary"
  fi
}

# stdin to stdout and, when there is one, to the end of the summary file.
harness_tee() {
  if [[ -n "${summary:-}" ]]; then tee -a "$summary"; else cat; fi
}

say() {
  echo "$*" | harness_tee
}

pass() {
  passed=$((${passed:-0} + 1))
  say "PASS $*"
}

fail() {
  failed=$((${failed:-0} + 1))
  say "FAIL $*"
}

skip() {
  skipped=$((${skipped:-0} + 1))
  say "SKIP $*"
}

quote() {
  local file="$1" lines="${2:-40}"
  [[ -s "$file" ]] || return 0
  head -n "$lines" -- "$file" | sed 's/^/    | /' | harness_tee
}

quote_tail() {
  local file="$1" lines="${2:-10}"
  [[ -s "$file" ]] || return 0
  tail -n "$lines" -- "$file" | sed 's/^/    | /' | harness_tee
}

summary_line() {
  say "${1:+$1: }${passed:-0} passed, ${failed:-0} failed"
}

# ------------------------------------------------------------------ the daemon

harness_runtime_dir() {
  local dir
  dir="$(mktemp -d "/tmp/$1.XXXXXX")" || return 1
  chmod 755 "$dir"
  echo "$dir"
}

daemon_config() {
  local runtime="$1" level="$2" member
  shift 2
  printf '{\n  "socket_path": "%s",\n  "runtime_dir": "%s",\n  "log_level": "%s"' \
    "$runtime/agileosd.sock" "$runtime" "$level"
  for member in "$@"; do printf ',\n  %s' "$member"; done
  printf '\n}\n'
}

# The LD_LIBRARY_PATH agileosd gets unless told otherwise: the bundled libraries, the driver's
# directory and the CUDA runtime's (the variables deps_dir, driver_dir and cudart_dir, if set).
harness_daemon_library_path() {
  harness_path_join "${deps_dir:-}" "${driver_dir:-}" "${cudart_dir:-}"
}

# check_daemon_config [--library-path P] CONFIG LOG: whether $bin_dir/agileosd --check-config
# accepts CONFIG (within 30 s); its output goes to LOG.
check_daemon_config() {
  local library_path
  library_path="$(harness_daemon_library_path)"
  if [[ "${1:-}" == --library-path ]]; then
    library_path="$2"
    shift 2
  fi
  LD_LIBRARY_PATH="$library_path" timeout 30 "$bin_dir/agileosd" --check-config --config "$1" >"$2" 2>&1
}

# start_daemon [OPTIONS] NAME CONFIG [LOG]: starts $bin_dir/agileosd, stopping the one started
# before if it still runs. CONFIG is a configuration file, or its JSON text (it starts with '{'),
# which is then written to agileosd.json beside the socket. The socket is the configuration's
# "socket_path" (a stale one is removed first). setsid gives the daemon and its workers their own
# session and process group, which stop_daemon ends; `timeout` bounds the daemon's life even if the
# script is killed. Output goes to LOG (default: <runtime dir>-agileosd.log, outside the runtime
# directory, which sandboxes see). Returns 0 once the socket exists; otherwise reports
# "FAIL NAME: agileosd did not start: no socket at SOCKET after N s" and the log's last lines,
# stops what is left, and returns 1.
# Options (the scripts' differences):
#   --library-path P   agileosd's LD_LIBRARY_PATH (default: deps_dir:driver_dir:cudart_dir)
#   --lifetime S       the daemon's `timeout` (900 s; then SIGTERM, SIGKILL 10 s later)
#   --wait S           how long to wait for the socket (30 s)
#   --stop-wait S      how long stop_daemon waits after SIGTERM before SIGKILL (10 s)
#   --append           append to LOG instead of starting it empty
#   --quote N          lines of the log quoted on a failure (20)
#   --no-fail          report a failure with an indented line, not a FAIL line (the caller decides
#                      what fails)
#   --tail-file FILE   stop_daemon copies the log's last lines there
#   --tail-lines N     how many (400)
start_daemon() {
  local library_path lifetime=900 wait_s=30 append=0 quote_lines=20 report=fail
  local stop_wait=10 tail_file="" tail_lines=400
  library_path="$(harness_daemon_library_path)"
  while [[ "${1:-}" == --* ]]; do
    case "$1" in
      --library-path) library_path="$2"; shift ;;
      --lifetime) lifetime="$2"; shift ;;
      --wait) wait_s="$2"; shift ;;
      --stop-wait) stop_wait="$2"; shift ;;
      --append) append=1 ;;
      --quote) quote_lines="$2"; shift ;;
      --no-fail) report=note ;;
      --tail-file) tail_file="$2"; shift ;;
      --tail-lines) tail_lines="$2"; shift ;;
      *) echo "start_daemon: unknown option $1" >&2; return 2 ;;
    esac
    shift
  done
  local name="$1" config="$2" socket
  stop_daemon # the previous daemon, with its own settings
  harness_stop_wait=$stop_wait
  harness_tail_file=$tail_file
  harness_tail_lines=$tail_lines
  if [[ "$config" =~ ^[[:space:]]*\{ ]]; then
    socket="$(sed -n 's/.*"socket_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$config" | head -n 1)"
  else
    socket="$(sed -n 's/.*"socket_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$config" 2>/dev/null | head -n 1)"
  fi
  if [[ -z "$socket" ]]; then
    harness_daemon_failure "$report" "$name: agileosd not started: no \"socket_path\" in its configuration"
    return 1
  fi
  daemon_socket="$socket"
  daemon_runtime_dir="$(dirname -- "$socket")"
  if [[ "$config" =~ ^[[:space:]]*\{ ]]; then
    daemon_config_file="$daemon_runtime_dir/agileosd.json"
    printf '%s\n' "$config" >"$daemon_config_file"
  else
    daemon_config_file="$config"
  fi
  daemon_log="${3:-$daemon_runtime_dir-agileosd.log}"
  rm -f -- "$daemon_socket"
  if ((append)); then
    LD_LIBRARY_PATH="$library_path" setsid timeout --kill-after=10 "$lifetime" \
      "$bin_dir/agileosd" --config "$daemon_config_file" >>"$daemon_log" 2>&1 &
  else
    LD_LIBRARY_PATH="$library_path" setsid timeout --kill-after=10 "$lifetime" \
      "$bin_dir/agileosd" --config "$daemon_config_file" >"$daemon_log" 2>&1 &
  fi
  daemon_pid=$!
  local waited=0
  while [[ ! -S "$daemon_socket" ]]; do
    if ! kill -0 "$daemon_pid" 2>/dev/null || ((waited >= wait_s * 10)); then
      harness_daemon_failure "$report" \
        "$name: agileosd did not start: no socket at $daemon_socket after $((waited / 10)) s" "$quote_lines"
      stop_daemon
      return 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  daemon_waited="$((waited / 10)).$((waited % 10))"
  return 0
}

# harness_daemon_failure fail|note MESSAGE [LINES]: MESSAGE as a FAIL line or an indented one,
# then the last LINES of the daemon's log.
harness_daemon_failure() {
  if [[ "$1" == fail ]]; then fail "$2"; else say "  $2"; fi
  if [[ -n "${3:-}" ]]; then quote_tail "$daemon_log" "$3"; fi
}

# Safe to call twice, or with no daemon: then it does nothing.
stop_daemon() {
  [[ -n "${daemon_pid:-}" ]] || return 0
  # TERM goes to `timeout`, which passes it on to agileosd; then the whole group is cleaned up.
  kill -TERM "$daemon_pid" 2>/dev/null
  local waited=0 stop_wait="${harness_stop_wait:-10}"
  daemon_forced=1
  while ((waited < stop_wait * 10)); do
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
      daemon_forced=0
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  if ((daemon_forced)) && ! kill -0 "$daemon_pid" 2>/dev/null; then daemon_forced=0; fi
  if ((daemon_forced)); then
    say "NOTE daemon did not stop within $stop_wait s of SIGTERM; killing its process group"
  fi
  kill -KILL -- "-$daemon_pid" 2>/dev/null
  wait "$daemon_pid" 2>/dev/null
  daemon_status=$?
  daemon_pid=""
  if [[ -n "${harness_tail_file:-}" && -e "${daemon_log:-}" ]]; then
    tail -n "${harness_tail_lines:-400}" -- "$daemon_log" >"$harness_tail_file" 2>/dev/null
  fi
  return 0
}

daemon_alive() {
  [[ -n "${daemon_pid:-}" ]] && kill -0 "$daemon_pid" 2>/dev/null && [[ -S "${daemon_socket:-}" ]]
}

# harness_exit_trap [FUNCTION]: on exit (the end of the script, `exit`, an error under set -u, or
# SIGTERM/SIGINT/SIGHUP, on which bash runs the EXIT trap too) FUNCTION STATUS runs, then
# stop_daemon, whatever FUNCTION did; the script exits with harness_exit_status, STATUS unless
# FUNCTION changed it. (On a signal bash still ends with that signal's status.)
harness_exit_trap() {
  harness_exit_function="${1:-}"
  trap harness_on_exit EXIT
}

# shellcheck disable=SC2317  # called from the EXIT trap
harness_on_exit() {
  local status=$?
  trap - EXIT
  harness_exit_status=$status
  if [[ -n "${harness_exit_function:-}" ]]; then "$harness_exit_function" "$status"; fi
  stop_daemon
  exit "$harness_exit_status"
}

# ------------------------------------------------------------------ helpers

elapsed_since() {
  awk -v start="$1" -v now="$EPOCHREALTIME" 'BEGIN { printf "%.2f", now - start }'
}

wait_for_line() {
  local deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}
