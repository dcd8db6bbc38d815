#!/usr/bin/env bash
# The long run of the guard's differential fuzzer (tests/fuzz/fuzz_ptx_layout.cpp, issue 13):
# builds the `fuzz` preset's fuzz_ptx_layout and runs RUNS executions in all, split over
# JOBS parallel libFuzzer jobs seeded with the nvcc corpus, with the ptxas comparison on
# one accepted input in PTXAS_EVERY. Writes the logs, the inputs found, any crash inputs
# and summary.txt (command, revision, executions, time, coverage, verdict) to OUT.
#
#   tests/fuzz/run_long_fuzz.sh [RUNS] [JOBS]      RUNS default 10000000, JOBS default nproc
#   environment: BUILD_DIR (default build/fuzz), OUT (default BUILD_DIR/fuzz_ptx_layout_long/<UTC time>),
#                PTXAS_EVERY (default 1000; 0 disables ptxas), MAX_LEN (default 65536: the
#                largest corpus files are ~38 KB and mutations grow them), TIMEOUT_S (default 60)
#
# Exit status 0 when every job finished its executions without a crash, 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-10000000}
jobs=${2:-$(nproc)}
build=${BUILD_DIR:-$root/build/fuzz}
out=${OUT:-$build/fuzz_ptx_layout_long/$(date -u +%Y%m%dT%H%M%SZ)}
ptxas_every=${PTXAS_EVERY:-1000}
max_len=${MAX_LEN:-65536}
timeout_s=${TIMEOUT_S:-60}

cd "$root"
cmake --preset fuzz -B "$build" >/dev/null
cmake --build "$build" --target fuzz_ptx_layout -j"$jobs"

fuzzer=$build/bin/fuzz_ptx_layout
seeds=$build/tests/cpu/ptx/corpus
mkdir -p "$out/corpus" "$out/artifacts"
per_job=$(((runs + jobs - 1) / jobs))
command=("$fuzzer" -runs="$per_job" -jobs="$jobs" -workers="$jobs" -max_len="$max_len" -timeout="$timeout_s"
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$out/corpus" "$seeds")

start=$(date +%s)
(
  cd "$out"
  AGILEOS_FUZZ_PTXAS_EVERY=$ptxas_every "${command[@]}" >"$out/libfuzzer.log" 2>&1 || true
)
seconds=$(($(date +%s) - start))

# Each job logs to fuzz-<n>.log: "Done N runs in S second(s)" when it finished cleanly.
executions=0
finished=0
for log in "$out"/fuzz-*.log; do
  [ -e "$log" ] || continue
  done_line=$(grep -E '^Done [0-9]+ runs' "$log" | tail -1 || true)
  if [ -n "$done_line" ]; then
    finished=$((finished + 1))
    executions=$((executions + $(echo "$done_line" | awk '{print $2}')))
  fi
done
crashes=$(find "$out/artifacts" -type f | wc -l)
errors=$(cat "$out"/fuzz-*.log 2>/dev/null | grep -cE '==ERROR|deadly signal|fuzz_ptx_layout: ' || true)
coverage=$(cat "$out"/fuzz-*.log 2>/dev/null | grep -oE 'cov: [0-9]+ ft: [0-9]+' | sort -t' ' -k2 -n | tail -1 || true)
ptxas_problems=$(cat "$out"/fuzz-*.log 2>/dev/null | grep -c 'fuzz_ptx_layout: ptxas' || true)
# The last progress line of each job: "ptxas oracle: N comparisons, M raw texts assembled".
ptxas_compared=0
ptxas_assembled=0
for log in "$out"/fuzz-*.log; do
  [ -e "$log" ] || continue
  line=$(grep -E '^ptxas oracle: ' "$log" | tail -1 || true)
  [ -n "$line" ] || continue
  ptxas_compared=$((ptxas_compared + $(echo "$line" | awk '{print $3}')))
  ptxas_assembled=$((ptxas_assembled + $(echo "$line" | awk '{print $5}')))
done
verdict=PASS
if [ "$finished" -ne "$jobs" ] || [ "$crashes" -ne 0 ] || [ "$errors" -ne 0 ]; then verdict=FAIL; fi

{
  echo "fuzz_ptx_layout long run: $verdict"
  echo "date (UTC):     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "revision:       $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "command:        AGILEOS_FUZZ_PTXAS_EVERY=$ptxas_every ${command[*]}"
  echo "executions:     $executions of $((per_job * jobs)) requested ($finished of $jobs jobs finished)"
  echo "wall time:      ${seconds}s"
  echo "max coverage:   ${coverage:-n/a} (one job's)"
  echo "crash inputs:   $crashes (in $out/artifacts)"
  echo "ptxas oracle:   >= $ptxas_compared comparisons ($ptxas_assembled raw texts assembled), $ptxas_problems disagreements"
  echo "error reports:  $errors"
  echo "inputs found:   $(find "$out/corpus" -type f | wc -l) (in $out/corpus)"
} | tee "$out/summary.txt"

[ "$verdict" = PASS ]
