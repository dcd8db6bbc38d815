#!/usr/bin/env bash
# harness_test.sh: tests tests/gpu/lib/harness.sh on the CPU machine (ctest gpu_harness_library,
# label cpu): the summary functions' output, start_daemon/stop_daemon against a fake agileosd (a
# bash script in a temporary bin directory whose python3 binds the configured socket), the EXIT
# trap, the GPU check and the library lookup's plumbing.
#
# Usage: tests/gpu/lib/harness_test.sh
# Exit status: 0 all passed, 1 a check failed, 77 without python3.
set -uo pipefail

lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/harness.sh"
if ! command -v python3 >/dev/null || ! command -v setsid >/dev/null; then
  echo "SKIPPED: needs python3 and setsid"
  exit 77
fi
# shellcheck source=harness.sh
source "$lib"
# shellcheck source=harness.sh
source "$lib" # a second time: a no-op (its constants are readonly)

work="$(mktemp -d /tmp/agileos-harness-test.XXXXXX)"
checks=0
problems=0
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  stop_daemon
  rm -rf -- "$work"
}
trap cleanup EXIT

# check WHAT COMMAND...: COMMAND must succeed.
check() {
  local what="$1"
  shift
  checks=$((checks + 1))
  if "$@"; then
    echo "ok   $what"
  else
    problems=$((problems + 1))
    echo "FAILED $what"
  fi
}
# same WHAT EXPECTED ACTUAL
same() {
  checks=$((checks + 1))
  if [[ "$2" == "$3" ]]; then
    echo "ok   $1"
  else
    problems=$((problems + 1))
    echo "FAILED $1"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/       /'
  fi
}
# The pids of live processes whose command line contains TEXT.
pids_with() {
  local pid
  for pid in /proc/[0-9]*; do
    pid="${pid#/proc/}"
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$1" && echo "$pid"
  done
}
gone() { [[ -z "$(pids_with "$1")" ]]; }

# ------------------------------------------------------------------ the fake agileosd

mkdir -p "$work/bin"
cat >"$work/bin/agileosd" <<'FAKE'
#!/usr/bin/env bash
# A fake agileosd: --check-config checks that the configuration is JSON; otherwise it binds the
# configured socket and waits, or, with "fake_mode" in the configuration, exits ("exit"), never
# makes its socket ("hang") or ignores SIGTERM ("ignore_term").
check=0 config=""
while (($# > 0)); do
  case "$1" in
    --check-config) check=1 ;;
    --config) config="$2"; shift ;;
  esac
  shift
done
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$config" "$1"; }
if ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$config" 2>/dev/null; then
  echo "agileosd: $config is not JSON"
  exit 1
fi
((check)) && { echo "agileosd: configuration OK"; exit 0; }
echo "agileosd: starting, LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
case "$(field fake_mode)" in
  exit) echo "agileosd: giving up"; exit 3 ;;
  hang) exec -a "agileosd-hanging $(field socket_path)" sleep 600 ;;
  ignore_term) trap '' TERM ;;
esac
exec python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); import time; time.sleep(600)' "$(field socket_path)"
FAKE
chmod +x "$work/bin/agileosd"
bin_dir="$work/bin"
deps_dir=""
driver_dir=""
cudart_dir=""

# ------------------------------------------------------------------ reporting

summary_init "$work/out/summary.txt"
same "summary_init starts the counters at 0" "0 0 0" "$passed $failed $skipped"
check "summary_init creates the summary file, empty" test -f "$work/out/summary.txt" -a ! -s "$work/out/summary.txt"
printf 'one\ntwo\nthree\n' >"$work/three.txt"
: >"$work/empty.txt"
{
  say "hello"
  pass "first step"
  fail "second step: exit 1"
  skip "third step: not here"
  pass "fourth step"
  quote "$work/three.txt" 2
  quote_tail "$work/three.txt" 2
  quote "$work/empty.txt"
  quote_tail "$work/missing.txt"
  say ""
  summary_line "demo"
  summary_line ""
} >"$work/stdout.txt"
expected="hello
PASS first step
FAIL second step: exit 1
SKIP third step: not here
PASS fourth step
    | one
    | two
    | two
    | three

