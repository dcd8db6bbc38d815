#!/usr/bin/env bash
# run_bench.sh: issue 3's benchmark. Runs every workload of agileos_bench natively and then
# through AgileOS, one after the other on the same GPU in the same run, and writes a table of
# p50/p99, throughput and the ratios to native. Runs on the GPU machine, from the repository
# root, with the bundle of tests/gpu/bundle.sh (like tests/gpu/run_suite.sh).
#
# Usage: tests/bench/run_bench.sh [--quick] [--timeout S] [FILTER]
#   FILTER       an extended regular expression; only the workloads whose name matches run
#                (agileos_bench --list names them), e.g. 'memcpy|launch'.
#   --quick      fewer samples and smaller application sizes, on both sides alike.
#   --timeout S  limit for one workload on one side (default 120 s); a workload that runs
#                longer is killed and reported as timed out.
#
# What it does:
#   1. checks that there is a GPU (exit 77 "SKIPPED: ..." if /dev/nvidia0 is absent) and
#      records the hardware line (GPU, driver, CPU);
#   2. starts agileosd (setsid; config and sockets in a fresh runtime dir under /tmp; log level
#      warn for the daemon and its workers, AGILEOS_LOG=error for the clients, so that logging
#      does not run while measuring);
#   3. for each workload: agileos_bench WORKLOAD natively, then the same binary with the same
#      arguments inside agileos-sandbox (each in its own process, each under the timeout), then
#      waits AGILEOS_BENCH_SETTLE_S seconds so that the daemon's replacement worker is up before
#      the next native measurement;
#   4. writes the table (format_table.py, needs python3) and stops the daemon (trap), whatever
#      happened.
# The daemon's start and stop, the library lookup and the reporting are tests/gpu/lib/harness.sh's.
# Whatever transport the shim uses is what is measured: the script and the program do not
# depend on it, so another transport is measured with the same command (name it with
# AGILEOS_BENCH_LABEL).
#
# Inputs (environment; the defaults are the bundle made by tests/gpu/bundle.sh):
#   AGILEOS_BIN_DIR         agileosd, agileos-worker, agileos-sandbox   (.bundle/bin)
#   AGILEOS_SHIM_DIR        libagileos_cudart.so                        (.bundle/shim)
#   AGILEOS_DEPS_DIR        bundled libraries, may be empty             (.bundle/deps)
#   AGILEOS_BENCH_PROGRAM   the benchmark program                       (.bundle/bench/agileos_bench)
#   AGILEOS_BENCH_BUDGET_S  seconds after which no further workload is started (360)
#   AGILEOS_BENCH_SETTLE_S  pause after each AgileOS run (2)
#   AGILEOS_BENCH_LABEL     the name of the AgileOS side in the table ("AgileOS")
#   AGILEOS_BENCH_NATIVE_LIB_PATH  directories put before the CUDA runtime's in the native runs'
#                           LD_LIBRARY_PATH, for a program that needs more (run_cufft_bench.sh: cuFFT)
#   AGILEOS_BENCH_LIBRARIES libraries the program dlopens, colon-separated, bound into the sandbox
#                           with agileos-sandbox --library (run_math_bench.sh: cuDNN's sublibraries)
#   AGILEOS_BENCH_WORKER_ARGS  the daemon's worker.args, as JSON strings separated by commas (e.g.
#                           '"--lone-launch-chains"' or '"--no-launch-chains"'), to compare worker modes
#   OUT                     where the results go (./bench-out)
#
# Output, in $OUT, written as the run goes:
#   native.jsonl, agileos.jsonl  one line per workload and side: agileos_bench's JSON line with
#                                "side", "status": "ok" and "process_s" added, or a line with
#                                "status": "timeout" | "failed" | "no_result" | "not_run";
#   bench.jsonl                  both of the above, in the order they were measured;
#   bench.md                     the Markdown table with the hardware line on top;
#   bench.log                    this script's progress; logs.tar.gz every run's stdout/stderr.
# Exit status: 0 if every selected workload was measured on both sides, 1 otherwise, 77 without
# a GPU.
set -uo pipefail
# shellcheck source=../gpu/lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/lib/harness.sh"

readonly START_SECONDS=$SECONDS
readonly WORKLOAD_NAME_PATTERN='^[a-z0-9_]+$'

quick=0
timeout_s=120
filter=""
while (($# > 0)); do
  case "$1" in
    --quick) quick=1 ;;
    --timeout)
      if [[ ! "${2:-}" =~ ^[1-9][0-9]*$ ]]; then
        echo "run_bench.sh: --timeout needs a number of seconds" >&2
        exit 2
      fi
      timeout_s="$2"
      shift
      ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) echo "run_bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) filter="$1" ;;
  esac
  shift
