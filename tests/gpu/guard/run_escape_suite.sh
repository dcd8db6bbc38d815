#!/usr/bin/env bash
# run_escape_suite.sh: the kernel memory guard's escape suite on the GPU machine. Every route
# of guard_escape (guard_escape.cu: a kernel, its own or one in an image it loads at run time,
# that tries to reach the protected range one way) runs once natively, where it must reach its
# target, and once under each guard policy through AgileOS, where it must not: one process per
# route and mode, at most AGILEOS_GUARD_ESCAPE_JOBS at a time, each under `timeout 20`.
#
# Two ways to use it:
#   - sourced by run_suite.sh (its step `guard_escape`), which then calls
#       run_guard_escape_suite PROGRAM [--native-only]
#     with its own daemon, sandbox, library paths, log folder and pass/fail counters;
#   - run directly, against a daemon that is already running:
#       tests/gpu/guard/run_escape_suite.sh [--native-only] PROGRAM
#     AGILEOS_RUNTIME_DIR  the daemon's runtime directory (holds agileosd.sock)
#     AGILEOS_BIN_DIR, AGILEOS_SHIM_DIR, AGILEOS_DEPS_DIR   as for run_suite.sh (.bundle/...)
#     AGILEOS_NATIVE_LIBRARY_PATH  where the real libcudart.so.13 and libcuda.so.1 are
#                          (default: found like run_suite.sh does, by tests/gpu/lib/harness.sh)
#     OUT                  where guard_escape.md goes (./gpu-suite-out)
#
# What the daemon must have (run_suite.sh's configuration provides it):
#   - "guard": {"policy": "trap", "allowed_policies": ["trap","poison","sink","remap_or","report"]},
#     so that a client may ask for any policy with AGILEOS_GUARD_POLICY=<policy>;
#   - worker argument --test-guard-canary, so that each client gets a canary (a protected 2 MiB
#     page of 0xA5 bytes) that the shim's agileosGuardCanary/agileosGuardStatus report;
#   - for the routes flagged modules=kvstore (trusted_body_*): the kvstore module in its module
#     pool and allowed ("modules": {"pool": [{"name": "kvstore", ...}], "allowed": ["kvstore"]}).
#
# Other settings (environment):
#   AGILEOS_GUARD_ESCAPE_JOBS      processes at once (8)
#   AGILEOS_GUARD_ESCAPE_BUDGET_S  no process starts after this many seconds (240; with the
#                                  20 s timeout the step ends within about 150 s)
#   AGILEOS_GUARD_ESCAPE_ROUTES    an extended regular expression: only the routes it matches
#
# Route flags: `guard_escape --list` prints each route's name, then, for the routes that load an
# image at run time (issue 13), a comma-separated list of flags, which this script obeys:
#   may-refuse       under AgileOS `refused` also passes (the image was refused at load or launch)
#   may-stop         under poison and sink `stopped` also passes (a call into the middle of a
#                    function faulted, the canary intact)
#   native-n/a       natively `n/a` passes instead of `reached` (there is no protected module)
#   modules=NAME     the AgileOS runs get AGILEOS_MODULES=NAME (the daemon's pool must hold it:
#                    run_suite.sh adds kvstore to its configuration when the bundle has it)
#
# Passes when: native `reached`; trap `stopped`; poison `poisoned`; sink `sunk`; remap_or
# `remapped`, `fault` or `n/a`; report `reached-counted` or `fault` (plus what the route's flags
# allow); and each AgileOS run reports the policy it asked for. Anything else fails; `ESCAPED` is
# announced loudly.
# Output: $OUT/guard_escape.md, a table route | native | trap | poison | sink | remap_or |
# report, rewritten as results come in, with the details of every failed cell below it; each
# process's stdout/stderr in <log folder>/guard_escape/.
set -uo pipefail
# say, pass, fail, the library lookup and the bundle's directories (a no-op when run_suite.sh,
# which sources it too, sources this file).
# shellcheck source=../lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

# Not readonly: run_suite.sh may source this file more than once.
GUARD_ESCAPE_MODES=(native trap poison sink remap_or report)
GUARD_ESCAPE_TIMEOUT_S=20

