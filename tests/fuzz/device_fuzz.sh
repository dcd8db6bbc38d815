#!/usr/bin/env bash
# The guard's differential fuzzer (fuzz_ptx_layout) as one long run on another machine (the
# GPU host has the cores; it needs no GPU), in two steps:
#
#   tests/fuzz/device_fuzz.sh bundle [SEED_DIR...]     here: builds the fast fuzzer and puts it,
#       ptxas and the seeds (the nvcc corpus and each SEED_DIR's *.ptx) in build/fuzzrun,
#       an ignored folder to carry
#   tests/fuzz/device_fuzz.sh run SECONDS [JOBS]       there, from the repository root: runs
#       JOBS (default nproc) jobs for SECONDS and writes $OUT/fuzz_summary.txt (command,
#       revision, executions, ptxas comparisons, verdict) and $OUT/fuzz_logs.tgz
#
# The fast build: clang, libFuzzer without sanitizers and without `trace-cmp` (the custom
# mutator does the structure; comparison tracing halved the throughput). The ASan/UBSan
# build is the `fuzz` preset, which CI runs bounded.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$root/build/fuzzrun
mode=${1:-}

case "$mode" in
  bundle)
    shift
    build=$root/build/fuzz-lean
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DAGILEOS_BUILD_FUZZERS=ON -DAGILEOS_BUILD_GPU_TESTS=OFF \
      "-DCMAKE_CXX_FLAGS=-fno-sanitize-coverage=trace-cmp" >/dev/null
    cmake --build "$build" --target fuzz_ptx_layout ptx_corpus
    rm -rf "$bundle"
    mkdir -p "$bundle/seeds"
    cp "$build/bin/fuzz_ptx_layout" "$bundle/"
    cp "$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)" "$bundle/ptxas"
    cp "$build"/tests/cpu/ptx/corpus/*.ptx "$bundle/seeds/"
    for dir in "$@"; do cp "$dir"/*.ptx "$bundle/seeds/"; done
    git -C "$root" rev-parse --short HEAD >"$bundle/revision"
    echo "device_fuzz: $(ls "$bundle/seeds" | wc -l) seeds, $(du -sh "$bundle" | cut -f1) in $bundle"
    ;;
  run)
    seconds=${2:?seconds}
    jobs=${3:-$(nproc)}
    out=${OUT:-$bundle/out}
    mkdir -p "$out" "$bundle/corpus" "$bundle/artifacts" "$bundle/logs"
    # The fuzzer runs the ptxas it was built with (its path is compiled in): put ours there.
    compiled=$(strings "$bundle/fuzz_ptx_layout" | grep -m1 -E '/ptxas$' || true)
    if [[ -n "$compiled" && ! -x "$compiled" ]]; then
      mkdir -p "$(dirname "$compiled")"
      ln -sf "$bundle/ptxas" "$compiled"
    fi
    command=(./fuzz_ptx_layout -jobs="$jobs" -workers="$jobs" -entropic=0 -max_len=12000
      -max_total_time="$seconds" -timeout=60 -print_final_stats=1 -artifact_prefix=artifacts/ corpus seeds)
    start=$(date +%s)
    (cd "$bundle" && AGILEOS_FUZZ_PTXAS_EVERY=${PTXAS_EVERY:-2000} timeout $((seconds + 60)) \
      "${command[@]}" >logs/main.log 2>&1) || true
    mv "$bundle"/fuzz-*.log "$bundle/logs/" 2>/dev/null || true
    executions=0
    compared=0
    for log in "$bundle"/logs/fuzz-*.log; do
      [[ -e "$log" ]] || continue
      n=$({ grep -E '^stat::number_of_executed_units' "$log" || true; } | tail -1 | awk '{print $2}')
      executions=$((executions + ${n:-0}))
      c=$({ grep -E '^ptxas oracle: [0-9]+' "$log" || true; } | tail -1 | awk '{print $3}')
      compared=$((compared + ${c:-0}))
    done
    crashes=$(find "$bundle/artifacts" -type f | wc -l)
    # "ptxas oracle" progress lines come every 20 comparisons: the count is a lower bound.
    errors=$(cat "$bundle"/logs/fuzz-*.log 2>/dev/null | grep -cE '==ERROR|deadly signal|fuzz_ptx_layout: ' || true)
    verdict=pass
    ((crashes == 0 && errors == 0)) || verdict=FAIL
    {
      echo "command: AGILEOS_FUZZ_PTXAS_EVERY=${PTXAS_EVERY:-2000} ${command[*]}"
      echo "revision: $(cat "$bundle/revision" 2>/dev/null || echo unknown)"
      echo "host: $(nproc) cores; jobs $jobs; $(($(date +%s) - start)) s"
      echo "executions: $executions"
      echo "ptxas comparisons (at least): $compared"
      echo "crash inputs: $crashes; error lines: $errors"
      echo "verdict: $verdict"
    } | tee "$out/fuzz_summary.txt"
    tar czf "$out/fuzz_logs.tgz" -C "$bundle" logs artifacts
    [[ $verdict == pass ]]
    ;;
  *)
    sed -n '2,15p' "$0"
    exit 2
    ;;
esac
