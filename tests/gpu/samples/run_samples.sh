#!/usr/bin/env bash
# run_samples.sh: NVIDIA's cuda-samples natively and through AgileOS (issue 17's bar: every
# runtime-API sample that passes natively passes through AgileOS in the default configuration and
# with "require": "always", each compared with its native output). Runs on the GPU machine, from
# the repository root, on a bundle made by tests/gpu/bundle.sh: .bundle/bin, .bundle/shim, .bundle/deps
# and .bundle-samples/samples.tar.xz (built by tests/gpu/samples/build_samples.sh).
#
# Usage: tests/gpu/samples/run_samples.sh [--native-only] [--jobs N] [--budget S] [FILTER]
#   FILTER         an extended regular expression on CATEGORY/NAME: only those samples run
#   --native-only  the native runs only (no daemon, no sandbox): which samples pass on this machine
#   --jobs N       samples run N at a time (AGILEOS_SAMPLES_JOBS, 6): each sample's own runs are
#                  one after another, native first
#   --budget S     no run starts after S seconds (AGILEOS_SAMPLES_BUDGET_S, 480); the samples not
#                  finished then are "not run for time". A run started late gets at most the time left
#                  plus 20 s, so the script ends within about S + 30 s.
# Other inputs (environment):
#   AGILEOS_SAMPLES_ARCHIVE     the packed samples (.bundle-samples/samples.tar.xz); unpacked into
#                               AGILEOS_SAMPLES_DIR (.bundle-samples/samples) when that is missing or
#                               older
#   AGILEOS_SAMPLES_LIST        the samples and their arguments (tests/gpu/samples/samples.list)
#   AGILEOS_SAMPLES_NATIVE_TIMEOUT_S   a native run's limit (30)
#   AGILEOS_SAMPLES_AGILEOS_TIMEOUT_S  an AgileOS run's limit (60: guarded modules are JIT-compiled)
#   AGILEOS_BIN_DIR, AGILEOS_SHIM_DIR, AGILEOS_DEPS_DIR   as for run_suite.sh (.bundle/...)
#   AGILEOS_LOG                 the clients' log level (warn: the shim's "not supported" lines)
#   AGILEOS_SAMPLES_WORKER      the daemons' worker executable (agileos-worker)
#   AGILEOS_SAMPLES_DRY_RUN=1   no GPU needed: no /dev/nvidia0 check, no CUDA library lookup (for
#                               samples/dry_run.sh: stand-in samples, fake-GPU workers, CPU machine)
#   OUT                         where the results go (./samples-out)
#
# For each sample (samples.list):
#   1. natively, in a scratch copy of its directory (data files, kernels), under a timeout; it passes
#      natively when it exits 0 and prints no failure line ("Test failed", "FAILED", "Result = FAIL").
#      A sample that does not is "skipped (fails natively)" with its exit status and first error
#      line, and is not run through AgileOS. A native pass under 20 s is run a second time natively:
#      a stdout line that differs between the two native runs varies on its own and is not compared,
#      nor is a line varies_natively.list names (seen varying in earlier native runs).
#   2. through AgileOS in agileos-sandbox against a daemon of the default configuration ("agileos"),
#   3. and against a daemon whose guard rewrites every module ("guard": {"require": "always"};
#      "agileos-always"), both started by this script, each run in a fresh scratch copy.
#   An AgileOS run matches the native one when its exit status is the same, its pass/fail lines
#   are the same, and its stdout is the same after normalize_output.sh (timing and rate lines
#   dropped, long hexadecimal numbers masked; see that script) and after ignoring the lines that
#   varied natively. Output with exactly the native lines in another order matches too, and the
#   summary says so: concurrent threads' lines (device printf, host threads) have no defined order.
#   The verdict is PASS when both AgileOS runs match, otherwise FAIL with the
#   first relevant line: the shim's "not supported" warning, else the first error line of the
#   AgileOS run's stderr or stdout, else the first differing line.
#
# Output under $OUT, written as the samples finish:
#   samples_summary.txt   one line per sample: "SAMPLE NATIVE AGILEOS AGILEOS-ALWAYS VERDICT REASON"
#                         (a run: ok/exitN/timeout/differs with its seconds, or "-"), then the tally
#                         "samples: N passed, M failed, K skipped (fail natively), T not run for time,
#                         B not built"
#   samples_logs.tar.gz   every run's stdout, stderr and diff; both daemons' logs
# Exit status: 0 when no sample failed (skipped and not run do not fail), 1 otherwise, 77 without a GPU.
set -uo pipefail
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib/harness.sh
source "$script_dir/../lib/harness.sh"

