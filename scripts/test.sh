#!/usr/bin/env bash
# The test suite, as CI runs it: installs dependencies, then builds and tests
#   1. Release (all CPU tests; GPU tests skip with a reason when there is no GPU),
#   2. ASan + UBSan (all CPU tests),
#   3. TSan (the daemon and worker control-plane tests),
#   4. the libFuzzer targets (clang), each for a bounded number of runs.
# Usage: scripts/test.sh [release|asan|tsan|fuzz]...   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH

scripts/install-deps.sh

stages=("$@")
((${#stages[@]})) || stages=(release asan tsan fuzz)
jobs=$(nproc)

run_stage() {
  local preset=$1 label=$2 regex=${3:-}
  echo "=== ${preset}: configure and build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  echo "=== ${preset}: tests (label ${label})"
  local args=(--test-dir "build/${preset}" -L "$label" --output-on-failure --timeout 600)
  [[ -n $regex ]] && args+=(-R "$regex")
  ctest "${args[@]}"
}

for stage in "${stages[@]}"; do
  case $stage in
    release) run_stage release "cpu|gpu" ;;
    asan) run_stage asan cpu ;;
    tsan) run_stage tsan cpu "^(scheduler|worker)\\." ;;
    fuzz) run_stage fuzz fuzz ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done