demo: 2 passed, 1 failed
2 passed, 1 failed"
same "say/pass/fail/skip/quote/summary_line: the summary file" "$expected" "$(cat "$work/out/summary.txt")"
same "say/pass/fail/skip/quote/summary_line: stdout" "$expected" "$(cat "$work/stdout.txt")"
same "the counters" "2 1 1" "$passed $failed $skipped"
# run_suite.sh counts a sub-suite's results this way (summary_script_step).
same "grep -c '^PASS' / '^FAIL' count the lines" "2 1" \
  "$(grep -c '^PASS' "$work/out/summary.txt") $(grep -c '^FAIL' "$work/out/summary.txt")"
summary_init ""
same "without a summary file, say goes to stdout only" "PASS x" "$(pass x)"
summary_init "$work/out/summary.txt"
same "summary_init starts an existing file empty" "" "$(cat "$work/out/summary.txt")"
seq 1 50 >"$work/fifty.txt"
same "quote: 40 lines by default" 40 "$(quote "$work/fifty.txt" | wc -l)"
same "quote_tail: 10 lines by default" "    | 41" "$(quote_tail "$work/fifty.txt" | head -n 1)"
same "require_files: a FAIL line per missing path" \
  "FAIL setup: $work/nothing is missing (run tests/gpu/bundle.sh first)" "$(require_files "$work/three.txt" "$work/nothing")"
check "require_files: fails when a path is missing" bash -c "source '$lib'; ! require_files /nonexistent >/dev/null"
check "require_files: passes when all exist" require_files "$work/three.txt" "$work/empty.txt"

# ------------------------------------------------------------------ the machine

same "harness_path_join skips empty parts" "a:b:c" "$(harness_path_join "" a "" b c "")"
same "harness_path_join of nothing" "" "$(harness_path_join "" "")"
libc_dir="$(harness_ldconfig_dir libc.so.6)"
check "harness_ldconfig_dir finds libc.so.6 ($libc_dir)" test -e "$libc_dir/libc.so.6"
check "cuda_library_dir fails for a library that is nowhere" bash -c "source '$lib'; ! cuda_library_dir libnothing.so.99"
driver="$(cuda_driver_dir)" && check "cuda_driver_dir: $driver holds libcuda.so.1" test -e "$driver/libcuda.so.1"
runtime="$(cuda_runtime_dir)" && check "cuda_runtime_dir: $runtime holds libcudart.so.13" test -e "$runtime/libcudart.so.13"
same "harness_bundle_dirs: the bundle by default" "$PWD/.bundle/bin $PWD/.bundle/shim $PWD/.bundle/deps" \
  "$(unset AGILEOS_BIN_DIR AGILEOS_SHIM_DIR AGILEOS_DEPS_DIR; harness_bundle_dirs; echo "$bin_dir $shim_dir $deps_dir")"
same "harness_bundle_dirs: the environment, AGILEOS_DEPS_DIR may be empty" "/b /s " \
  "$(AGILEOS_BIN_DIR=/b AGILEOS_SHIM_DIR=/s AGILEOS_DEPS_DIR="" bash -c "source '$lib'; harness_bundle_dirs; echo \"\$bin_dir \$shim_dir \$deps_dir\"")"
if have_gpu; then
  check "require_gpu returns on a machine with /dev/nvidia0" bash -c "source '$lib'; require_gpu"
else
  skip_out="$(bash -c "source '$lib'; summary_init ''; require_gpu; echo not reached")"
  status=$?
  same "require_gpu without /dev/nvidia0: exit 77" 77 "$status"
  same "require_gpu without /dev/nvidia0: the SKIPPED line" "SKIPPED: no NVIDIA GPU (/dev/nvidia0 absent)" "$skip_out"
fi

# ------------------------------------------------------------------ the daemon