readonly START_SECONDS=$SECONDS
native_only=0
filter=""
parallel="${AGILEOS_SAMPLES_JOBS:-6}"
budget_s="${AGILEOS_SAMPLES_BUDGET_S:-480}"
while (($#)); do
  case "$1" in
    --native-only) native_only=1 ;;
    --jobs) parallel="$2"; shift ;;
    --budget) budget_s="$2"; shift ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) filter="$1" ;;
  esac
  shift
done
readonly NATIVE_TIMEOUT_S="${AGILEOS_SAMPLES_NATIVE_TIMEOUT_S:-30}"
readonly AGILEOS_TIMEOUT_S="${AGILEOS_SAMPLES_AGILEOS_TIMEOUT_S:-60}"
readonly GRACE_S=20
# A sample's own verdict on itself, as the samples print it.
readonly PASS_LINE='([Tt]est [Pp]assed|TEST PASSED|Result = PASS|PASSED|[Pp]assed!?$)'
readonly FAIL_LINE='([Tt]est [Ff]ailed|TEST FAILED|Result = FAIL|FAILED|FAILURE)'

harness_bundle_dirs # bin_dir, shim_dir, deps_dir
archive="${AGILEOS_SAMPLES_ARCHIVE:-$PWD/.bundle-samples/samples.tar.xz}"
samples_dir="${AGILEOS_SAMPLES_DIR:-$PWD/.bundle-samples/samples}"
list="${AGILEOS_SAMPLES_LIST:-$script_dir/samples.list}"
out_dir="${OUT:-$PWD/samples-out}"
export AGILEOS_LOG="${AGILEOS_LOG:-warn}"
mkdir -p "$out_dir"
summary_init "$out_dir/samples_summary.txt"
work="$(mktemp -d /tmp/agileos-samples.XXXXXX)"
chmod 755 "$work"
logs="$work/logs"
results="$work/results"
mkdir -p "$logs" "$results"
default_runtime="" always_runtime=""
default_pid="" always_pid=""

# shellcheck disable=SC2317  # used by the EXIT trap's finish
elapsed() { echo $((SECONDS - START_SECONDS)); }
time_left() { echo $((budget_s - (SECONDS - START_SECONDS))); }

# ------------------------------------------------------------------ the samples

# The list's samples: "CATEGORY/NAME<TAB>ARGS" lines (comments dropped), FILTER applied.
list_samples() {
  sed -e 's/#.*//' "$list" | awk 'NF { name = $1; $1 = ""; sub(/^ +/, ""); print name "\t" $0 }' |
    while IFS=$'\t' read -r sample arguments; do
      if [[ -z "$filter" || "$sample" =~ $filter ]]; then printf '%s\t%s\n' "$sample" "$arguments"; fi
    done
}

unpack_samples() {
  if [[ -d "$samples_dir" && (! -f "$archive" || "$samples_dir" -nt "$archive") ]]; then return 0; fi
  [[ -f "$archive" ]] || { fail "setup: no samples: $archive is missing (tests/gpu/bundle.sh builds it; carry .bundle-samples)"; exit 1; }
  rm -rf -- "$samples_dir"
  mkdir -p "$(dirname "$samples_dir")"
  local unpack
  unpack="$(mktemp -d "$(dirname "$samples_dir")/.samples-unpack.XXXXXX")"
  if ! xz -dc -- "$archive" | tar -xf - -C "$unpack"; then
    fail "setup: cannot unpack $archive"
    exit 1
  fi
  mv -- "$unpack/samples" "$samples_dir"
  touch -- "$samples_dir" # newer than the archive: the next run reuses it
  rm -rf -- "$unpack"
}

