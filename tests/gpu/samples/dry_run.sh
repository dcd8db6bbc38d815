#!/usr/bin/env bash
# dry_run.sh: run_samples.sh on the CPU machine, without a GPU: the real agileosd (two daemons, one
# with "require": "always"), fake-GPU workers and agileos-sandbox, but stand-in samples (shell
# scripts) whose behaviour is known, so that each of the runner's verdicts is checked:
#   good      deterministic output, a timing line, "Test passed"          -> PASS
#   varies    a line that differs from run to run (natively too)          -> PASS, 1 line not compared
#   fails     exit 1 and "Test failed" natively                           -> SKIP (fails natively)
#   waived    exit 2 natively                                             -> SKIP, "waived (exit 2)"
#   shimonly  under the shim (LD_PRELOAD has libagileos_cudart) a "not supported by AgileOS"
#             warning and exit 1                                          -> FAIL with that line
#   differs   a different result line under the shim, exit 0              -> FAIL, "stdout differs"
#   reorders  the native lines in another order under the shim            -> PASS, "another order"
#   shuffles  two lines whose order varies natively (so they are masked by position), the native
#             lines in a third order under the shim                       -> PASS, "another order"
#   repeats   one native line twice, another missing, under the shim      -> FAIL, "stdout differs"
#   writes    writes a file in its working directory and reads data/      -> PASS
#   missing   listed, not built                                           -> NOTBUILT
# and the tally line. Needs root and bubblewrap (as agileos-sandbox does).
#
# Usage: tests/gpu/samples/dry_run.sh BIN_DIR SHIM_DIR   (e.g. build/release/bin build/release/lib)
# Exit status: 0 when every verdict is as expected, 1 otherwise, 77 where the sandbox cannot run.
# shellcheck disable=SC2016  # the stand-in samples' bodies expand when they run, not here
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="$(cd "$1" && pwd)"
shim_dir="$(cd "$2" && pwd)"
if ((EUID != 0)) || ! command -v bwrap >/dev/null || [[ ! -x "$bin_dir/agileos-worker-fake" ]]; then
  echo "SKIPPED: needs root, bubblewrap and $bin_dir/agileos-worker-fake"
  exit 77
fi
scratch="$(mktemp -d /tmp/agileos-samples-dry-run.XXXXXX)"
chmod 755 "$scratch"
trap 'rm -rf -- "$scratch"' EXIT
samples="$scratch/samples"
mkdir -p "$samples"

sample() {
  local name="$1" body="$2"
  mkdir -p "$samples/$name"
  printf '#!/bin/bash\n%s\n' "$body" >"$samples/$name/$name"
  chmod 755 "$samples/$name/$name"
}
under_shim='[[ "${LD_PRELOAD:-}" == *libagileos_cudart* ]]'
sample good 'echo "GPU Device 0: fake"; echo "sum = 42"; echo "Processing time: 1.$RANDOM ms"; echo "Test passed"'
sample varies 'echo "seed $RANDOM$RANDOM"; echo "sum = 42"; echo "Test passed"'
sample fails 'echo "sum = 41"; echo "Test failed!"; exit 1'
sample waived 'echo "This sample requires two GPUs"; exit 2'
sample shimonly "if $under_shim; then echo 'agileos: cudaStreamBeginCapture is not supported by AgileOS (graphs); returning cudaErrorNotSupported' >&2; echo 'CUDA error at x.cu:10 code=801'; exit 1; fi; echo 'Test passed'"
sample differs "if $under_shim; then echo 'sum = 41'; else echo 'sum = 42'; fi; echo 'Test passed'"
sample reorders "if $under_shim; then echo 'block 1'; echo 'block 0'; else echo 'block 0'; echo 'block 1'; fi; echo 'Test passed'"
sample shuffles "if $under_shim; then printf 'head\\nA\\nC\\nB\\n'; elif [[ -e $scratch/shuffled ]]; then printf 'head\\nB\\nA\\nC\\n'; else touch $scratch/shuffled; printf 'head\\nA\\nB\\nC\\n'; fi; echo 'Test passed'"
sample repeats "if $under_shim; then echo 'block 0'; echo 'block 0'; else echo 'block 0'; echo 'block 1'; fi; echo 'Test passed'"
sample writes 'read -r line <data/input.txt && echo "$line" >output.txt && read -r back <output.txt && echo "$back" && echo "Test passed"'
mkdir -p "$samples/writes/data"
echo "input 7" >"$samples/writes/data/input.txt"
echo "0_Fake/missing some compile error: no such header" >"$samples/BUILD-FAILURES.txt"
echo "cuda-samples dry run (stand-in samples)" >"$samples/BUILD.txt"
cat >"$scratch/samples.list" <<'EOF'
0_Fake/good
0_Fake/varies --flag    # arguments are passed on
0_Fake/fails
0_Fake/waived
0_Fake/shimonly
0_Fake/differs
0_Fake/reorders
0_Fake/shuffles
0_Fake/repeats
0_Fake/writes
0_Fake/missing
EOF
chmod -R a+rX "$scratch"

out="$scratch/out"
OUT="$out" AGILEOS_SAMPLES_DRY_RUN=1 AGILEOS_SAMPLES_WORKER="$bin_dir/agileos-worker-fake" AGILEOS_BIN_DIR="$bin_dir" \
  AGILEOS_SHIM_DIR="$shim_dir" AGILEOS_DEPS_DIR="" AGILEOS_SAMPLES_DIR="$samples" AGILEOS_SAMPLES_ARCHIVE=/nonexistent \
  AGILEOS_SAMPLES_LIST="$scratch/samples.list" timeout 300 bash "$here/run_samples.sh" --jobs 3 --budget 120
status=$?

problems=0
expect() {
  local name="$1" verdict="$2" pattern="$3" line
  line="$(awk -v n="$name" '$1 == n' "$out/samples_summary.txt")"
  if [[ "$(awk '{ print $5 }' <<<"$line")" == "$verdict" ]] && grep -qE -- "$pattern" <<<"$line"; then
    echo "ok   $name: $verdict"
  else
    echo "BAD  $name: expected $verdict matching /$pattern/, got: ${line:-no line}"
    problems=$((problems + 1))
  fi
}
expect good PASS 'ok:.*ok:.*ok:'
expect varies PASS '1 line\(s\) vary natively'
expect fails SKIP 'fails natively.*Test failed'
expect waived SKIP 'waived \(exit 2\)'
expect shimonly FAIL 'both: exit 1: .*not supported by AgileOS'
expect differs FAIL "both: stdout differs: native 'sum = 42', AgileOS 'sum = 41'"
expect reorders PASS 'agileos always: the same lines in another order'
expect shuffles PASS 'the same lines in another order'
expect repeats FAIL "both: stdout differs: native 'block 1', AgileOS 'block 0'"
expect writes PASS 'ok:'
expect missing NOTBUILT 'some compile error'
if grep -q '^samples: 5 passed, 3 failed, 2 skipped (fail natively), 0 not run for time, 1 not built' "$out/samples_summary.txt"; then
  echo "ok   tally"
else
  echo "BAD  tally: $(grep '^samples:' "$out/samples_summary.txt")"
  problems=$((problems + 1))
fi
((status == 1)) || { echo "BAD  run_samples.sh exited $status, expected 1 (a sample failed)"; problems=$((problems + 1)); }
[[ -s "$out/samples_logs.tar.gz" ]] || { echo "BAD  no samples_logs.tar.gz"; problems=$((problems + 1)); }
if ((problems)); then
  echo "dry run: $problems problem(s)"
  exit 1
fi
echo "dry run: every verdict as expected"
