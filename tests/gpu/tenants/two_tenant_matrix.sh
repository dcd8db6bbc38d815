#!/usr/bin/env bash
# two_tenant_matrix.sh: the two-tenant matrix of seed 002 (../shared/seeds/002_9684182f97b7fe38.txt,
# section 2.9, rows 2G-01..2G-09), adapted to AgileOS: the seed's two vGPU guests on two mdevs are
# two tenant clients side by side, each in agileos-sandbox (a host uid of its own) with a worker
# process and CUDA context of its own. docs/security-model.md ("The two-tenant matrix (seed 002)")
# maps each row; in short:
#
#   2G-01  both tenants at once: device query and a 4 MiB payload through a kernel, exact; two
#          uids, two workers; no error in the daemon's log
#   2G-02  the mdevs' VRAM sizes are quotas: AGILEOS_MEMORY_QUOTA 1G and 2G, each tenant's
#          cudaMemGetInfo total is its own quota, it gets all of it and not 2 MiB more
#   2G-03  handle/VA collision: the intruder's pad and buffer lie at the owner's very addresses,
#          each keeps its own bytes; calls with the owner's stream and event values are refused
#   2G-04  doorbell cross-talk: one tenant floods its worker with launches and async calls while
#          the other measures its own round trips: it keeps progressing, every result exact
#   2G-05  completion ownership: the owner's buffer address, event and stream used by the
#          intruder are refused, its kernel store there faults in its own context; the owner's
#          canaries, pad, work and handles are intact
#   2G-06  fault injection: malformed inputs, an illegal address and a trap from one tenant fail
#          closed with CUDA errors while the other keeps progressing; then a new client is served
#   2G-07  teardown: kill -9 of one tenant mid-run (busy on the GPU); the other continues, the
#          victim's worker is released, retired and reaped in that order, a new client is served
#          and finds none of the victim's memory (residue probe); then the daemon stops cleanly
#          (SIGTERM: exit 0, no worker left, socket removed) and a fresh one serves the rest
#   2G-08  stress: 20 cycles of two tenants (every 5th with one killed -9 mid-session); worker
#          processes, worker endpoints and the daemon's descriptors back to baseline, every
#          session closed and released, no taint, no error
#   2G-09  sequencing: 3 sequential tenants then 2 concurrent ones, each on a fresh worker, each
#          finds none of the previous one's memory (residue probe over more than half the device)
#
# Usage: tests/gpu/tenants/two_tenant_matrix.sh [ROWS]  (from the repository root, after tests/gpu/bundle.sh)
#   ROWS  an extended regular expression over the row names, e.g. '2G-0[19]' (default: all)
# Inputs (environment; defaults are the bundle's): AGILEOS_BIN_DIR, AGILEOS_SHIM_DIR,
# AGILEOS_DEPS_DIR, AGILEOS_TENANTS_DIR, AGILEOS_TENANT_MATRIX_BUDGET_S (170: no program runs past
# it; run_suite.sh gives the whole script 200 s), OUT (tenant_matrix_summary.txt and
# tenant_matrix_logs.tar.gz go there).
# Output: $OUT/tenant_matrix_summary.txt, written as it goes: one line "PASS 2G-0n ..." or
# "FAIL 2G-0n ..." per row, details indented above it, "tenant matrix: N passed, M failed" last.
# Exit status: 0 all passed, 1 a row failed, 77 no GPU.
# The daemon's start and stop, the library lookup and the reporting are tests/gpu/lib/harness.sh's.
set -uo pipefail
# shellcheck source=../lib/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/harness.sh"

harness_bundle_dirs # bin_dir, shim_dir, deps_dir
tenants_dir="${AGILEOS_TENANTS_DIR:-$PWD/.bundle/tenants}"
budget_s="${AGILEOS_TENANT_MATRIX_BUDGET_S:-170}"
rows="${1:-}"
out_dir="${OUT:-$PWD/gpu-suite-out}"
mkdir -p "$out_dir"
summary_init "$out_dir/tenant_matrix_summary.txt" # say, pass, fail, quote_tail write there
require_gpu # "SKIPPED: ..." and exit 77 without /dev/nvidia0 (before anything needs cleaning up)
runtime_dir="$(harness_runtime_dir agileos-matrix)"
logs="$(mktemp -d /tmp/agileos-matrix-logs.XXXXXX)"
daemon_log="$logs/agileosd.log"
readonly PRESTART=4 MAX_WORKERS=10
readonly GIB=$((1 << 30))
readonly DEADLINE=$((SECONDS + budget_s))
agileosd=""     # the agileosd process (daemon_pid is the `timeout` above it)
daemon_failures=0
declare -A tenant_pid=()
tenant_env=()           # VAR=VALUE for the next tenant's environment
tenant_stdin=/dev/null  # the next tenant's stdin
go_fd=""                # the FIFO a tenant_owner waits on, held open here
problems=()             # what failed in the current row

note() { say "  $*"; }
problem() { problems+=("$*"); }

# The timeout for a program: SECONDS, but never past the matrix's deadline.
limit() {
  local seconds="$1" left=$((DEADLINE - SECONDS))
  ((left < seconds)) && seconds=$left
  ((seconds < 1)) && seconds=1
  echo "$seconds"
}

# ------------------------------------------------------------------ processes

# "PID PPID STATE COMM" for every process (from /proc; comm without spaces is all we look for).
process_table() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk '{
    lp = index($0, "("); rp = 0
    for (i = length($0); i > lp; i--) if (substr($0, i, 1) == ")") { rp = i; break }
    if (lp == 0 || rp == 0) next
    split(substr($0, rp + 2), f, " ")
    print substr($0, 1, lp - 2), f[2], f[1], substr($0, lp + 1, rp - lp - 1)
  }'
}