# Sandboxed programs run as unprivileged uids: the samples must be readable and every directory
# above them passable (as run_suite.sh's make_bundle_reachable does for the bundle).
make_reachable() {
  local path dir
  for path in "$samples_dir" "$bin_dir" "$shim_dir" ${deps_dir:+"$deps_dir"}; do
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

# ------------------------------------------------------------------ the daemons

# start_samples_daemon NAME GUARD_JSON PRIVILEGES_JSON: a daemon of its own runtime directory; sets
# NAME's runtime directory and pid. Both daemons run at once: the second takes worker uids apart
# from the first's (a daemon kills what runs as a uid before handing it out).
start_samples_daemon() {
  local name="$1" guard="$2" privileges="$3" runtime config
  runtime="$(harness_runtime_dir "agileos-samples-$name")"
  local members=("\"worker\": {\"executable\": \"${AGILEOS_SAMPLES_WORKER:-agileos-worker}\", \"prestart\": $parallel, \"max_workers\": $((parallel + 2))}"
    "\"guard\": {$guard${guard:+, }\"cache_dir\": \"$runtime-module-cache\"}")
  config="$runtime/agileosd.json"
  daemon_config "$runtime" info "${members[@]}" ${privileges:+"$privileges"} >"$config"
  if [[ -n "$privileges" ]] && ! check_daemon_config "$config" "$logs/check-config-$name.log"; then
    # A daemon without privilege separation knows no "privileges" section.
    daemon_config "$runtime" info "${members[@]}" >"$config"
  fi
  if ! check_daemon_config "$config" "$logs/check-config-$name.log"; then
    fail "daemon $name: agileosd --check-config rejected the configuration"
    quote "$logs/check-config-$name.log"
    return 1
  fi
  daemon_pid="" # the other daemon's stays running: start_daemon stops only the one in daemon_pid
  start_daemon --lifetime $((budget_s + 120)) --stop-wait 15 "$name" "$config" "$logs/agileosd-$name.log" || return 1
  say "daemon $name: listening at $daemon_socket after $daemon_waited s (guard: {${guard:-defaults}})"
  printf -v "${name}_runtime" '%s' "$runtime"
  printf -v "${name}_pid" '%s' "$daemon_pid"
}

# shellcheck disable=SC2317  # called from the EXIT trap
stop_samples_daemons() {
  local pid
  for pid in "$default_pid" "$always_pid"; do
    [[ -n "$pid" ]] || continue
    daemon_pid="$pid"
    stop_daemon
  done
  default_pid="" always_pid=""
}

# ------------------------------------------------------------------ one run

# run_program MODE NAME SAMPLE_DIR TIMEOUT ARGS...: MODE native, agileos or always; the sample runs
# in a scratch copy of its directory; output in $logs/NAME.MODE.{out,err}; prints "STATUS SECONDS".
run_program() {
  local mode="$1" name="$2" dir="$3" limit="$4"
  shift 4
  local scratch="$work/run/$name.$mode" started=$EPOCHREALTIME status
  rm -rf -- "$scratch"
  mkdir -p "$scratch"
  cp -r -- "$dir/." "$scratch/"
  rm -f -- "$scratch/$name" # the program runs from the bundle; its files are here
  chmod -R a+rwX "$scratch"
  local program="$dir/$name"
  case "$mode" in
    native | native2)
      (cd "$scratch" && LD_LIBRARY_PATH="$native_library_path" timeout --kill-after=5 "$limit" "$program" "$@") \
        >"$logs/$name.$mode.out" 2>"$logs/$name.$mode.err" </dev/null
      status=$?
      ;;
    agileos | always)
      local runtime="$default_runtime"
      [[ "$mode" == always ]] && runtime="$always_runtime"
      local sandbox=("$bin_dir/agileos-sandbox" --socket-dir "$runtime" --shim "$shim_dir" --keep "$samples_dir"
        --keep-rw "$scratch")
      if [[ -n "$deps_dir" ]]; then sandbox+=(--lib-path "$deps_dir"); fi
      (cd "$scratch" && LD_LIBRARY_PATH="$deps_dir" timeout --kill-after=10 "$limit" "${sandbox[@]}" -- "$program" "$@") \
        >"$logs/$name.$mode.out" 2>"$logs/$name.$mode.err" </dev/null
      status=$?
      ;;
  esac
  rm -rf -- "$scratch"
  echo "$status $(elapsed_since "$started")"
}