runtime_dir="$(harness_runtime_dir agileos-harness-test-run)"
same "harness_runtime_dir: mode 755" 755 "$(stat -c %a "$runtime_dir")"
daemon_config "$runtime_dir" info '"worker": {"prestart": 1}' '"memory": {"quota_bytes": 0}' >"$work/config.json"
check "daemon_config: JSON with the socket, the runtime directory, the level and the members" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c == {"socket_path": sys.argv[2] + "/agileosd.sock", "runtime_dir": sys.argv[2], "log_level": "info",
             "worker": {"prestart": 1}, "memory": {"quota_bytes": 0}}, c' "$work/config.json" "$runtime_dir"
check "check_daemon_config accepts JSON" check_daemon_config "$work/config.json" "$work/check.log"
echo '{"socket_path": ' >"$work/bad.json"
check "check_daemon_config refuses what is not JSON" bash -c \
  "source '$lib'; bin_dir='$bin_dir'; ! check_daemon_config --library-path /x '$work/bad.json' '$work/check.log'"

summary_init "$work/out/daemon.txt"
check "stop_daemon with no daemon does nothing" stop_daemon
check "start_daemon with the JSON text" start_daemon --library-path "/lib/one:/lib/two" --tail-file "$work/out/tail.txt" \
  --tail-lines 1 first "$(daemon_config "$runtime_dir" warn '"worker": {"prestart": 2}')" "$work/first.log"
check "  the socket exists" test -S "$runtime_dir/agileosd.sock"
same "  daemon_socket, daemon_runtime_dir" "$runtime_dir/agileosd.sock $runtime_dir" "$daemon_socket $daemon_runtime_dir"
check "  the configuration was written beside the socket" python3 -c \
  'import json, sys; assert json.load(open(sys.argv[1]))["log_level"] == "warn"' "$runtime_dir/agileosd.json"
check "  daemon_alive" daemon_alive
check "  daemon_waited is N.N seconds ($daemon_waited)" test -n "$(grep -xE '[0-9]+\.[0-9]' <<<"$daemon_waited")"
check "  agileosd got the library path" grep -q "LD_LIBRARY_PATH=/lib/one:/lib/two$" "$work/first.log"
first_pid=$daemon_pid
check "  it runs in a process group of its own" test "$(ps -o pgid= -p "$first_pid" | tr -d ' ')" = "$first_pid"
check "  its python3 listens" test -n "$(pids_with "$runtime_dir/agileosd.sock")"
check "stop_daemon stops it" stop_daemon
check "  no process of it is left" gone "$runtime_dir/agileosd.sock"
check "  daemon_pid is empty" test -z "$daemon_pid"
same "  daemon_forced" 0 "$daemon_forced"
same "  the log's last line went to the tail file" "$(tail -n 1 "$work/first.log")" "$(cat "$work/out/tail.txt")"
check "stop_daemon a second time does nothing" stop_daemon
same "  and says nothing" "" "$(stop_daemon)"