# descendant_named ROOT NAME: the pid of a live descendant of ROOT whose command is NAME.
descendant_named() {
  process_table | awk -v root="$1" -v name="$2" '
    { parent[$1] = $2; state[$1] = $3; comm[$1] = $4; pids[++n] = $1 }
    END {
      for (k = 1; k <= n; k++) {
        p = pids[k]
        if (comm[p] != name || state[p] == "Z") continue
        q = p
        for (d = 0; d < 16 && q + 0 > 1; d++) { q = parent[q]; if (q == root) { print p; exit } }
      }
    }'
}

# Live worker processes of the daemon; worker endpoints in the runtime directory (worker-<id>.sock
# and .shm.sock, or a worker-<id>/ directory, depending on the daemon's version); its descriptors.
worker_count() { process_table | awk -v p="$agileosd" '$2 == p && $4 == "agileos-worker" && $3 != "Z"' | wc -l; }
endpoint_count() { find "$runtime_dir" -mindepth 1 -maxdepth 1 -name 'worker-*' 2>/dev/null | wc -l; }
daemon_fds() { find "/proc/$agileosd/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
worker_pids() { process_table | awk -v p="$agileosd" '$2 == p && $4 == "agileos-worker" && $3 != "Z" { print $1 }'; }
# NVIDIA Xid lines in the kernel's log so far, or "?" where it cannot be read (reported, not checked).
xid_lines() {
  local kernel_log
  if kernel_log="$(dmesg 2>/dev/null)"; then grep -c 'NVRM: Xid' <<<"$kernel_log"; else echo "?"; fi
}
xid_note() {  # BEFORE: the Xid lines the kernel logged since
  local now
  now="$(xid_lines)"
  if [[ "$1" == "?" || "$now" == "?" ]]; then
    note "kernel log: not readable here (dmesg), Xid lines not counted"
  else
    note "kernel log: $((now - $1)) new NVRM Xid line(s) during the row"
  fi
}

# Waits up to SECONDS for the daemon to be idle: at least PRESTART live workers and worker
# endpoints, both unchanged over three looks half a second apart.
wait_idle() {
  local deadline=$((SECONDS + $1)) steady=0 now last=""
  [[ -n "$agileosd" ]] || return 1
  while ((SECONDS < deadline)); do
    now="$(worker_count) $(endpoint_count)"
    if [[ "$now" == "$last" ]] && ((${now%% *} >= PRESTART)); then
      steady=$((steady + 1))
      ((steady >= 2)) && return 0
    else
      steady=0
    fi
    last="$now"
    sleep 0.5
  done
  return 1
}

# ------------------------------------------------------------------ the daemon

# Stops the daemon (stop_daemon: SIGTERM, then SIGKILL to its process group after 10 s);
# daemon_status is its exit status, daemon_forced 1 if it had to be killed.
daemon_status=""
daemon_forced=0
matrix_stop_daemon() {
  stop_daemon
  agileosd=""
}

# shellcheck disable=SC2317  # called from the EXIT trap
# Ends the tenants still running (through their `timeout`, which passes SIGTERM on to the
# sandbox launcher, which passes it to bubblewrap), then waits for them.
stop_tenants() {
  local name timeout_pid
  for name in "${!tenant_pid[@]}"; do
    kill -0 "${tenant_pid[$name]}" 2>/dev/null || continue
    timeout_pid="$(descendant_named "${tenant_pid[$name]}" timeout | head -1)"
    [[ -n "$timeout_pid" ]] && kill -TERM "$timeout_pid" 2>/dev/null
  done
  for name in "${!tenant_pid[@]}"; do wait "${tenant_pid[$name]}" 2>/dev/null; done
}

# shellcheck disable=SC2317  # called from the EXIT trap
finish() {
  local status=$1
  stop_tenants
  stop_daemon
  if [[ -n "$go_fd" ]]; then exec {go_fd}>&-; fi
  tar -czf "$out_dir/tenant_matrix_logs.tar.gz" -C "$logs" . 2>/dev/null
  rm -rf -- "$runtime_dir" "$runtime_dir-admin" "$logs"
  say ""
  summary_line "tenant matrix" # "tenant matrix: N passed, M failed"
  if ((status > 1)); then
    harness_exit_status=$status # ended by a signal
  elif ((failed == 0 && status == 0)); then
    harness_exit_status=0
  else
    harness_exit_status=1
  fi
}
harness_exit_trap finish
trap 'exit 143' TERM INT

# The daemon gets the bundled libraries and the driver's (not the CUDA runtime's).
driver_dir="$(cuda_driver_dir)"
daemon_path="$(harness_path_join "$deps_dir" "$driver_dir")"

# write_config [MEMBER]: the daemon's configuration (log level info), MEMBER ('"KEY": VALUE') added
# at its end.
write_config() {
  daemon_config "$runtime_dir" info \
    "\"worker\": {\"executable\": \"$bin_dir/agileos-worker\", \"prestart\": $PRESTART, \"max_workers\": $MAX_WORKERS}" \
    '"memory": {"quota_bytes": 0}' '"guard": {"cache_dir": ""}' "$@" >"$runtime_dir/agileosd.json"
}

# matrix_daemon: a fresh daemon (the one before stopped), its log appended to $daemon_log; it lives
# the matrix's budget and 30 s. On a failure it says why (no FAIL line: the rows fail) and counts it.
matrix_daemon() {
  matrix_stop_daemon
  # A daemon that knows the "privileges" section runs every worker as a uid of its own and, before
  # it hands a uid out, kills every process running as it: this daemon takes a range apart from
  # the default one, which run_suite.sh's daemon, running meanwhile, uses. An older daemon
  # refuses the unknown section; it then gets none.
  write_config '"privileges": {"worker_uid_base": 199400, "worker_uid_count": 64}'
  if ! check_daemon_config --library-path "$daemon_path" "$runtime_dir/agileosd.json" "$logs/check-config.log"; then
    write_config
  fi
  if start_daemon --library-path "$daemon_path" --lifetime $((budget_s + 30)) --append --no-fail --quote 20 \
    daemon "$runtime_dir/agileosd.json" "$daemon_log"; then
    agileosd="$(descendant_named "$daemon_pid" agileosd | head -1)"
    return 0
  fi
  daemon_failures=$((daemon_failures + 1))
  return 1
}

# The daemon's log since line MARK (log_lines before), in FILE.
log_lines() { wc -l <"$daemon_log" 2>/dev/null || echo 0; }
log_since() { tail -n "+$(($1 + 1))" "$daemon_log" >"$2" 2>/dev/null; }

# "CLIENT UID" of each hello line for PROGRAM in FILE.
hellos() {
  sed -n "s/.*client \([0-9][0-9]*\): hello from [^ ]* (uid \([0-9][0-9]*\) .*program '$2'.*/\1 \2/p" "$1"
}
# "WORKER PID" that CLIENT was attached to, from FILE.
worker_of() {
  sed -n "s/.*client $2: attached to worker \([0-9][0-9]*\) (pid \([0-9][0-9]*\)).*/\1 \2/p" "$1" | head -1
}

# ------------------------------------------------------------------ tenants

# tenant NAME PROGRAM SECONDS ARGS...: PROGRAM (of the tenants directory) in agileos-sandbox, in the
# background, under a timeout of SECONDS (never past the deadline), with tenant_env added to its
# environment and tenant_stdin as its stdin; output in $logs/NAME.{out,err}, its exit status in
# $logs/NAME.status once it ends.
tenant() {
  local name="$1" program="$2" seconds
  seconds="$(limit "$3")"
  shift 3
  rm -f "$logs/$name.status"
  (
    if [[ -n "$go_fd" ]]; then exec {go_fd}>&-; fi
    env ${tenant_env[@]+"${tenant_env[@]}"} LD_LIBRARY_PATH="$deps_dir" timeout --kill-after=5 "$seconds" \
      "$bin_dir/agileos-sandbox" --socket-dir "$runtime_dir" --shim "$shim_dir" ${deps_dir:+--lib-path "$deps_dir"} \
      --keep "$tenants_dir" -- "$tenants_dir/$program" "$@" >"$logs/$name.out" 2>"$logs/$name.err" <"$tenant_stdin"
    echo $? >"$logs/$name.status"
  ) &
  tenant_pid[$name]=$!
}
wait_tenant() { [[ -z "${tenant_pid[$1]:-}" ]] || wait "${tenant_pid[$1]}" 2>/dev/null; }
wait_tenants() { local name; for name in "$@"; do wait_tenant "$name"; done; }
status_of() { cat "$logs/$1.status" 2>/dev/null || echo none; }
running() { [[ ! -e "$logs/$1.status" ]]; }
line_of() { grep -m1 -- "$2" "$1" 2>/dev/null; }  # FILE PATTERN: the first matching line
# lines_of FILE PREFIX EXPRESSION: the lines "PREFIX: ..." whose rest matches EXPRESSION (grep -E),
# without the prefix, joined with "; ".
lines_of() {
  grep -E "^$2: ($3)" "$1" 2>/dev/null | sed "s/^$2: //" | awk 'NR > 1 { printf "; " } { printf "%s", $0 }'
}

# expect_exit NAME STATUS WHAT: a problem, with the tenant's last lines, unless it exited STATUS.
expect_exit() {
  local status
  status="$(status_of "$1")"
  [[ "$status" == "$2" ]] && return 0
  case "$status" in
    124) problem "$3 timed out" ;;
    125) problem "$3: the sandbox could not be set up (exit 125)" ;;
    none) problem "$3 did not end" ;;
    *) problem "$3 exited $status$(grep -m1 'FAILED' "$logs/$1.out" 2>/dev/null | sed 's/^/: /')" ;;
  esac
  quote_tail "$logs/$1.out" 6
  quote_tail "$logs/$1.err" 4
  return 1
}