# Whether OUTCOME is what MODE must give, for a route with FLAGS (from --list; may be empty).
guard_escape_expected() {
  local mode="$1" outcome="$2" flags=",${3:-},"
  case "$mode:$outcome" in
    native:reached | trap:stopped | poison:poisoned | sink:sunk) return 0 ;;
    remap_or:remapped | remap_or:fault | remap_or:n/a) return 0 ;;
    report:reached-counted | report:fault) return 0 ;;
  esac
  case "$mode:$outcome:$flags" in
    native:n/a:*,native-n/a,*) return 0 ;;
    native:*) return 1 ;;
    *:refused:*,may-refuse,*) return 0 ;;
    poison:stopped:*,may-stop,* | sink:stopped:*,may-stop,*) return 0 ;;
  esac
  return 1
}

# The modules a route's AgileOS runs ask for (its flag modules=NAME), or nothing.
guard_escape_modules() {
  local flag
  for flag in ${ge_flags[$1]//,/ }; do
    [[ "$flag" == modules=* ]] && echo "${flag#modules=}"
  done
}

# guard_escape_process MODE ROUTE: one process; its stdout, stderr and exit status go to
# $ge_dir/ROUTE.MODE.{out,err,status} (the status file last: it marks the cell done).
guard_escape_process() {
  local mode="$1" route="$2" base="$ge_dir/$2.$1" status
  if [[ "$mode" == native ]]; then
    LD_LIBRARY_PATH="$ge_native_library_path" timeout --kill-after=5 "$GUARD_ESCAPE_TIMEOUT_S" \
      "$ge_program" --route "$route" >"$base.out" 2>"$base.err" </dev/null
    status=$?
  else
    local modules environment=("AGILEOS_GUARD_POLICY=$mode")
    modules="$(guard_escape_modules "$route")"
    [[ -z "$modules" ]] || environment+=("AGILEOS_MODULES=$modules")
    env "${environment[@]}" timeout --kill-after=5 "$GUARD_ESCAPE_TIMEOUT_S" "${ge_sandbox[@]}" -- \
      "$ge_program" --route "$route" >"$base.out" 2>"$base.err" </dev/null
    status=$?
  fi
  echo "$status" >"$base.status.tmp" && mv -f "$base.status.tmp" "$base.status"
}

# The outcome word of a cell ("" while it runs), from its result line or how it ended.
guard_escape_outcome() {
  local base="$ge_dir/$1.$2" status outcome
  [[ -e "$base.status" ]] || return 0
  status="$(<"$base.status")"
  if [[ "$status" == not-run ]]; then
    echo "not-run"
    return 0
  fi
  outcome="$(sed -n 's/^route=[^ ]* outcome=\([^ ]*\) detail=.*/\1/p' "$base.out" 2>/dev/null | head -n 1)"
  if [[ "$status" == 124 || "$status" == 137 ]]; then
    echo "hung"
  elif [[ -z "$outcome" ]]; then
    echo "no-result"
  else
    echo "$outcome"
  fi
}

# Why a cell came out as it did: the detail of its result line, or how the process ended.
guard_escape_detail() {
  local base="$ge_dir/$1.$2" status detail
  status="$(cat "$base.status" 2>/dev/null || echo '?')"
  detail="$(sed -n 's/^route=[^ ]* outcome=[^ ]* detail="\(.*\)"$/\1/p' "$base.out" 2>/dev/null | head -n 1)"
  case "$status" in
    not-run) echo "not started: the step's time budget (${ge_budget_s} s) was spent" ;;
    124 | 137) echo "killed after ${GUARD_ESCAPE_TIMEOUT_S} s; stderr: $(tail -n 2 "$base.err" 2>/dev/null | tr '\n' ' ')" ;;
    *)
      if [[ -n "$detail" ]]; then
        echo "$detail"
      else
        echo "exit $status, no result line; stderr: $(tail -n 3 "$base.err" 2>/dev/null | tr '\n' ' ')"
      fi
      ;;
  esac
}

# Whether a finished cell passes: the expected outcome, under the policy it asked for.
guard_escape_cell_passes() {
  local route="$1" mode="$2" outcome
  outcome="$(guard_escape_outcome "$route" "$mode")"
  guard_escape_expected "$mode" "$outcome" "${ge_flags[$route]}" || return 1
  [[ "$mode" == native ]] || guard_escape_detail "$route" "$mode" | grep -q "policy=$mode;"
}

# Why a failed cell failed, in one line.
guard_escape_failure() {
  local outcome
  outcome="$(guard_escape_outcome "$1" "$2")"
  if guard_escape_expected "$2" "$outcome" "${ge_flags[$1]}"; then
    echo "$outcome, but not under policy $2 (AGILEOS_GUARD_POLICY not applied?): $(guard_escape_detail "$1" "$2")"
  else
    echo "$outcome: $(guard_escape_detail "$1" "$2")"
  fi
}