done

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
harness_bundle_dirs # bin_dir, shim_dir, deps_dir
program="${AGILEOS_BENCH_PROGRAM:-$PWD/.bundle/bench/agileos_bench}"
budget_s="${AGILEOS_BENCH_BUDGET_S:-360}"
settle_s="${AGILEOS_BENCH_SETTLE_S:-2}"
label="${AGILEOS_BENCH_LABEL:-AgileOS}"
out_dir="${OUT:-$PWD/bench-out}"
export AGILEOS_LOG="${AGILEOS_LOG:-error}"

mkdir -p "$out_dir"
summary_init "$out_dir/bench.log" # say (and a FAIL line's fail) writes there
: >"$out_dir/bench.jsonl"
: >"$out_dir/native.jsonl"
: >"$out_dir/agileos.jsonl"
logs="$(mktemp -d /tmp/agileos-bench-logs.XXXXXX)"
runtime_dir=""
incomplete=0
program_args=()
((quick)) && program_args+=(--quick)

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  stop_daemon
  if [[ -n "$runtime_dir" ]]; then rm -rf -- "$runtime_dir"; fi
  tar -C "$logs" -czf "$out_dir/logs.tar.gz" . 2>/dev/null
  rm -rf -- "$logs"
}
harness_exit_trap finish

# ------------------------------------------------------------------ the machine

check_machine() {
  local options="${filter:+, filter \"$filter\"}"
  if ((quick)); then options+=", --quick"; fi
  say "AgileOS benchmark, $(date -u '+%Y-%m-%d %H:%M:%S UTC')$options"
  require_gpu # "SKIPPED: ..." and exit 77 without /dev/nvidia0
  cudart_dir="$(cuda_runtime_dir)"
  driver_dir="$(cuda_driver_dir)"
  [[ -n "$cudart_dir" ]] || { fail "setup: libcudart.so.13 not found on this machine"; exit 1; }
  [[ -n "$driver_dir" ]] || { fail "setup: libcuda.so.1 not found on this machine"; exit 1; }
  native_library_path="$(harness_path_join "${AGILEOS_BENCH_NATIVE_LIB_PATH:-}" "$cudart_dir" "$driver_dir")"
  require_files "$program" "$bin_dir/agileosd" "$bin_dir/agileos-worker" "$bin_dir/agileos-sandbox" \
    "$shim_dir/libagileos_cudart.so" || exit 1

  local cudart
  cudart="$(basename "$(readlink -f "$cudart_dir/libcudart.so.13")")"
  hardware="GPU: $(gpu_description); CPU: $(cpu_description); CUDA runtime: $cudart; $(uname -sr)"
  say "$hardware"
}

# ------------------------------------------------------------------ the daemon

# Logging turned down (warn) so that it does not run while measuring; 2 workers prestarted. It
# lives the budget, two workload timeouts and a minute; stop_daemon waits 15 s after SIGTERM.
bench_daemon() {
  runtime_dir="$(harness_runtime_dir agileos-bench-run)"
  start_daemon --lifetime $((budget_s + 2 * timeout_s + 60)) --stop-wait 15 --quote 30 \
    --tail-file "$out_dir/daemon.log.tail" --tail-lines 40 daemon \
    "$(daemon_config "$runtime_dir" warn "\"worker\": {\"executable\": \"agileos-worker\", \"prestart\": 2, \"max_workers\": 4, \"args\": [${AGILEOS_BENCH_WORKER_ARGS:-}]}")" \
    "$logs/agileosd.log" || exit 1
  say "daemon: listening after $daemon_waited s"
}

# ------------------------------------------------------------------ one workload

# run_side SIDE NAME: runs agileos_bench NAME natively or in agileos-sandbox; output in
# $logs/NAME.SIDE.{out,err}; sets run_status and run_seconds.
run_side() {
  local side="$1" name="$2" started=$EPOCHREALTIME
  if [[ "$side" == native ]]; then
    LD_LIBRARY_PATH="$native_library_path" timeout --kill-after=10 "$timeout_s" \
      "$program" "${program_args[@]}" "$name" >"$logs/$name.$side.out" 2>"$logs/$name.$side.err" </dev/null
  else
    local sandbox=("$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" --shim "$shim_dir"
      --keep "$(dirname "$program")")
    if [[ -n "$deps_dir" ]]; then sandbox+=(--lib-path "$deps_dir"); fi
    local library
    local -a libraries=()
    IFS=: read -r -a libraries <<<"${AGILEOS_BENCH_LIBRARIES:-}"
    for library in "${libraries[@]}"; do sandbox+=(--library "$library"); done
    timeout --kill-after=10 "$timeout_s" "${sandbox[@]}" -- "$program" "${program_args[@]}" "$name" \
      >"$logs/$name.$side.out" 2>"$logs/$name.$side.err" </dev/null
  fi
  run_status=$?
  run_seconds="$(elapsed_since "$started")"
}