# Kills the tenant's program itself (inside its sandbox) with SIGKILL; prints its pid.
kill_tenant() {
  local victim
  victim="$(descendant_named "${tenant_pid[$1]:-0}" "$2" | head -1)"
  [[ -n "$victim" ]] || return 1
  kill -KILL "$victim" 2>/dev/null || return 1
  echo "$victim"
}

# "COUNT FEWEST LONGEST_MS ROUND_TRIPS" over the windows of a tenant_progress --measure output
# that overlap [FROM, TO] (wall-clock seconds).
windows_between() {
  awk -v from="$2" -v to="$3" '$1 == "progress:" && $2 == "window" {
      start = $3 + 0; end = start + $4; if (end < from + 0 || start > to + 0) next
      count++; total += $5; if (count == 1 || $5 + 0 < fewest) fewest = $5 + 0; if ($6 + 0 > longest) longest = $6 + 0 }
    END { printf "%d %d %.1f %d\n", count, fewest, longest, total }' "$1" 2>/dev/null || echo "0 0 0 0"
}

# ------------------------------------------------------------------ rows

row_mark=0
# row_begin ID TITLE: whether the row runs (the filter, the deadline, a live daemon).
row_begin() {
  [[ -z "$rows" || "$1" =~ $rows ]] || return 1
  say ""
  say "== $1: $2"
  problems=()
  if ((DEADLINE - SECONDS < 15)); then
    fail "$1 not run: the matrix's time budget (${budget_s} s) is spent"
    return 1
  fi
  if ! daemon_alive; then
    if ((daemon_failures >= 2)); then
      fail "$1 not run: the daemon could not be started"
      return 1
    fi
    note "the daemon is not running; starting a new one"
    if ! matrix_daemon; then
      fail "$1 not run: the daemon could not be started"
      return 1
    fi
  fi
  row_mark="$(log_lines)"
  return 0
}
# row_end ID WHAT: PASS with WHAT, or FAIL with every problem.
row_end() {
  if ((${#problems[@]} == 0)); then
    pass "$1 $2"
  else
    local joined
    joined="$(printf '%s; ' "${problems[@]}")"
    fail "$1 ${joined%; }"
  fi
}

# The owner's published values ("owner: ready pad=... buf=... stream=... event=...").
owner_values() {
  sed -n 's/^owner: ready pad=\(0x[0-9a-f]*\) buf=\(0x[0-9a-f]*\) stream=\(0x[0-9a-f]*\) event=\(0x[0-9a-f]*\)$/\1 \2 \3 \4/p' \
    "$logs/$1.out" 2>/dev/null | head -1
}

# owner_and_intruder ROW MODE: tenant_owner holds its state; tenant_intruder attacks it with the
# values it published (2G-03: collide, 2G-05: foreign); the owner checks everything once told "go".
owner_and_intruder() {
  local row="$1" mode="$2" owner="O${1#2G-}" intruder="I${1#2G-}" fifo="$logs/${1}.go" values pad buf stream event
  mkfifo "$fifo"
  exec {go_fd}<>"$fifo"
  tenant_stdin="$fifo"
  tenant "$owner" tenant_owner 60 --tag 1 --hold 45
  tenant_stdin=/dev/null
  if wait_for_line "$logs/$owner.out" "^owner: ready " 30 && values="$(owner_values "$owner")" && [[ -n "$values" ]]; then
    read -r pad buf stream event <<<"$values"
    note "owner: pad $pad, buffer $buf, stream $stream, event $event"
    tenant "$intruder" tenant_intruder 40 --mode "$mode" --tag 2 --owner-pad "$pad" --owner-buf "$buf" \
      --owner-stream "$stream" --owner-event "$event"
    wait_tenant "$intruder"
    running "$owner" || problem "the owner ended before the intruder was done (exit $(status_of "$owner"))"
  else
    problem "the owner never published its values"
  fi
  echo go >&"$go_fd"
  wait_tenant "$owner"
  exec {go_fd}>&-
  go_fd=""
}

# After owner_and_intruder ROW: the owner's lines, then the exits. The intruder exits 0, or 3 when
# the setup the row needs could not be made (NO_SETUP says what, its line matching SETUP_LINE is
# quoted); the owner exits 0 and checked its memory only after its "go".
pair_outcome() {  # ROW NO_SETUP SETUP_LINE
  local owner="O${1#2G-}" intruder="I${1#2G-}"
  note "owner: $(lines_of "$logs/$owner.out" owner 'go|no go|intact')"
  if [[ "$(status_of "$intruder")" == 3 ]]; then
    problem "$2: $(grep -m1 "$3" "$logs/$intruder.out")"
  else
    expect_exit "$intruder" 0 "the intruder"
  fi
  expect_exit "$owner" 0 "the owner" && {
    grep -q "^owner: go after" "$logs/$owner.out" || problem "the owner checked before it was told the intruder was done"
  }
}

row_2g01() {
  row_begin 2G-01 "both tenants at once: device query and a payload round trip, each on its own worker" || return 0
  local xid_before
  xid_before="$(xid_lines)"
  tenant A01 tenant_smoke 30 --seed 101 --hold 4
  tenant B01 tenant_smoke 30 --seed 202 --hold 4
  if wait_for_line "$logs/A01.out" "^smoke: holding" 30 && wait_for_line "$logs/B01.out" "^smoke: holding" 30 &&
    running A01 && running B01; then
    note "both tenants hold their sessions at once"
  else
    problem "the two tenants did not hold their sessions at the same time"
  fi
  wait_tenants A01 B01
  local name seed=101
  for name in A01 B01; do
    [[ $name == B01 ]] && seed=202
    note "$name: $(lines_of "$logs/$name.out" smoke 'devices|payload')"
    expect_exit "$name" 0 "tenant $name" &&
      { grep -qx "smoke: payload 4194304 bytes round trip exact (seed $seed)" "$logs/$name.out" ||
        problem "tenant $name: no exact payload round trip"; }
  done
  log_since "$row_mark" "$logs/2G-01.daemon.log"
  local -a clients=() uids=() workers=()
  local client uid worker pid
  while read -r client uid; do
    clients+=("$client")
    uids+=("$uid")
    read -r worker pid <<<"$(worker_of "$logs/2G-01.daemon.log" "$client")"
    workers+=("${worker:-none} (pid ${pid:-?})")
  done < <(hellos "$logs/2G-01.daemon.log" tenant_smoke)
  if ((${#clients[@]} != 2)); then
    problem "the daemon's log has ${#clients[@]} hello lines of tenant_smoke, expected 2"
  elif [[ "${uids[0]}" == "${uids[1]}" ]]; then
    problem "both tenants connected as uid ${uids[0]}"
  elif [[ "${workers[0]}" == "${workers[1]}" || "${workers[0]}" == none* || "${workers[1]}" == none* ]]; then
    problem "the tenants were not attached to two workers: ${workers[0]}, ${workers[1]}"
  fi
  xid_note "$xid_before"
  local errors
  errors="$(grep -cE '\[(error|critical)\]' "$logs/2G-01.daemon.log")"
  if ((errors != 0)); then
    problem "$errors error lines in the daemon's log"
    grep -E '\[(error|critical)\]' "$logs/2G-01.daemon.log" >"$logs/2G-01.errors"
    quote_tail "$logs/2G-01.errors" 5
  fi
  row_end 2G-01 "two tenants at once (uids ${uids[*]:-?}) on workers ${workers[0]:-?} and ${workers[1]:-?}: payloads exact, no error in the daemon's log"
}

row_2g02() {
  row_begin 2G-02 "distinct memory sizes: AGILEOS_MEMORY_QUOTA 1G and 2G" || return 0
  tenant_env=(AGILEOS_MEMORY_QUOTA=1G)
  tenant A02 tenant_memory 40 --alloc-all --more $((2 << 20)) --hold 4
  tenant_env=(AGILEOS_MEMORY_QUOTA=2G)
  tenant B02 tenant_memory 40 --alloc-all --more $((2 << 20)) --hold 4
  tenant_env=()
  if wait_for_line "$logs/A02.out" "^tenant: holding" 40 && wait_for_line "$logs/B02.out" "^tenant: holding" 40 &&
    running A02 && running B02; then
    note "both tenants hold all of their quota at once"
  else
    problem "the two tenants did not hold their memory at the same time"
  fi
  wait_tenants A02 B02
  log_since "$row_mark" "$logs/2G-02.daemon.log"
  local name quota=$GIB allocated facts=""
  for name in A02 B02; do
    [[ $name == B02 ]] && quota=$((2 * GIB))
    allocated="$(sed -n 's/^tenant: allocated //p' "$logs/$name.out" 2>/dev/null)"
    note "$name: $(lines_of "$logs/$name.out" tenant 'total|allocated|more|FAILED')"
    expect_exit "$name" 0 "tenant $name" || continue
    grep -qx "tenant: total=$quota free=[0-9]*" "$logs/$name.out" ||
      problem "tenant $name: cudaMemGetInfo's total is not its quota $quota"
    if [[ -z "$allocated" ]] || ((allocated < quota - 8 * (1 << 20))); then
      problem "tenant $name got ${allocated:-nothing} of its $quota bytes"
    fi
    grep -q "^tenant: more refused (cudaErrorMemoryAllocation)" "$logs/$name.out" ||
      problem "tenant $name was not refused 2 MiB beyond its quota"
    grep -q "program 'tenant_memory'.*memory quota $quota bytes" "$logs/2G-02.daemon.log" ||
      problem "the daemon's log has no hello with memory quota $quota bytes"
    facts+="${facts:+, }$name sees total=$quota and gets $((${allocated:-0} >> 20)) MiB"
  done
  row_end 2G-02 "$facts; 2 MiB more refused to each (cudaErrorMemoryAllocation) (no BAR1 in AgileOS: the quota is the size)"
}

row_2g03() {
  row_begin 2G-03 "handle/VA collision: the intruder allocates at the owner's addresses and uses its handle values" || return 0
  owner_and_intruder 2G-03 collide
  note "intruder: $(lines_of "$logs/I03.out" intruder 'own|collide|the owner')"
  pair_outcome 2G-03 "no collision could be forced" '^intruder: own pad'
  row_end 2G-03 "$(sed -n 's/^intruder: collide: //p' "$logs/I03.out" | head -1); the owner intact $(sed -n 's/^owner: intact //p' "$logs/O03.out" | head -1)"
}

row_2g04() {
  row_begin 2G-04 "doorbell cross-talk: A floods its worker while B measures its own progress" || return 0
  tenant B04 tenant_progress 40 --measure 10
  if ! wait_for_line "$logs/B04.out" "^progress: measuring" 30; then
    problem "B never started measuring"
  fi
  sleep 2
  tenant A04 tenant_progress 40 --hammer 4
  wait_tenants A04 B04
  local from to alone during
  from="$(sed -n 's/^hammer: started //p' "$logs/A04.out" | head -1)"
  to="$(sed -n 's/^hammer: stopped //p' "$logs/A04.out" | head -1)"
  expect_exit A04 0 "the hammering tenant A"
  expect_exit B04 0 "the measuring tenant B"
  note "A: $(line_of "$logs/A04.out" '^hammer: done')"
  note "B: $(line_of "$logs/B04.out" '^progress: done')"
  if [[ -z "$from" || -z "$to" ]]; then
    problem "A's flood has no start and end times"
    row_end 2G-04 ""
    return
  fi
  read -r -a alone <<<"$(windows_between "$logs/B04.out" 0 "$(awk -v t="$from" 'BEGIN { printf "%.3f", t - 0.3 }')")"
  read -r -a during <<<"$(windows_between "$logs/B04.out" "$from" "$to")"
  note "B alone: ${alone[0]} windows of 250 ms, ${alone[3]} round trips, longest ${alone[2]} ms;" \
    "during A's flood: ${during[0]} windows, ${during[3]} round trips, fewest in a window ${during[1]}, longest ${during[2]} ms"
  ((during[0] >= 2)) || problem "B measured only ${during[0]} windows while A flooded (no overlap)"
  ((during[1] >= 1)) || problem "B made no progress in a window while A flooded"
  awk -v l="${during[2]}" 'BEGIN { exit !(l < 1000) }' || problem "one of B's round trips took ${during[2]} ms while A flooded (a stall)"
  local alone_rate=0 during_rate=0
  ((alone[0] > 0)) && alone_rate=$((alone[3] / alone[0]))
  ((during[0] > 0)) && during_rate=$((during[3] / during[0]))
  row_end 2G-04 "B kept progressing while A flooded ($(sed -n 's/^hammer: done: //p' "$logs/A04.out" | head -1)): $during_rate round trips per 250 ms (alone $alone_rate), longest ${during[2]} ms, every result exact, B's canary intact"
}

row_2g05() {
  row_begin 2G-05 "completion ownership: the owner's buffer address, event and stream in the intruder's calls and kernel" || return 0
  owner_and_intruder 2G-05 foreign
  note "intruder: $(grep -c '^intruder: .*: cudaErrorInvalidValue$' "$logs/I05.out" 2>/dev/null) calls refused with" \
    "cudaErrorInvalidValue, $(grep -c '^intruder: .*: cudaErrorInvalidResourceHandle$' "$logs/I05.out" 2>/dev/null) with" \
    "cudaErrorInvalidResourceHandle; $(lines_of "$logs/I05.out" intruder 'cudaPointerGetAttributes|kernel store')"
  pair_outcome 2G-05 "the owner's buffer address is the intruder's own" '^intruder: own buffer'
  row_end 2G-05 "$(sed -n 's/^intruder: foreign: //p' "$logs/I05.out" | head -1); the owner intact $(sed -n 's/^owner: intact //p' "$logs/O05.out" | head -1)"
}

row_2g06() {
  row_begin 2G-06 "fault injection: malformed inputs, an illegal address and a trap from one tenant while B works" || return 0
  local xid_before
  xid_before="$(xid_lines)"
  tenant B06 tenant_progress 60 --measure 14
  wait_for_line "$logs/B06.out" "^progress: measuring" 30 || problem "B never started measuring"
  sleep 1
  local from to mode outcome=""
  from="$EPOCHREALTIME"
  for mode in malformed illegal trap; do
    tenant "F06_$mode" tenant_fault 30 --mode "$mode"
    wait_tenant "F06_$mode"
    note "$(lines_of "$logs/F06_$mode.out" fault "$mode: ")"
    if expect_exit "F06_$mode" 0 "the $mode tenant"; then
      outcome+="${outcome:+; }$mode: $(sed -n "s/^fault: $mode: failed closed: //p" "$logs/F06_$mode.out" | head -1)"
    fi
  done
  to="$EPOCHREALTIME"
  # No module-global stall: a new client is served at once.
  local started=$SECONDS served_in
  tenant N06 tenant_smoke 30 --seed 606
  wait_tenant N06
  served_in=$((SECONDS - started))
  expect_exit N06 0 "a new client after the faults"
  wait_tenant B06
  expect_exit B06 0 "the working tenant B"
  local -a during
  read -r -a during <<<"$(windows_between "$logs/B06.out" "$from" "$to")"
  note "B: $(line_of "$logs/B06.out" '^progress: done'); while the faults ran: ${during[0]} windows, fewest ${during[1]} round trips, longest ${during[2]} ms"
  ((during[0] >= 2)) || problem "B measured only ${during[0]} windows while the faults ran (no overlap)"
  awk -v l="${during[2]}" 'BEGIN { exit !(l < 2000) }' || problem "one of B's round trips took ${during[2]} ms while the faults ran (a stall)"
  log_since "$row_mark" "$logs/2G-06.daemon.log"
  note "the daemon: $(grep -c 'tainted: ' "$logs/2G-06.daemon.log") worker(s) marked tainted (expected 2: illegal address and trap)"
  xid_note "$xid_before"
  row_end 2G-06 "A failed closed ($outcome); B kept progressing (fewest ${during[1]} round trips in a window, longest ${during[2]} ms), every result exact; a new client was served in ${served_in} s"
}

row_2g07() {
  row_begin 2G-07 "teardown: kill -9 of one tenant mid-run while the other works" || return 0
  tenant A07 tenant_progress 40 --measure 10
  tenant V07 tenant_residue 45 --nonce 0x7007 --fraction 0.5 --wait-free 10 --hold 30
  wait_for_line "$logs/A07.out" "^progress: measuring" 30 || problem "A never started measuring"
  local victim="" killed_at client="" worker="" pid="" facts=""
  if wait_for_line "$logs/V07.out" "^residue: holding" 40; then
    sleep 1
    victim="$(kill_tenant V07 tenant_residue)" || problem "the victim's process could not be found or killed"
  else
    problem "the victim never got to hold its memory"
  fi
  killed_at="$EPOCHREALTIME"
  note "victim: $(lines_of "$logs/V07.out" residue 'total|planted'); killed (pid ${victim:-?})"
  wait_tenant V07
  [[ -z "$victim" || "$(status_of V07)" == 137 ]] || problem "the victim's sandbox exited $(status_of V07), expected 137 (SIGKILL)"
  if [[ -n "$victim" ]]; then
    # Its session, found by the pid the kernel reported for its connection (SO_PEERCRED).
    wait_for_line "$daemon_log" "pid $victim; program 'tenant_residue'" 5
    client="$(sed -n "s/.*client \([0-9][0-9]*\): hello from [^ ]* (uid [0-9]* gid [0-9]* pid $victim; .*/\1/p" "$daemon_log" | head -1)"
    if [[ -n "$client" ]]; then
      read -r worker pid <<<"$(worker_of "$daemon_log" "$client")"
      if [[ -n "$worker" ]] && wait_for_line "$daemon_log" "worker $worker (pid $pid): reaped" 20; then
        local order
        order="$(grep -nE "client $client: session over; releasing|client $client: released by worker|worker $worker \(pid $pid\): (retiring|reaped)" "$daemon_log" |
          sed -E 's/^([0-9]+):.*(session over|released by|retiring|reaped).*/\2/' | tr '\n' ',')"
        note "client $client on worker $worker (pid $pid): $order"
        [[ "$order" == "session over,released by,retiring,reaped," ]] ||
          problem "the victim's teardown ran out of order: $order"
        ! kill -0 "$pid" 2>/dev/null || problem "the victim's worker (pid $pid) is still alive"
        facts="its worker $worker released, retired and reaped in order"
      else
        problem "the victim's worker ${worker:-?} was not reaped within 20 s"
      fi
    else
      problem "no hello line in the daemon's log for the victim's pid $victim"
    fi
  fi
  # A new client is served and sees none of the victim's memory.
  tenant N07 tenant_residue 45 --nonce 0x7107 --fraction 0.6 --wait-free 15 --free
  wait_tenant N07
  note "new client: $(lines_of "$logs/N07.out" residue 'total|scanned|allocated')"
  expect_exit N07 0 "the new client (residue probe)"
  wait_tenant A07
  expect_exit A07 0 "the surviving tenant A"
  local -a after
  read -r -a after <<<"$(windows_between "$logs/A07.out" "$killed_at" 1e12)"
  note "A: $(line_of "$logs/A07.out" '^progress: done'); after the kill: ${after[0]} windows, longest ${after[2]} ms"
  ((after[0] >= 2)) || problem "A measured only ${after[0]} windows after the kill"
  awk -v l="${after[2]}" 'BEGIN { exit !(l < 2000) }' || problem "one of A's round trips took ${after[2]} ms after the kill (a stall)"
  # The seed's "rmmod after both stop; module unload clean": with both tenants gone, the daemon
  # stops on SIGTERM with status 0, its workers gone and its socket removed; a fresh daemon then
  # serves the remaining rows.
  local -a pids_before=()
  local left=0 stop_mark
  mapfile -t pids_before < <(worker_pids)
  stop_mark="$(log_lines)"
  matrix_stop_daemon
  for pid in "${pids_before[@]}"; do kill -0 "$pid" 2>/dev/null && left=$((left + 1)); done
  log_since "$stop_mark" "$logs/2G-07.stop.log"
  note "daemon stop: exit ${daemon_status:-?}$( ((daemon_forced)) && echo ', killed after 10 s'), ${#pids_before[@]} workers before, $left left; socket $([[ -e "$runtime_dir/agileosd.sock" ]] && echo left behind || echo removed)"
  if [[ "$daemon_status" != 0 ]] || ((daemon_forced || left != 0)) || [[ -e "$runtime_dir/agileosd.sock" ]] ||
    ! grep -q 'agileosd: stopped' "$logs/2G-07.stop.log"; then
    problem "the daemon did not stop cleanly (exit ${daemon_status:-?}, $left workers left)"
  fi
  matrix_daemon && { wait_idle 30 || true; }
  row_end 2G-07 "the victim killed mid-run (exit 137), ${facts:-?}; A continued (longest round trip ${after[2]} ms after the kill), every result exact; a new client was served and found no marker of the victim in $(sed -n 's/^residue: scanned \([0-9]*\) bytes.*/\1/p' "$logs/N07.out" | head -1 | awk '{ printf "%.1f", $1 / 2^30 }') GiB of fresh memory; then the daemon stopped cleanly (exit 0, ${#pids_before[@]} workers ended, socket removed)"
}

row_2g08() {
  row_begin 2G-08 "stress: 20 cycles of two tenants (every 5th with one killed -9 mid-session)" || return 0
  if ! wait_idle 30; then
    note "the daemon did not settle before the cycles ($(worker_count) workers now, prestart $PRESTART)"
  fi
  local workers_before endpoints_before fds_before cycle cycles=0 name bad=0
  workers_before="$(worker_count)"
  endpoints_before="$(endpoint_count)"
  fds_before="$(daemon_fds)"
  local mark xid_before
  mark="$(log_lines)"
  xid_before="$(xid_lines)"
  for cycle in $(seq 1 20); do
    if ((DEADLINE - SECONDS < 25)); then
      problem "stopped after $cycles cycles: the time budget ran out"
      break
    fi
    tenant "S${cycle}a" tenant_smoke 30 --seed $((cycle * 2))
    if ((cycle % 5 == 0)); then
      tenant "S${cycle}b" tenant_smoke 40 --seed $((cycle * 2 + 1)) --hold 20
      if wait_for_line "$logs/S${cycle}b.out" "^smoke: holding" 30 && kill_tenant "S${cycle}b" tenant_smoke >/dev/null; then
        wait_tenants "S${cycle}a" "S${cycle}b"
        [[ "$(status_of "S${cycle}b")" == 137 ]] || { problem "cycle $cycle: the killed tenant's sandbox exited $(status_of "S${cycle}b")"; bad=1; }
      else
        problem "cycle $cycle: the second tenant could not be killed mid-session"
        bad=1
        wait_tenants "S${cycle}a" "S${cycle}b"
      fi
    else
      tenant "S${cycle}b" tenant_smoke 30 --seed $((cycle * 2 + 1))
      wait_tenants "S${cycle}a" "S${cycle}b"
      expect_exit "S${cycle}b" 0 "cycle $cycle tenant b" || bad=1
    fi
    expect_exit "S${cycle}a" 0 "cycle $cycle tenant a" || bad=1
    cycles=$cycle
    ((bad == 0)) || break
  done
  note "$cycles cycles, $((cycles * 2)) clients ($((cycles / 5)) killed -9)"
  wait_idle 30 || true
  local workers_after endpoints_after fds_after
  workers_after="$(worker_count)"
  endpoints_after="$(endpoint_count)"
  fds_after="$(daemon_fds)"
  note "worker processes $workers_before -> $workers_after, worker endpoints $endpoints_before -> $endpoints_after, daemon descriptors $fds_before -> $fds_after"
  ((workers_after == workers_before)) || problem "worker processes $workers_before before, $workers_after after"
  ((endpoints_after == endpoints_before)) || problem "worker endpoints $endpoints_before before, $endpoints_after after"
  ((fds_after <= fds_before + 8)) || problem "the daemon's descriptors grew from $fds_before to $fds_after"
  log_since "$mark" "$logs/2G-08.daemon.log"
  local hello closed attached released reaped tainted errors
  hello="$(grep -c "program 'tenant_smoke'" "$logs/2G-08.daemon.log")"
  closed="$(grep -cE 'client [0-9]+: session closed' "$logs/2G-08.daemon.log")"
  attached="$(grep -cE 'client [0-9]+: attached to worker' "$logs/2G-08.daemon.log")"
  released="$(grep -cE 'client [0-9]+: released by worker' "$logs/2G-08.daemon.log")"
  reaped="$(grep -cE 'worker [0-9]+ \(pid [0-9]+\): reaped' "$logs/2G-08.daemon.log")"
  tainted="$(grep -c 'tainted: ' "$logs/2G-08.daemon.log")"
  errors="$(grep -cE '\[(error|critical)\]' "$logs/2G-08.daemon.log")"
  note "the daemon's log: $hello hellos, $attached attached, $released released, $closed sessions closed, $reaped workers reaped, $tainted tainted, $errors errors"
  xid_note "$xid_before"
  ((hello == cycles * 2)) || problem "$hello hellos for $((cycles * 2)) clients"
  ((attached == hello && released == attached && closed == hello)) ||
    problem "sessions leaked: $hello hellos, $attached attached, $released released, $closed closed"
  ((reaped >= attached)) || problem "only $reaped workers reaped for $attached sessions"
  ((tainted == 0)) || problem "$tainted workers tainted"
  if ((errors != 0)); then
    problem "$errors error lines in the daemon's log"
    grep -E '\[(error|critical)\]' "$logs/2G-08.daemon.log" >"$logs/2G-08.errors"
    quote_tail "$logs/2G-08.errors" 5
  fi
  row_end 2G-08 "$cycles cycles, $((cycles * 2)) clients ($((cycles / 5)) killed -9), every payload exact; every session attached, released and closed, $reaped workers reaped; worker processes ($workers_after), endpoints ($endpoints_after) and daemon descriptors ($fds_before -> $fds_after) back to baseline"
}

# GiB (one decimal) that two allocations of A and B bytes must share on a device of TOTAL bytes.
overlap() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { printf "%.1f", (a + b - t) / 1073741824 }'; }
# "SIZE TOTAL" of a residue probe (bytes allocated, device total).
probe_sizes() {
  sed -n 's/^residue: total=\([0-9]*\) free=[0-9]*, allocating \([0-9]*\) bytes.*/\2 \1/p' "$logs/$1.out" 2>/dev/null | head -1
}

row_2g09() {
  row_begin 2G-09 "sequencing: 3 sequential tenants, then 2 concurrent ones, each probing for the previous one's memory" || return 0
  local i name size total previous=0 overlaps="" extra
  for i in 1 2 3; do
    name="R09_$i"
    # The first frees its memory itself, the others leave it to the teardown.
    extra=()
    ((i == 1)) && extra=(--free)
    tenant "$name" tenant_residue 45 --nonce "0x900$i" --fraction 0.6 --wait-free 20 "${extra[@]}"
    wait_tenant "$name"
    note "$name: $(lines_of "$logs/$name.out" residue 'total|scanned|FAILED|allocated')"
    expect_exit "$name" 0 "sequential client $i"
    read -r size total <<<"$(probe_sizes "$name")"
    if [[ -n "${size:-}" ]] && ((previous > 0)); then
      overlaps+="${overlaps:+, }$(overlap "$previous" "$size" "$total")"
    fi
    previous=${size:-0}
  done
  tenant R09_4 tenant_residue 45 --nonce 0x9004 --fraction 0.42 --wait-free 20 --free
  tenant R09_5 tenant_residue 45 --nonce 0x9005 --fraction 0.42 --wait-free 20
  wait_tenants R09_4 R09_5
  local pair=0
  for name in R09_4 R09_5; do
    note "$name: $(lines_of "$logs/$name.out" residue 'total|scanned|FAILED|allocated')"
    expect_exit "$name" 0 "concurrent client ${name#R09_}"
    read -r size total <<<"$(probe_sizes "$name")"
    pair=$((pair + ${size:-0}))
  done
  [[ -n "${total:-}" ]] && overlaps+="${overlaps:+, }$(overlap "$previous" "$pair" "$total")"
  log_since "$row_mark" "$logs/2G-09.daemon.log"
  local client uid worker pid
  local -A fresh=()
  while read -r client uid; do
    read -r worker pid <<<"$(worker_of "$logs/2G-09.daemon.log" "$client")"
    [[ -n "$worker" ]] && fresh[$worker]=1
  done < <(hellos "$logs/2G-09.daemon.log" tenant_residue)
  ((${#fresh[@]} == 5)) || problem "the 5 clients ran on ${#fresh[@]} distinct workers, expected 5"
  note "GiB of each probe's memory that must have been the previous one's (clients 2, 3, and 4+5; <= 0: no overlap forced): ${overlaps:-?}"
  row_end 2G-09 "5 clients on 5 fresh workers, 3 one after the other then 2 at once: none found a marker of an earlier client (overlap with the previous one's memory forced: ${overlaps:-?} GiB)"
}

# ------------------------------------------------------------------ main

say "AgileOS two-tenant matrix (seed 002), $(date -u '+%Y-%m-%d %H:%M:%S UTC')${rows:+, rows \"$rows\"}"
missing=0
for path in "$bin_dir/agileosd" "$bin_dir/agileos-worker" "$bin_dir/agileos-sandbox" "$shim_dir/libagileos_cudart.so" \
  "$tenants_dir/tenant_memory" "$tenants_dir/tenant_smoke" "$tenants_dir/tenant_owner" "$tenants_dir/tenant_intruder" \
  "$tenants_dir/tenant_progress" "$tenants_dir/tenant_fault" "$tenants_dir/tenant_residue"; do
  [[ -e "$path" ]] || { say "missing: $path (run tests/gpu/bundle.sh first)"; missing=1; }
done
if ((missing)); then
  for row in 2G-01 2G-02 2G-03 2G-04 2G-05 2G-06 2G-07 2G-08 2G-09; do
    [[ -z "$rows" || "$row" =~ $rows ]] && fail "$row not run: the bundle is incomplete"
  done
  exit 1
fi
if matrix_daemon; then
  wait_idle 30 || note "the daemon has $(worker_count) workers 30 s after its start (prestart $PRESTART)"
  say "daemon: pid ${agileosd:-?}, prestart $PRESTART, max_workers $MAX_WORKERS, no quota of its own; $(worker_count) workers ready"
fi
row_2g01
row_2g02
row_2g03
row_2g04
row_2g05
row_2g06
row_2g07
row_2g08
row_2g09
exit 0
