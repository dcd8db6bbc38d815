#!/usr/bin/env bash
# build_probes.sh: builds the probes (tests/gpu/probes/README.md) into .bundle/programs, where
# tests/gpu/run_suite.sh finds them; run from the repository root after tests/gpu/bundle.sh.
# Not part of the bundle by default: they are exploratory, and each is about 100 KiB of the
# bundle's 52 MiB.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${1:-$root/.bundle/programs}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
mkdir -p "$out"
for source in "$here"/probe_*.cu; do
  name="$(basename "$source" .cu)"
  "$nvcc" -std=c++17 -O2 -arch=sm_90 -cudart shared -I"$root" -Xcompiler -Wall,-Wextra \
    -o "$out/$name" "$source"
  strip "$out/$name"
  echo "built $out/$name"
done