# Rewrites $ge_table from the cells finished so far.
guard_escape_write_table() {
  local route mode outcome row failures="" done_cells=0 passed_cells=0
  {
    echo "# Kernel memory guard: escape suite"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), program \`$ge_program\`. Expected: native \`reached\`;" \
      "trap \`stopped\`; poison \`poisoned\`; sink \`sunk\`; remap_or \`remapped\`, \`fault\` or \`n/a\`;" \
      "report \`reached-counted\` or \`fault\`; a route with flags (after its name) may also give" \
      "\`refused\` (may-refuse), \`stopped\` under poison and sink (may-stop), native \`n/a\` (native-n/a)." \
      "A failed cell is **bold** with FAIL; a blank one has not finished."
    echo
    row="| route |"
    for mode in "${GUARD_ESCAPE_MODES[@]}"; do row+=" $mode |"; done
    echo "$row"
    echo "| --- |$(printf ' --- |%.0s' "${GUARD_ESCAPE_MODES[@]}")"
    for route in "${ge_routes[@]}"; do
      row="| $route${ge_flags[$route]:+ (${ge_flags[$route]})} |"
      for mode in "${ge_modes[@]}"; do
        outcome="$(guard_escape_outcome "$route" "$mode")"
        if [[ -z "$outcome" ]]; then
          row+="  |"
          continue
        fi
        done_cells=$((done_cells + 1))
        if guard_escape_cell_passes "$route" "$mode"; then
          passed_cells=$((passed_cells + 1))
          row+=" $outcome |"
        else
          row+=" **$outcome FAIL** |"
          failures+="- $route, $mode: $(guard_escape_failure "$route" "$mode")"$'\n'
        fi
      done
      for mode in "${GUARD_ESCAPE_MODES[@]:${#ge_modes[@]}}"; do row+=" (not run) |"; done
      echo "$row"
    done
    echo
    echo "$passed_cells of $done_cells finished cells as expected ($((${#ge_routes[@]} * ${#ge_modes[@]})) in all)."
    if [[ -n "$failures" ]]; then
      echo
      echo "## Failed cells"
      echo
      printf '%s' "$failures"
    fi
  } >"$ge_table.tmp"
  mv -f "$ge_table.tmp" "$ge_table"
}

# Reaps finished processes; rewrites the table if any finished. Returns 1 if none did.
guard_escape_reap() {
  local pid finished=0
  for pid in "${!ge_running[@]}"; do
    [[ -e "$ge_dir/${ge_running[$pid]}.status" ]] || continue
    wait "$pid" 2>/dev/null
    unset "ge_running[$pid]"
    finished=1
  done
  ((finished)) || return 1
  guard_escape_write_table
}

# The directories holding the real libcudart.so.13 and libcuda.so.1 (standalone use).
guard_escape_native_path() {
  harness_path_join "$(cuda_runtime_dir)" "$(cuda_driver_dir)"
}

# run_guard_escape_suite PROGRAM [--native-only]: the whole suite; reports through
# tests/gpu/lib/harness.sh's say/pass/fail (into run_suite.sh's summary and counters, or, run
# directly, onto stdout).
run_guard_escape_suite() {
  ge_program="$1"
  local native_only=0
  [[ "${2:-}" == --native-only ]] && native_only=1
  local started=$SECONDS route mode cell
  ge_budget_s="${AGILEOS_GUARD_ESCAPE_BUDGET_S:-240}"
  local jobs="${AGILEOS_GUARD_ESCAPE_JOBS:-8}"
  local route_filter="${AGILEOS_GUARD_ESCAPE_ROUTES:-}"
  # The caller's settings (run_suite.sh's variables) first, then the environment.
  ge_native_library_path="${native_library_path:-${AGILEOS_NATIVE_LIBRARY_PATH:-$(guard_escape_native_path)}}"
  local runtime="${runtime_dir:-${AGILEOS_RUNTIME_DIR:-}}"
  [[ -n "${bin_dir:-}" ]] || harness_bundle_dirs # bin_dir, shim_dir, deps_dir from the environment
  local bin="$bin_dir" shim="$shim_dir" deps="$deps_dir"
  local output="${out_dir:-${OUT:-$PWD/gpu-suite-out}}"
  local log_root="${logs:-$output}"
  ge_dir="$log_root/guard_escape"
  ge_table="$output/guard_escape.md"
  rm -rf -- "$ge_dir"
  mkdir -p "$ge_dir" "$output"

  if [[ ! -x "$ge_program" ]]; then
    fail "guard_escape: $ge_program is missing (tests/gpu/bundle.sh puts it in .bundle/guard/)"
    return 1
  fi
  ge_routes=()
  declare -gA ge_flags=()
  local listed line
  if ! listed="$(LD_LIBRARY_PATH="$ge_native_library_path" timeout 20 "$ge_program" --list 2>&1)"; then
    fail "guard_escape: $ge_program --list failed: $listed"
    return 1
  fi
  # Each line: NAME [FLAGS].
  while IFS= read -r line; do
    route="${line%% *}"
    [[ -n "$route" ]] || continue
    if [[ -z "$route_filter" || "$route" =~ $route_filter ]]; then
      ge_routes+=("$route")
      ge_flags[$route]=""
      [[ "$line" == *" "* ]] && ge_flags[$route]="${line#* }"
    fi
  done <<<"$listed"
  if ((${#ge_routes[@]} == 0)); then
    fail "guard_escape: no route to run (filter \"$route_filter\")"
    return 1
  fi
  ge_modes=(native)
  if ((!native_only)); then
    ge_modes=("${GUARD_ESCAPE_MODES[@]}")
    if [[ -z "$runtime" || ! -S "$runtime/agileosd.sock" ]]; then
      fail "guard_escape: no daemon socket at ${runtime:-(AGILEOS_RUNTIME_DIR unset)}/agileosd.sock"
      return 1
    fi
    ge_sandbox=("$bin/agileos-sandbox" --socket-dir "$runtime" --shim "$shim" --keep "$(dirname "$ge_program")"
      --keep "$bin")
    if [[ -n "$deps" ]]; then ge_sandbox+=(--lib-path "$deps"); fi
  fi
  say "guard escape suite: ${#ge_routes[@]} routes x ${#ge_modes[@]} modes (${ge_modes[*]}), $jobs at a time;" \
    "table in $ge_table"

  # Every route natively first, then route by route under each policy.
  local queue=()
  for route in "${ge_routes[@]}"; do queue+=("native $route"); done
  for route in "${ge_routes[@]}"; do
    for mode in "${ge_modes[@]:1}"; do queue+=("$mode $route"); done
  done
  declare -gA ge_running=()
  guard_escape_write_table
  for cell in "${queue[@]}"; do
    mode="${cell%% *}"
    route="${cell#* }"
    while ((${#ge_running[@]} >= jobs)); do guard_escape_reap || sleep 0.1; done
    if (((SECONDS - started) >= ge_budget_s)); then
      echo not-run >"$ge_dir/$route.$mode.status"
      continue
    fi
    guard_escape_process "$mode" "$route" &
    ge_running[$!]="$route.$mode"
  done
  while ((${#ge_running[@]} > 0)); do guard_escape_reap || sleep 0.1; done
  guard_escape_write_table

  # One summary line per route; every failed cell named with its detail.
  local bad_cells=0 escapes=0 outcomes failed_cells
  for route in "${ge_routes[@]}"; do
    outcomes=""
    failed_cells=""
    for mode in "${ge_modes[@]}"; do
      local outcome
      outcome="$(guard_escape_outcome "$route" "$mode")"
      outcomes+="${outcomes:+, }$mode $outcome"
      if [[ "$outcome" == ESCAPED ]]; then
        escapes=$((escapes + 1))
        say "ESCAPE: route $route under $mode: $(guard_escape_detail "$route" "$mode")"
      fi
      if ! guard_escape_cell_passes "$route" "$mode"; then
        bad_cells=$((bad_cells + 1))
        failed_cells+="; $mode: $(guard_escape_failure "$route" "$mode")"
      fi
    done
    if [[ -z "$failed_cells" ]]; then
      pass "guard_escape $route: $outcomes"
    else
      fail "guard_escape $route${failed_cells}"
    fi
  done
  say "guard escape suite: $((${#ge_routes[@]} * ${#ge_modes[@]} - bad_cells)) of" \
    "$((${#ge_routes[@]} * ${#ge_modes[@]})) cells as expected, $escapes ESCAPED, $((SECONDS - started)) s"
  ((bad_cells == 0))
}

# Run directly: say/pass/fail onto stdout only, then the suite.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  summary_init ""
  native_only_flag=""
  if [[ "${1:-}" == --native-only ]]; then
    native_only_flag=--native-only
    shift
  fi
  if (($# != 1)); then
    sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
  fi
  run_guard_escape_suite "$1" $native_only_flag
  exit $((failed > 0 ? 1 : 0))
fi