# A run's limit: its timeout, or the time left in the budget plus the grace, whichever is less;
# nothing (not run) once the budget is spent.
run_limit() {
  local limit="$1" left
  left="$(time_left)"
  ((left > 0)) || return 1
  ((left + GRACE_S < limit)) && limit=$((left + GRACE_S))
  echo "$limit"
}

# A run's cell in the summary: ok:1.23s, exit1:0.50s, timeout:60s, differs:1.20s.
# The line numbers of `norm` (a sample's normalized stdout) that varies_natively.list masks for
# the sample `name`, one per line.
known_varying_lines() {
  local name="$1" norm="$2" sample anchor first last at
  while IFS=$'\t' read -r sample anchor first last; do
    [[ "$sample" == "$name" ]] || continue
    at="$(grep -n -m1 -E -- "$anchor" "$norm" | cut -d: -f1)"
    [[ -n "$at" ]] || continue
    seq $((at + first)) $((at + last))
  done < <(grep -v -E '^(#|$)' "$script_dir/varies_natively.list")
}

cell() {
  local status="$1" seconds="$2" same="${3:-1}"
  if ((status == 124 || status == 137)); then
    echo "timeout:${seconds%.*}s"
  elif ((status != 0)); then
    echo "exit$status:${seconds}s"
  elif ((same)); then
    echo "ok:${seconds}s"
  else
    echo "differs:${seconds}s"
  fi
}

# The first line of FILE... that says what went wrong (the shim's warnings first), cut to 160 characters.
first_error_line() {
  local line
  line="$(grep -h -m1 -E 'not supported by AgileOS|has no row in the shim|failing closed|refused|[Gg]uard' "$@" 2>/dev/null | head -n 1)"
  [[ -n "$line" ]] || line="$(grep -h -v -E '^agileos-sandbox: left out the GPU library' "$@" 2>/dev/null |
    grep -m1 -iE 'error|fail|abort|fault|illegal|unsupported|not supported|cannot|unable|insufficient|mismatch|segmentation|returned [0-9]+|code=[0-9]+' |
    head -n 1)"
  printf '%s' "${line:0:160}"
}

# A run's own verdict lines (pass/fail), numbers masked (timings on them are not compared; the
# numbers are compared with the rest of stdout, normalized).
verdict_lines() {
  grep -E "$PASS_LINE|$FAIL_LINE" "$1" | sed -E 's/[0-9]+(\.[0-9]+)?/N/g'
}

# compare NAME MODE: whether NAME's MODE run matches its native run (see the header); the diff of
# the normalized outputs in $logs/NAME.MODE.diff.
# same_lines_in_another_order NAME MODE: the run printed exactly the native lines (each as often),
# in another order. Lines that concurrent threads print (device printf from several blocks, host
# threads) have no defined order between them, natively either; every line is still compared.
# Whole outputs are compared too: the mask of lines that varied natively is by position, so when
# the order varied natively (the two native runs printed the blocks in different orders) it masks
# other lines of each run and the masked outputs no longer hold the same lines.
same_lines_in_another_order() {
  local base="$logs/$1"
  cmp -s <(LC_ALL=C sort "$base.native.cmp") <(LC_ALL=C sort "$base.$2.cmp") ||
    cmp -s <(LC_ALL=C sort "$base.native.norm") <(LC_ALL=C sort "$base.$2.norm")
}