# A configuration file, a stale socket, a log appended to, and a restart that stops the one before.
rm -rf "${runtime_dir:?}"/*
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$runtime_dir/agileosd.sock"
echo "an earlier line" >"$work/second.log"
check "start_daemon with a configuration file, over a stale socket, --append" start_daemon --append --stop-wait 3 second \
  "$work/config.json" "$work/second.log"
same "  the log was appended to" "an earlier line" "$(head -n 1 "$work/second.log")"
check "  the daemon runs" daemon_alive
second_pid=$daemon_pid
check "start_daemon again stops the one before" start_daemon third "$work/config.json" "$work/third.log"
check "  the one before is gone" bash -c "! kill -0 $second_pid 2>/dev/null"
check "  the new one runs" daemon_alive
stop_daemon
check "  stopped" gone "$runtime_dir/agileosd.sock"

# Failures: a daemon that exits, one that never makes its socket, one that ignores SIGTERM.
daemon_config "$runtime_dir" info '"fake_mode": "exit"' >"$work/exit.json"
out="$(start_daemon --quote 2 broken "$work/exit.json" "$work/exit.log")"
status=$?
same "a daemon that exits: start_daemon returns 1" 1 "$status"
same "  a FAIL line and the log's last lines" "FAIL broken: agileosd did not start: no socket at $runtime_dir/agileosd.sock after 0 s
    | agileosd: starting, LD_LIBRARY_PATH=
    | agileosd: giving up" "$out"
summary_init "$work/out/failures.txt"
started=$SECONDS
start_daemon --wait 1 --no-fail --quote 5 hung "$(daemon_config "$runtime_dir" info '"fake_mode": "hang"')" "$work/hang.log" \
  >"$work/hang.out"
status=$?
same "a daemon without a socket: start_daemon returns 1" 1 "$status"
check "  within the bounded wait ($((SECONDS - started)) s)" test $((SECONDS - started)) -le 4
same "  --no-fail: an indented line, no FAIL" "  hung: agileosd did not start: no socket at $runtime_dir/agileosd.sock after 1 s
    | agileosd: starting, LD_LIBRARY_PATH=" "$(cat "$work/hang.out")"
same "  nothing counted as failed" 0 "$failed"
check "  its process is gone" gone "$runtime_dir/agileosd.sock"
check "  daemon_pid is empty" test -z "$daemon_pid"
check "start_daemon: a daemon that ignores SIGTERM" start_daemon --stop-wait 1 stubborn \
  "$(daemon_config "$runtime_dir" info '"fake_mode": "ignore_term"')" "$work/stubborn.log"
stop_daemon >"$work/stubborn.out"
same "stop_daemon kills its process group after the wait" \
  "NOTE daemon did not stop within 1 s of SIGTERM; killing its process group" "$(cat "$work/stubborn.out")"
same "  daemon_forced" 1 "$daemon_forced"
same "  daemon_status: killed (137)" 137 "$daemon_status"
check "  it is gone" gone "$runtime_dir/agileosd.sock"
same "start_daemon without a socket_path" "FAIL nosocket: agileosd not started: no \"socket_path\" in its configuration" \
  "$(start_daemon nosocket '{"worker": {}}')"

# ------------------------------------------------------------------ the EXIT trap

# A script that starts the daemon and then ends some way: the daemon must not outlive it.
cat >"$work/script.sh" <<'SCRIPT'
set -u
source "$1"
bin_dir="$2"
deps_dir=""
how="$3"
summary_init "$4"
finished() { say "finished with status $1"; [[ "$how" != status ]] || harness_exit_status=5; }
harness_exit_trap finished
start_daemon trapped "$(daemon_config "$5" info)" "$5.log" || exit 9
say "started $daemon_pid"
case "$how" in
  exit) exit 3 ;;
  unbound) echo "$no_such_variable" ;;
  status) exit 0 ;;
  term) sleep 30 ;;
  end) true ;;
esac
SCRIPT
for how in exit unbound status term end; do
  dir="$(harness_runtime_dir agileos-harness-test-trap)"
  if [[ "$how" == term ]]; then
    bash "$work/script.sh" "$lib" "$bin_dir" "$how" "$work/out/trap-$how.txt" "$dir" >/dev/null 2>&1 &
    script_pid=$!
    wait_for_line "$work/out/trap-$how.txt" "^started" 10
    kill -TERM "$script_pid"
    wait "$script_pid"
  else
    bash "$work/script.sh" "$lib" "$bin_dir" "$how" "$work/out/trap-$how.txt" "$dir" >/dev/null 2>&1
  fi
  status=$?
  case "$how" in exit) want=3 ;; unbound) want=1 ;; status) want=5 ;; term) want=143 ;; end) want=0 ;; esac
  same "EXIT trap ($how): exit status" "$want" "$status"
  check "  the exit function ran" grep -q "^finished with status" "$work/out/trap-$how.txt"
  check "  the daemon is gone" gone "$dir/agileosd.sock"
  rm -rf -- "$dir" "$dir.log"
done

# ------------------------------------------------------------------ helpers

check "elapsed_since" test "$(elapsed_since "$EPOCHREALTIME" | grep -cxE '0\.[0-9]{2}')" = 1
(sleep 0.5; echo "the line" >>"$work/later.txt") &
check "wait_for_line finds a line written later" wait_for_line "$work/later.txt" "^the line$" 5
check "wait_for_line gives up" bash -c "source '$lib'; ! wait_for_line '$work/later.txt' 'never' 1"
wait

rm -rf -- "$runtime_dir"
echo "$checks checks, $problems failed"
((problems == 0))
