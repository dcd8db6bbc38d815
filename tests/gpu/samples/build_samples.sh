#!/usr/bin/env bash
# build_samples.sh: builds the NVIDIA cuda-samples named in samples.list on the CPU machine, for
# sm_90 with the shared CUDA runtime (the program loads libcudart.so.13, which agileos-sandbox
# replaces with AgileOS's shim), and packs them for the GPU machine, which has no samples and no
# network.
#
# Usage: tests/gpu/samples/build_samples.sh [--src DIR] [--out FILE] [--jobs N] [--force]
#   --src DIR    a work tree of NVIDIA/cuda-samples (default: a checkout of $AGILEOS_CUDA_SAMPLES_REF
#                from the mirror $AGILEOS_CUDA_SAMPLES_MIRROR, made under the cache directory)
#   --out FILE   where the archive goes (default: $cache/samples.tar.xz)
#   --jobs N     parallel compile jobs (default: $AGILEOS_BUILD_JOBS or 2)
#   --force      rebuild even if the cache says the archive is current
# Environment:
#   AGILEOS_CUDA_SAMPLES_MIRROR  a git repository of NVIDIA/cuda-samples
#                                (/work/.mirror/NVIDIA+cuda-samples/repo)
#   AGILEOS_CUDA_SAMPLES_REF     the tag or commit built (v13.0: the samples for CUDA 13.0)
#   AGILEOS_SAMPLES_CACHE        the cache directory (build/cuda-samples; build/cuda-samples-static
#                                for the static runtime)
#   AGILEOS_SAMPLES_LIST         the samples built (samples.list)
#   AGILEOS_SAMPLES_RUNTIME      Shared (the default) or Static: how the programs link the CUDA
#                                runtime. Static is nvcc's own default, and such a program's runtime
#                                reaches AgileOS through the driver shim alone (libcuda.so.1), so
#                                samples-static.list is built that way too (bundle.sh).
#
# The build uses the samples' own CMakeLists.txt, each sample added to one generated project
# over a staging copy of the samples named in samples.list (and Common/, cmake/), with two changes:
# every `set(CMAKE_CUDA_ARCHITECTURES ...)` becomes `90` (the samples set nine architectures and
# ignore -DCMAKE_CUDA_ARCHITECTURES) and CMAKE_CUDA_RUNTIME_LIBRARY is $AGILEOS_SAMPLES_RUNTIME. The
# programs' RUNPATH also names /usr/local/cuda/lib64 and the toolkit's targets/x86_64-linux/lib, where
# the GPU machine's toolkit keeps cuBLAS and the other libraries the library samples link (this
# machine's CMake names only /usr/local/cuda/lib, its own layout).
# Each sample is its own target built with -k, so one that fails to build is recorded and the
# others go on.
#
# The archive (xz -9e: the GPU machine has xz but no zstd; 8% smaller than zstd -19 here) holds
# samples/NAME/NAME (stripped), the files the sample reads at run time (those its CMake copies
# beside the binary: data files, NVRTC kernels and headers, the fatbins and PTX of the driver-API
# samples), samples/BUILD.txt (the samples' commit, the toolkit, what failed to build) and
# samples/BUILD-FAILURES.txt (CATEGORY/NAME and the first error line).
# The cache is keyed by the samples' commit, the list, the runtime, this script and the toolkit's version:
# when nothing changed the archive is reused and nothing is compiled.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$script_dir/../../.." && pwd)"
list="${AGILEOS_SAMPLES_LIST:-$script_dir/samples.list}"
runtime="${AGILEOS_SAMPLES_RUNTIME:-Shared}"
mirror="${AGILEOS_CUDA_SAMPLES_MIRROR:-/work/.mirror/NVIDIA+cuda-samples/repo}"
ref="${AGILEOS_CUDA_SAMPLES_REF:-v13.0}"
case "$runtime" in
  Shared) cache="${AGILEOS_SAMPLES_CACHE:-$root/build/cuda-samples}" ;;
  Static) cache="${AGILEOS_SAMPLES_CACHE:-$root/build/cuda-samples-static}" ;;
  *) echo "build_samples.sh: AGILEOS_SAMPLES_RUNTIME is Shared or Static, not $runtime" >&2; exit 1 ;;
