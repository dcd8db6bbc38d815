#!/usr/bin/env bash
# run_samples_call.sh: the samples' device call in one command (tests/gpu/README.md), each part
# under its own limit so that a slow part never takes the others' output with it:
#   1. the driver's private tables traced natively for two samples (trace_private_tables.sh), 45 s,
#      when AGILEOS_CALL_TRACE=1 (default 0: stop 35 recorded the trace, docs/driver-private-tables.md);
#   2. a few GPU suite programs that the samples call can carry (run_suite.sh FILTER; the
#      statically linked variants need .bundle/programs-static.tar.gz, which this call leaves out),
#      AGILEOS_CALL_SUITE_FILTER (empty: skipped), AGILEOS_CALL_SUITE_LIMIT_S (150 s);
#   3. samples.list, shared runtime (run_samples.sh), budget AGILEOS_CALL_SHARED_BUDGET_S (230 s);
#   4. samples-static.list, runtime linked in, budget AGILEOS_CALL_STATIC_BUDGET_S (50 s).
# Everything goes under $OUT: trace/, suite/, the shared run's files, static/, and one log per part.
# The device machine sends back a limited number of files, so trace/, suite/ and static/ end up as
# one archive each (PART.tar.gz), with their summaries beside them (PART_summary.txt), and all of
# those and the logs in details.tar; call.txt holds the exit codes, the suite's verdicts and every
# failing sample.
# The whole takes at most about 45 + the suite limit + 260 + 80 s; run it with a 590 s call limit.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${OUT:-$PWD/samples-out}"
mkdir -p "$out"
shared_budget="${AGILEOS_CALL_SHARED_BUDGET_S:-230}"
static_budget="${AGILEOS_CALL_STATIC_BUDGET_S:-50}"
suite_filter="${AGILEOS_CALL_SUITE_FILTER-graph_conditionals|managed_variables|cuda_graphs|graph_memory_nodes|tensor_map_premises}"
suite_limit="${AGILEOS_CALL_SUITE_LIMIT_S:-150}"

if [[ "${AGILEOS_CALL_TRACE:-0}" == 1 ]]; then
  (OUT="$out/trace" timeout 45 bash "$here/trace_private_tables.sh" UnifiedMemoryStreams conjugateGradientCudaGraphs \
    >"$out/trace.log" 2>&1)
  echo "trace: exit $?" >>"$out/call.txt"
fi
if [[ -n "$suite_filter" ]]; then
  (cd "$root" && OUT="$out/suite" AGILEOS_SUITE_BUDGET_S="$((suite_limit - 20))" timeout "$suite_limit" \
    bash tests/gpu/run_suite.sh "$suite_filter" >"$out/suite.log" 2>&1)
  echo "suite: exit $?" >>"$out/call.txt"
fi
(cd "$root" && OUT="$out" timeout $((shared_budget + 30)) bash "$here/run_samples.sh" --jobs 10 --budget "$shared_budget" \
  >"$out/shared_run.log" 2>&1)
echo "shared samples: exit $?" >>"$out/call.txt"
(cd "$root" && AGILEOS_SAMPLES_ARCHIVE="$root/.bundle-samples/samples-static.tar.xz" \
  AGILEOS_SAMPLES_DIR="$root/.bundle-samples/samples-static" AGILEOS_SAMPLES_LIST="$here/samples-static.list" \
  OUT="$out/static" timeout $((static_budget + 30)) bash "$here/run_samples.sh" --jobs 9 --budget "$static_budget" \
  >"$out/static_run.log" 2>&1)
echo "static samples: exit $?" >>"$out/call.txt"
{
  tail -n 2 "$out/samples_summary.txt" "$out/static/samples_summary.txt" 2>/dev/null
  # The suite's verdicts and the samples' failures, so that call.txt alone says what went wrong.
  [[ -f "$out/suite/summary.txt" ]] && grep -E '^(PASS|FAIL|SKIP|[0-9]+ passed)' "$out/suite/summary.txt"
  grep -h -E ' FAIL ' "$out/samples_summary.txt" "$out/static/samples_summary.txt" 2>/dev/null
} >>"$out/call.txt"
for part in trace suite static; do
  [[ -d "$out/$part" ]] || continue
  for summary in summary.txt samples_summary.txt; do
    [[ -f "$out/$part/$summary" ]] && cp -f -- "$out/$part/$summary" "$out/${part}_summary.txt"
  done
  tar czf "$out/$part.tar.gz" -C "$out" "$part" && rm -rf -- "${out:?}/$part"
done
# The device returns about eight files: everything but call.txt and the shared run's summary
# leaves in one archive.
(cd "$out" && find . -maxdepth 1 -type f ! -name call.txt ! -name samples_summary.txt ! -name details.tar \
  -printf '%P\n' | tar cf details.tar -T - --remove-files)
cat "$out/call.txt"
