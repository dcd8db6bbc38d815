#!/usr/bin/env bash
# The test suite, as CI runs it: installs dependencies, then builds and tests
#   1. Release (all CPU tests; GPU tests skip with a reason when there is no GPU),
#   2. ASan + UBSan (all CPU tests),
#   3. TSan (the daemon and worker control-plane tests),
#   4. the libFuzzer targets (clang), each for a bounded number of runs.
# Stages 3 and 4 build only the targets their tests run: a second and third build of the
# whole tree for a few test programs was most of CI's 90 minutes.
# Usage: scripts/test.sh [release|asan|tsan|fuzz]...   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH

scripts/install-deps.sh

stages=("$@")
((${#stages[@]})) || stages=(release asan tsan fuzz)
jobs=$(nproc)

# [CTEST_JOBS=n] run_stage <preset> <label> [<test-name regex> [<targets...>]]
#   With targets, only those (and what they depend on) are built; every test the label
#   and regex select must be built by them (a test whose program is missing fails).
#   CTEST_JOBS runs that many tests at once (default 1: many tests time their waits).
run_stage() {
  local preset=$1 label=$2 regex=${3:-}
  local targets=("${@:4}")
  local started=$SECONDS
  echo "=== ${preset}: configure and build${targets[*]:+ (targets: ${targets[*]})}"
  cmake --preset "$preset" >/dev/null
  local build=(cmake --build --preset "$preset" -j "$jobs")
  ((${#targets[@]})) && build+=(--target "${targets[@]}")
  "${build[@]}"
  echo "=== ${preset}: built in $((SECONDS - started)) s; tests (label ${label}${regex:+, names ${regex}})"
  local args=(--test-dir "build/${preset}" -L "$label" --output-on-failure --timeout 600 -j "${CTEST_JOBS:-1}")
  [[ -n $regex ]] && args+=(-R "$regex")
  ctest "${args[@]}"
  echo "=== ${preset}: done in $((SECONDS - started)) s"
}

for stage in "${stages[@]}"; do
  case $stage in
    release) run_stage release "cpu|gpu" ;;
    asan) run_stage asan cpu ;;
    tsan) run_stage tsan cpu "^(scheduler|worker)\\." scheduler_tests worker_tests ;;
    # The fuzzers are independent CPU-bound processes, each with its own corpus directory.
    fuzz) CTEST_JOBS=$jobs run_stage fuzz fuzz "" agileos_fuzzers ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done