esac
src=""
out=""
jobs="${AGILEOS_BUILD_JOBS:-2}"
force=0

die() {
  echo "build_samples.sh: $*" >&2
  exit 1
}

while (($#)); do
  case "$1" in
    --src) src="$2"; shift ;;
    --out) out="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --force) force=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done

command -v nvcc >/dev/null || die "nvcc is not on PATH (export PATH=/usr/local/cuda/bin:\$PATH)"
command -v xz >/dev/null || die "xz is not installed"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
out="${out:-$cache/samples.tar.xz}"

# The samples' source: a given work tree, or a checkout of the ref from the mirror.
if [[ -z "$src" ]]; then
  src="$cache/src"
  [[ -d "$mirror" ]] || die "no cuda-samples: give --src DIR, or a mirror at $mirror (AGILEOS_CUDA_SAMPLES_MIRROR)"
  if [[ ! -d "$src/.git" ]]; then
    git clone -q --no-checkout "$mirror" "$src"
  fi
  # The mirror may lack a few large blobs (documentation, a few data files): checkout reports
  # them and leaves them out; the samples that need them are skipped in skipped.list.
  git -C "$src" -c advice.detachedHead=false checkout -q -f "$ref" 2>"$cache/checkout.log" ||
    grep -q 'unable to read sha1 file' "$cache/checkout.log" || die "git checkout $ref failed: $(head -3 "$cache/checkout.log")"
fi
src="$(cd "$src" && pwd)"
[[ -d "$src/Samples" && -d "$src/Common" ]] || die "$src is not a cuda-samples tree (no Samples/, Common/)"
commit="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"