# The last line of a file, reduced to characters that need no escaping in a JSON string.
json_safe_tail() {
  tail -n 1 -- "$1" 2>/dev/null | tr -c 'A-Za-z0-9 _.,:;()/=+-' ' ' | cut -c1-200 | sed 's/ *$//'
}

# record SIDE NAME: appends the result of the last run_side (the program's JSON line, or what
# went wrong) to $OUT/SIDE.jsonl and $OUT/bench.jsonl, and prints a progress line.
record() {
  local side="$1" name="$2" line="" lines=0 note
  if ((run_status == 0)); then
    line="$(grep -E "^\{\"workload\": \"$name\"," "$logs/$name.$side.out")"
    lines="$(grep -c . <<<"$line")"
  fi
  if ((run_status == 0 && lines == 1)); then
    line="{\"side\": \"$side\", \"status\": \"ok\", \"process_s\": $run_seconds, ${line#\{}"
    note="$(grep -Eo '"(p50|p99|unit|throughput|throughput_unit)": [^,}]*' <<<"$line" |
      sed 's/"//g' | tr '\n' ' ')"
  else
    incomplete=1
    local head="{\"side\": \"$side\", \"workload\": \"$name\""
    if ((run_status == 124 || run_status == 137)); then
      line="$head, \"status\": \"timeout\", \"timeout_s\": $timeout_s, \"process_s\": $run_seconds}"
      note="TIMED OUT after $timeout_s s"
    elif ((run_status == 0)); then
      line="$head, \"status\": \"no_result\", \"process_s\": $run_seconds}"
      note="NO RESULT: exit 0 but $lines JSON lines for $name"
    else
      local reason
      reason="$(json_safe_tail "$logs/$name.$side.err")"
      line="$head, \"status\": \"failed\", \"exit\": $run_status, \"reason\": \"$reason\""
      line+=", \"process_s\": $run_seconds}"
      note="FAILED with exit $run_status: $reason"
    fi
  fi
  echo "$line" >>"$out_dir/$side.jsonl"
  echo "$line" >>"$out_dir/bench.jsonl"
  say "  $side: ${note% } (${run_seconds} s)"
}

record_not_run() {
  local name="$1" side line
  incomplete=1
  for side in native agileos; do
    line="{\"side\": \"$side\", \"workload\": \"$name\", \"status\": \"not_run\""
    line+=", \"reason\": \"time budget of $budget_s s spent\"}"
    echo "$line" >>"$out_dir/$side.jsonl"
    echo "$line" >>"$out_dir/bench.jsonl"
  done
  say "$name: NOT RUN, the time budget of $budget_s s is spent"
}

bench_workload() {
  local name="$1"
  if (((SECONDS - START_SECONDS) >= budget_s)); then
    record_not_run "$name"
    return
  fi
  say "$name"
  run_side native "$name"
  record native "$name"
  run_side agileos "$name"
  record agileos "$name"
  if ! kill -0 "${daemon_pid:-}" 2>/dev/null; then
    say "  NOTE agileosd has exited; the remaining AgileOS runs will fail"
  fi
  sleep "$settle_s"
}

# ------------------------------------------------------------------ main

check_machine
workloads=()
while IFS= read -r name; do
  [[ "$name" =~ $WORKLOAD_NAME_PATTERN ]] || continue
  [[ -z "$filter" || "$name" =~ $filter ]] || continue
  workloads+=("$name")
done < <(LD_LIBRARY_PATH="$native_library_path" timeout 30 "$program" --list)
((${#workloads[@]} > 0)) || { say "FAIL no workload matches \"$filter\" (agileos_bench --list)"; exit 1; }
bench_daemon
for name in "${workloads[@]}"; do bench_workload "$name"; done
stop_daemon

command_line="tests/bench/run_bench.sh"
if ((quick)); then command_line+=" --quick"; fi
command_line+=" --timeout $timeout_s"
if [[ -n "$filter" ]]; then command_line+=" '$filter'"; fi
if command -v python3 >/dev/null; then
  if python3 "$script_dir/format_table.py" --hardware "$hardware" --command "$command_line" \
    --candidate-name "$label" "$out_dir/native.jsonl" "$out_dir/agileos.jsonl" >"$out_dir/bench.md"; then
    say ""
    tee -a "$out_dir/bench.log" <"$out_dir/bench.md"
  else
    say "FAIL format_table.py could not make the table; the results are in $out_dir/*.jsonl"
    incomplete=1
  fi
else
  say "NOTE no python3 here: make the table elsewhere with"
  say "  tests/bench/format_table.py --hardware '$hardware' native.jsonl agileos.jsonl"
fi
say ""
say "finished after $((SECONDS - START_SECONDS)) s"
exit "$incomplete"