compare() {
  local name="$1" mode="$2" base="$logs/$1"
  "$script_dir/normalize_output.sh" <"$base.$mode.out" >"$base.$mode.norm"
  if [[ -f "$base.native.mask" ]]; then
    awk 'NR == FNR { masked[$1] = 1; next } !(FNR in masked)' "$base.native.mask" "$base.$mode.norm" >"$base.$mode.cmp"
  else
    cp -- "$base.$mode.norm" "$base.$mode.cmp"
  fi
  diff -u "$base.native.cmp" "$base.$mode.cmp" >"$base.$mode.diff"
}

# ------------------------------------------------------------------ one sample

# run_sample SAMPLE ARGS: runs one sample every way, appends its line to the summary, writes its
# verdict to $results/NAME (PASS, FAIL, SKIP, NOTRUN, NOTBUILT).
run_sample() {
  local sample="$1" arguments="$2" name dir
  name="$(basename "$sample")"
  dir="$samples_dir/$name"
  local -a args=()
  read -r -a args <<<"$arguments"
  local native="-" agileos="-" always="-" reason=""
  local -a reordered=()
  if [[ ! -x "$dir/$name" ]]; then
    reason="$(grep -m1 -F "$sample " "$samples_dir/BUILD-FAILURES.txt" 2>/dev/null | cut -d' ' -f2-)"
    report "$name" - - - NOTBUILT "not built: ${reason:-no binary in the bundle}"
    return
  fi
  local limit status seconds
  if ! limit="$(run_limit "$NATIVE_TIMEOUT_S")"; then
    report "$name" - - - NOTRUN "not run for time"
    return
  fi
  read -r status seconds < <(run_program native "$name" "$dir" "$limit" "${args[@]}")
  native="$(cell "$status" "$seconds")"
  local base="$logs/$name"
  if ((status != 0)) || grep -qE "$FAIL_LINE" "$base.native.out"; then
    reason="$(first_error_line "$base.native.out" "$base.native.err")"
    ((status == 2)) && reason="waived (exit 2)${reason:+: $reason}"
    ((status == 124 || status == 137)) && reason="timed out after $limit s${reason:+: $reason}"
    [[ "$native" == ok:* ]] && native="failline:${seconds}s"
    report "$name" "$native" - - SKIP "skipped (fails natively)${reason:+: $reason}"
    return
  fi
  "$script_dir/normalize_output.sh" <"$base.native.out" >"$base.native.norm"
  # A second native run: the lines that vary natively are not compared; so are those known to
  # vary (varies_natively.list) where the two runs happen to agree.
  local varied=""
  known_varying_lines "$name" "$base.native.norm" >"$base.native.known"
  if [[ "${seconds%.*}" -lt 20 ]] && limit="$(run_limit "$NATIVE_TIMEOUT_S")"; then
    local status2
    read -r status2 _ < <(run_program native2 "$name" "$dir" "$limit" "${args[@]}")
    mv -f -- "$base.native2.out" "$base.native-again.out" 2>/dev/null
    mv -f -- "$base.native2.err" "$base.native-again.err" 2>/dev/null
    if ((status2 == 0)); then
      "$script_dir/normalize_output.sh" <"$base.native-again.out" >"$base.native-again.norm"
      if (($(wc -l <"$base.native.norm") == $(wc -l <"$base.native-again.norm"))); then
        paste -d '\n' "$base.native.norm" "$base.native-again.norm" |
          awk 'NR % 2 { line = $0; next } line != $0 { print NR / 2 }' >"$base.native.mask"
      fi
    fi
  fi
  local masks=("$base.native.known")
  [[ -f "$base.native.mask" ]] && masks+=("$base.native.mask")
  sort -n -u -- "${masks[@]}" >"$base.native.masked"
  mv -f -- "$base.native.masked" "$base.native.mask"
  rm -f -- "$base.native.known"
  varied="$(wc -l <"$base.native.mask")"
  if ((varied == 0)); then
    varied=""
    rm -f -- "$base.native.mask"
  fi
  if [[ -f "$base.native.mask" ]]; then
    awk 'NR == FNR { masked[$1] = 1; next } !(FNR in masked)' "$base.native.mask" "$base.native.norm" >"$base.native.cmp"
  else
    cp -- "$base.native.norm" "$base.native.cmp"
  fi
  if ((native_only)); then
    report "$name" "$native" - - PASS "native only${varied:+; $varied line(s) vary natively}"
    return
  fi
  local mode verdict_mode failed_modes=() problem
  for mode in agileos always; do
    if ! limit="$(run_limit "$AGILEOS_TIMEOUT_S")"; then
      report "$name" "$native" "$agileos" "$always" NOTRUN "not run for time"
      return
    fi
    read -r status seconds < <(run_program "$mode" "$name" "$dir" "$limit" "${args[@]}")
    local same=1
    problem=""
    if ((status != 0)); then
      same=0
      problem="exit $status"
      ((status == 124 || status == 137)) && problem="timed out after $limit s"
      ((status == 125)) && problem="sandbox could not be set up"
    elif ! diff -q <(verdict_lines "$base.native.out") <(verdict_lines "$base.$mode.out") >/dev/null; then
      same=0
      problem="its pass/fail line differs"
    fi
    if ! compare "$name" "$mode"; then
      if ((same)) && same_lines_in_another_order "$name" "$mode"; then
        reordered+=("$mode")
      else
        if ((same)); then problem="stdout differs"; fi
        same=0
      fi
    fi
    verdict_mode="$(cell "$status" "$seconds" "$same")"
    if [[ "$mode" == agileos ]]; then agileos="$verdict_mode"; else always="$verdict_mode"; fi
    if ((!same)); then
      local line
      line="$(first_error_line "$base.$mode.err" "$base.$mode.out")"
      if [[ -z "$line" ]]; then
        local removed added
        removed="$(grep -m1 -E '^-([^-]|$)' "$base.$mode.diff" | cut -c2-80)"
        added="$(grep -m1 -E '^\+([^+]|$)' "$base.$mode.diff" | cut -c2-80)"
        line="native '${removed}', AgileOS '${added}'"
      fi
      failed_modes+=("$mode: $problem${line:+: $line}")
    fi
  done
  if ((${#failed_modes[@]} == 0)); then
    local notes="${varied:+$varied line(s) vary natively, not compared}"
    if ((${#reordered[@]} > 0)); then
      notes="${notes:+$notes; }${reordered[*]}: the same lines in another order (concurrent threads' output)"
    fi
    report "$name" "$native" "$agileos" "$always" PASS "$notes"
  elif ((${#failed_modes[@]} == 2)) && [[ "${failed_modes[0]#agileos: }" == "${failed_modes[1]#always: }" ]]; then
    report "$name" "$native" "$agileos" "$always" FAIL "both: ${failed_modes[0]#agileos: }"
  else
    local joined
    joined="$(printf '%s; ' "${failed_modes[@]}")"
    report "$name" "$native" "$agileos" "$always" FAIL "${joined%; }"
  fi
}

# report NAME NATIVE AGILEOS ALWAYS VERDICT REASON: the sample's line (one write, so that lines
# of samples running at once do not mix) and its verdict file.
report() {
  local reason="${6:-}"
  printf '%-30s %-16s %-16s %-16s %-8s %s\n' "$1" "$2" "$3" "$4" "$5" "$reason" >"$results/$1.line"
  echo "$5" >"$results/$1"
  cat "$results/$1.line" >>"$summary"
  cat "$results/$1.line"
}

# ------------------------------------------------------------------ main

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  local status=$1 pid
  for pid in "${sample_pids[@]}"; do kill -- "$pid" 2>/dev/null; done
  for pid in "${sample_pids[@]}"; do wait "$pid" 2>/dev/null; done
  stop_samples_daemons
  ((status == 77)) && { rm -rf -- "$work"; return; }
  # Samples that never reported (the script was stopped): not run for time.
  local sample name
  while IFS=$'\t' read -r sample _; do
    name="$(basename "$sample")"
    if [[ ! -f "$results/$name" ]] && ((${started_samples:-0})); then
      report "$name" - - - NOTRUN "not run for time (the run was stopped)"
    fi
  done < <(list_samples 2>/dev/null)
  local count_pass count_fail count_skip count_notrun count_notbuilt
  count_pass="$(grep -lx PASS "$results"/* 2>/dev/null | wc -l)"
  count_fail="$(grep -lx FAIL "$results"/* 2>/dev/null | wc -l)"
  count_skip="$(grep -lx SKIP "$results"/* 2>/dev/null | wc -l)"
  count_notrun="$(grep -lx NOTRUN "$results"/* 2>/dev/null | wc -l)"
  count_notbuilt="$(grep -lx NOTBUILT "$results"/* 2>/dev/null | wc -l)"
  say ""
  say "samples: $count_pass passed, $count_fail failed, $count_skip skipped (fail natively)," \
    "$count_notrun not run for time, $count_notbuilt not built; $(elapsed) s"
  cp -- "$logs"/agileosd-*.log "$out_dir/" 2>/dev/null
  tar -C "$work" -czf "$out_dir/samples_logs.tar.gz" logs 2>/dev/null
  rm -rf -- "$work"
  if ((status == 0)); then harness_exit_status=$((count_fail == 0 ? 0 : 1)); fi
}
harness_exit_trap finish
started_samples=0
sample_pids=() # the samples' jobs (the daemons are this shell's children too: never a bare `wait`)

# How many of the samples' jobs still run.
running_samples() {
  local pid count=0
  for pid in "${sample_pids[@]}"; do kill -0 "$pid" 2>/dev/null && count=$((count + 1)); done
  echo "$count"
}

say "AgileOS cuda-samples, $(date -u '+%Y-%m-%d %H:%M:%S UTC')${filter:+, filter \"$filter\"}; $parallel at a time, budget $budget_s s"
if [[ "${AGILEOS_SAMPLES_DRY_RUN:-0}" == 1 ]]; then
  say "dry run: no GPU check, no CUDA libraries"
  cudart_dir="" driver_dir="" native_library_path=""
else
  require_gpu
  cudart_dir="$(cuda_runtime_dir)"
  driver_dir="$(cuda_driver_dir)"
  [[ -n "$cudart_dir" && -n "$driver_dir" ]] || { fail "setup: libcudart.so.13 or libcuda.so.1 not found on this machine"; exit 1; }
  native_library_path="$cudart_dir:$driver_dir"
fi
unpack_samples
say "$(head -n 1 "$samples_dir/BUILD.txt" 2>/dev/null)"
if ((!native_only)); then
  require_files "$bin_dir/agileosd" "$bin_dir/agileos-worker" "$bin_dir/agileos-sandbox" "$shim_dir/libagileos_cudart.so" || exit 1
  make_reachable
  start_samples_daemon default "" "" || exit 1
  start_samples_daemon always '"require": "always"' '"privileges": {"worker_uid_base": 199600, "worker_uid_count": 64}' || exit 1
fi
say ""
say "$(printf '%-30s %-16s %-16s %-16s %-8s %s' sample native agileos agileos-always verdict reason)"
started_samples=1
while IFS=$'\t' read -r sample arguments; do
  while (($(running_samples) >= parallel)); do sleep 0.2; done
  run_sample "$sample" "$arguments" &
  sample_pids+=($!)
done < <(list_samples)
for pid in "${sample_pids[@]}"; do wait "$pid"; done
exit 0