# The listed samples: "CATEGORY/NAME [ARGS...]" lines; comments and blank lines ignored.
mapfile -t samples < <(sed -e 's/#.*//' "$list" | awk 'NF { print $1 }')
((${#samples[@]})) || die "no samples in $list"
for sample in "${samples[@]}"; do
  [[ -f "$src/Samples/$sample/CMakeLists.txt" ]] || die "$sample (samples.list) is not in $src/Samples"
done

toolkit="$(nvcc --version | tail -n 1)"
key="$(
  {
    echo "$commit"
    echo "$toolkit"
    echo "$runtime"
    sed -e 's/#.*//' "$list" | awk 'NF { print $1 }'
    cat "$0"
  } | sha256sum | cut -c1-16
)"
if ((!force)) && [[ -f "$cache/archive.key" && -f "$cache/samples.tar.xz" && "$(cat "$cache/archive.key")" == "$key" ]]; then
  [[ "$out" == "$cache/samples.tar.xz" ]] || cp -- "$cache/samples.tar.xz" "$out"
  echo "build_samples.sh: cached (samples $commit, key $key): $out ($(du -h "$out" | cut -f1))"
  exit 0
fi

# Staging: Common/, cmake/ and each listed sample, its CMakeLists.txt made to build sm_90 only.
staging="$cache/staging"
rm -rf -- "$staging"
mkdir -p "$staging/Samples"
# cp -a keeps the sources' times, so that a rebuild in the same build tree compiles only what changed.
cp -a -- "$src/Common" "$staging/"
[[ -d "$src/cmake" ]] && cp -a -- "$src/cmake" "$staging/"
{
  echo 'cmake_minimum_required(VERSION 3.20)'
  echo 'project(agileos_cuda_samples LANGUAGES C CXX CUDA)'
  echo 'find_package(CUDAToolkit REQUIRED)'
  echo 'set(CMAKE_POSITION_INDEPENDENT_CODE ON)'
  echo 'set(CMAKE_CXX_STANDARD 17)'
  echo 'set(CMAKE_CUDA_STANDARD 17)'
  # shellcheck disable=SC2016  # CMake's variable, for CMake to expand
  echo 'set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -Wno-deprecated-gpu-targets -lineinfo --extended-lambda")'
} >"$staging/CMakeLists.txt"
for sample in "${samples[@]}"; do
  mkdir -p "$staging/Samples/$(dirname "$sample")"
  cp -a -- "$src/Samples/$sample" "$staging/Samples/$sample"
  sed -i -E 's/^([[:space:]]*set\(CMAKE_CUDA_ARCHITECTURES)[[:space:]][^)]*\)/\1 90)/' \
    "$staging/Samples/$sample/CMakeLists.txt"
  echo "add_subdirectory(Samples/$sample)" >>"$staging/CMakeLists.txt"
done

build="$cache/build"
# One build tree, reused while the samples' commit is the same (make then compiles only what changed).
if [[ "$(cat "$build/.samples-commit" 2>/dev/null)" != "$commit" ]]; then
  rm -rf -- "$build"
  mkdir -p "$build"
  echo "$commit" >"$build/.samples-commit"
fi
log="$cache/build.log"
echo "build_samples.sh: configuring ${#samples[@]} samples ($commit) in $build"
cmake -S "$staging" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_CUDA_RUNTIME_LIBRARY="$runtime" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
  -DCMAKE_BUILD_RPATH="/usr/local/cuda/lib64;/usr/local/cuda/targets/x86_64-linux/lib" >"$cache/configure.log" 2>&1 ||
  die "cmake configure failed: $(grep -m3 -i 'error' "$cache/configure.log")"
echo "build_samples.sh: building with $jobs jobs (log: $log)"
cmake --build "$build" -j "$jobs" -- -k >"$log" 2>&1 || true

# Collect: samples/NAME/NAME and its run-time files.
pack="$cache/pack"
rm -rf -- "$pack"
mkdir -p "$pack/samples"
failures="$pack/samples/BUILD-FAILURES.txt"
: >"$failures"
built=0
for sample in "${samples[@]}"; do
  name="$(basename "$sample")"
  binary="$(find "$build/Samples/$sample" -maxdepth 2 -type f -name "$name" -perm -u+x | head -n 1)"
  if [[ -z "$binary" ]]; then
    reason="$(grep -m1 -E "(error|Error)[ :].*|undefined reference" <(grep -F -A3 -e "Samples/$sample/" "$log") |
      cut -c1-200)"
    echo "$sample ${reason:-no binary (see build.log)}" >>"$failures"
    continue
  fi
  dest="$pack/samples/$name"
  mkdir -p "$dest"
  cp -- "$binary" "$dest/$name"
  strip --strip-unneeded -- "$dest/$name"
  # Its run-time files: what the sample's own CMake copies beside the binary (data files, NVRTC
  # kernels and the headers they include, the fatbins and PTX of the driver-API samples), less the
  # outputs dct8x8 writes (its CMake copies stale ones from the source tree); a sample whose CMake
  # copies nothing gets its source's data/ directory and .mtx/.dat files, if any.
  mapfile -t extras < <(find "$build/Samples/$sample" -mindepth 1 -maxdepth 1 ! -name CMakeFiles ! -name Makefile \
    ! -name cmake_install.cmake ! -name "$name" ! -name '*_gold[0-9]*.bmp' ! -name '*_cuda*.bmp')
  if ((${#extras[@]})); then
    cp -a -- "${extras[@]}" "$dest/"
  else
    sample_src="$src/Samples/$sample"
    [[ -d "$sample_src/data" ]] && cp -r -- "$sample_src/data" "$dest/data"
    find "$sample_src" -maxdepth 1 -type f \( -name '*.mtx' -o -name '*.dat' \) -exec cp -- {} "$dest/" \;
  fi
  built=$((built + 1))
done
{
  echo "cuda-samples $commit ($ref), built $(date -u '+%Y-%m-%d %H:%M UTC') for sm_90 with -cudart ${runtime,,}"
  echo "toolkit: $toolkit"
  echo "built: $built of ${#samples[@]}"
  echo "failed to build: $(wc -l <"$failures")"
  sed 's/^/  /' "$failures"
} >"$pack/samples/BUILD.txt"
tar -C "$pack" -cf - samples | xz -9e -T"$jobs" >"$out.tmp"
mv -f -- "$out.tmp" "$out"
if [[ "$out" != "$cache/samples.tar.xz" ]]; then cp -- "$out" "$cache/samples.tar.xz"; fi
echo "$key" >"$cache/archive.key"
cat "$pack/samples/BUILD.txt"
echo "build_samples.sh: $out: $(du -b "$out" | cut -f1) bytes ($(du -sh "$pack/samples" | cut -f1) unpacked)"
