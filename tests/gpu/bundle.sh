#!/usr/bin/env bash
# bundle.sh: builds the release preset on the CPU machine and assembles .bundle/,
# everything the GPU machine needs to run tests/gpu/run_suite.sh (it has no gRPC,
# protobuf or spdlog of its own).
#
# Usage: tests/gpu/bundle.sh [--no-build] [--no-samples]
#        tests/gpu/bundle.sh --collect-deps DEST FILE...   (only the library collection)
# AGILEOS_BUNDLE_BUILD_DIR takes the binaries from another build tree instead of
# build/release (with --no-build, e.g. to bundle a debug build). --no-samples leaves out
# .bundle-samples/ (as does AGILEOS_BUNDLE_SAMPLES=0).
#
# Layout of .bundle/ (gitignored; carried to the GPU machine):
#   bin/       agileosd, agileos-worker, agileos-nvrtc-compiler (the worker runs NVRTC in it, from
#              its own directory), agileos-sandbox, adversary_wire, sandbox_probe
#   shim/      libagileos_cudart.so, the session library both it and the driver shim load
#              (libagileos_client.so, found through their RUNPATH $ORIGIN), the driver shim
#              libagileos_cuda.so and the library shims libagileos_cufft.so and
#              libagileos_nvrtc.so, with the symlinks libcuda.so.1, libcufft.so.12 and
#              libnvrtc.so.13 to them
#              (the sandbox puts shim/ first on LD_LIBRARY_PATH, so a program that needs
#              libcufft.so.12 or libnvrtc.so.13 gets the shim)
#   deps/      every library ldd lists for bin/ and shim/, except glibc's own, libstdc++,
#              libgcc_s, and any CUDA/NVIDIA library (the worker uses the GPU machine's
#              own libcuda.so.1; the client must never see a real CUDA library)
#   programs/  the CUDA test programs and adversary_api
#   tools/     agileos_probe_export_tables, run natively (the real driver's private tables), and
#              libagileos_trace_driver_calls.so and libagileos_trace_private_tables.so
#              (client/cuda/tools/trace_*.c), for debugging
#   programs-static.tar.gz  the same programs built with the CUDA runtime linked in (nvcc's
#              default), <name>_static, stripped and packed (run_suite.sh unpacks them)
#   guard/     guard_escape (the kernel memory guard's escape suite, tests/gpu/guard/),
#              nvrtc_cubin_guard and tensor_map_premises (not in programs/: their output differs
#              between native and AgileOS runs by design)
#   bench/     agileos_bench, for tests/bench/run_bench.sh (not in programs/: run_suite.sh runs
#              every program there and compares its output, which a benchmark's timings fail);
#              agileos_cufft_bench, for tests/bench/run_cufft_bench.sh (it needs libcufft.so.12:
#              the GPU machine's natively, AgileOS's cuFFT shim in the sandbox; never bundled);
#              agileos_guard_bench and guard_kernels.ptx, for tests/bench/run_guard_bench.sh (a
#              trusted tool on the driver API: its libraries go to deps/ like bin/'s);
#              agileos_storage_bench, for tests/gpu/modules/run_module_suite.sh --bench;
#              agileos_math_bench, for tests/bench/run_math_bench.sh (where the build machine's
#              toolkit has cuBLAS and cuDNN; the libraries are the GPU machine's, never bundled)
#   modules/   the example protected modules: lib<name>.so plugins and <name>.ptx device code
#              (run_suite.sh also puts kvstore in its daemon's pool, for guard_escape's
#              trusted_body_* routes)
#   tenants/   tenant_memory and tenant_limits, for tests/gpu/tenants/run_tenant_suite.sh (quotas, the
#              driver's share, pinned host memory, the admission queue),
#              and the two-tenant matrix's programs (tenant_smoke, tenant_owner, tenant_intruder,
#              tenant_progress, tenant_fault, tenant_residue) for tests/gpu/tenants/two_tenant_matrix.sh
#   module-programs/  the protected-module test programs (tests/gpu/modules/), run by
#              tests/gpu/modules/run_module_suite.sh (their output differs from a native run)
# ELF files are stripped. Fails if the bundle exceeds 52 MiB: the working tree that travels
# is limited to 64 MiB in all, and the tracked files take about 6 MiB (stop 39: 48 MiB, the
# earlier limit, was within 0.4 MiB of the bundle).
#
# Beside it, .bundle-samples/ (gitignored; carried with .bundle/bin, .bundle/shim and .bundle/deps,
# not with the rest of .bundle, to a call of its own: the two together exceed what one call carries):
#   samples.tar.xz  NVIDIA's cuda-samples named in tests/gpu/samples/samples.list, built for sm_90
#              with -cudart shared by tests/gpu/samples/build_samples.sh (cached under
#              build/cuda-samples by the samples' commit: a rebuild with nothing changed compiles
#              nothing), for tests/gpu/samples/run_samples.sh
#   samples-static.tar.xz  those of samples-static.list built with -cudart static (nvcc's default:
#              the runtime reaches AgileOS through the driver shim alone), cached under
#              build/cuda-samples-static; run_samples.sh runs them with AGILEOS_SAMPLES_ARCHIVE,
#              AGILEOS_SAMPLES_DIR and AGILEOS_SAMPLES_LIST naming them (tests/gpu/README.md)
# Fails if .bundle/bin, shim, deps and .bundle-samples together exceed 56 MiB.
set -euo pipefail

readonly MAX_BUNDLE_BYTES=$((52 * 1024 * 1024))
readonly MAX_SAMPLES_CALL_BYTES=$((56 * 1024 * 1024))
# Libraries the target system provides itself; a copy from this machine could clash with them.
readonly SYSTEM_LIBRARY_PATTERN='^(ld-linux[^/]*|linux-vdso|linux-gate|lib(c|m|mvec|pthread|dl|rt|resolv|util|anl|nsl|BrokenLocale|thread_db|nss_[a-z]+|stdc\+\+|gcc_s))\.so'
# CUDA/NVIDIA libraries: never bundled.
readonly GPU_LIBRARY_PATTERN='^lib(cuda|nvidia|nvcuvid|nvoptix|nvrtc|nvJitLink|nvjpeg|nvblas|cufft|cublas|cudnn|curand|cusparse|cusolver|cupti|nccl)'

die() {
  echo "bundle.sh: $*" >&2
  exit 1
}

is_elf() {
  [[ "$(head -c 4 -- "$1" | od -An -c | tr -d ' ')" == '177ELF' ]]
}

# collect_deps DEST FILE...: copies into DEST every shared library the FILEs need that the
# target system does not provide, named by soname. Fails on an unresolved library that is
# not a CUDA/NVIDIA one.
collect_deps() {
  local dest="$1" file line name path listing
  shift
  mkdir -p "$dest"
  for file in "$@"; do
    is_elf "$file" || continue
    listing="$(ldd "$file" 2>&1)" || {
      [[ "$listing" == *"not a dynamic executable"* ]] && continue # static: needs nothing
      die "ldd failed on $file: $listing"
    }
    while IFS= read -r line; do
      line="${line#"${line%%[![:space:]]*}"}"  # trim leading whitespace
      name="${line%% *}"
      name="${name##*/}"
      [[ -n "$name" ]] || continue
      [[ "$name" =~ $SYSTEM_LIBRARY_PATTERN ]] && continue
      [[ "$name" =~ $GPU_LIBRARY_PATTERN ]] && continue
      [[ "$name" == libagileos_* ]] && continue  # the shims' own: bundled in shim/, beside them
      [[ "$line" == *" => "* ]] || continue
      path="${line#* => }"
      path="${path%% (*}"
      [[ "$path" != "not found" ]] || die "$(basename "$file") needs $name, which is not installed here"
      [[ -e "$dest/$name" ]] || cp -L -- "$path" "$dest/$name"
    done <<<"$listing"
  done
}

# verify_deps DEPS FILE...: with LD_LIBRARY_PATH=DEPS, every bundled dependency of each FILE must
# resolve inside DEPS (not to this machine's copy, which the GPU machine does not have).
verify_deps() {
  local deps="$1" file line name path problems=0
  shift
  for file in "$@"; do
    is_elf "$file" || continue
    while IFS= read -r line; do
      line="${line#"${line%%[![:space:]]*}"}"
      name="${line%% *}"
      [[ "$line" == *" => "* ]] || continue
      [[ "$name" =~ $SYSTEM_LIBRARY_PATTERN || "$name" =~ $GPU_LIBRARY_PATTERN ]] && continue
      path="${line#* => }"
      path="${path%% (*}"
      if [[ "$name" == libagileos_* ]]; then
        # A shim's session library: next to the shim that loads it (RUNPATH $ORIGIN).
        [[ "$path" == "$(dirname -- "$file")/$name" ]] && continue
        echo "bundle.sh: $(basename "$file"): $name resolves to $path, not next to it" >&2
        problems=1
      elif [[ "$path" != "$deps/$name" ]]; then
        echo "bundle.sh: $(basename "$file"): $name resolves to $path, not to the bundle" >&2
        problems=1
      fi
    done < <(LD_LIBRARY_PATH="$deps" ldd "$file" 2>/dev/null)
  done
  ((problems == 0)) || die "the bundle's libraries are incomplete"
}

strip_elf() {
  local file
  for file in "$@"; do
    is_elf "$file" || continue
    chmod u+w "$file"
    strip --strip-unneeded -- "$file" 2>/dev/null || strip -- "$file" || die "cannot strip $file"
  done
}

# The library shims in shim/, each reached through a symlink named after the library's soname.
readonly LIBRARY_SHIMS=(libagileos_cufft.so libagileos_nvrtc.so libagileos_cuda.so)
readonly LIBRARY_SHIM_SONAMES=(libcufft.so.12 libnvrtc.so.13 libcuda.so.1)

# link_library_shims DIR: the soname symlinks, relative so that they survive the bind mount
# (made after strip_elf, which must only see regular files).
link_library_shims() {
  local dir="$1" i
  for i in "${!LIBRARY_SHIMS[@]}"; do
    [[ -f "$dir/${LIBRARY_SHIMS[i]}" ]] || die "$dir/${LIBRARY_SHIMS[i]} is missing"
    ln -sfn -- "${LIBRARY_SHIMS[i]}" "$dir/${LIBRARY_SHIM_SONAMES[i]}"
  done
}

copy_required() {
  local dest="$1" source
  shift
  for source in "$@"; do
    [[ -e "$source" ]] || die "$source is missing: did the release build produce it?"
    cp -L -- "$source" "$dest/"
  done
}

# bundle_samples ROOT BUNDLE: .bundle-samples/, the cuda-samples' own call (tests/gpu/README.md).
bundle_samples() {
  local root="$1" bundle="$2" samples_bundle="$1/.bundle-samples" bytes
  rm -rf -- "$samples_bundle"
  mkdir -p "$samples_bundle"
  "$root/tests/gpu/samples/build_samples.sh" --out "$samples_bundle/samples.tar.xz" ||
    die "the cuda-samples did not build (bundle.sh --no-samples leaves them out)"
  AGILEOS_SAMPLES_RUNTIME=Static AGILEOS_SAMPLES_LIST="$root/tests/gpu/samples/samples-static.list" \
    "$root/tests/gpu/samples/build_samples.sh" --out "$samples_bundle/samples-static.tar.xz" ||
    die "the statically linked cuda-samples did not build (bundle.sh --no-samples leaves them out)"
  bytes="$(du -scb "$bundle/bin" "$bundle/shim" "$bundle/deps" "$samples_bundle" | tail -n 1 | cut -f1)"
  echo "samples: $(du -b "$samples_bundle/samples.tar.xz" | cut -f1) bytes in $samples_bundle/samples.tar.xz;" \
    "the samples' call carries $bytes bytes ($((bytes / 1024 / 1024)) MiB: .bundle/bin, shim, deps and .bundle-samples)"
  ((bytes <= MAX_SAMPLES_CALL_BYTES)) || die "the samples' call would carry more than 56 MiB"
}

main() {
  if [[ "${1:-}" == --collect-deps ]]; then
    shift
    (($# >= 2)) || die "usage: bundle.sh --collect-deps DEST FILE..."
    collect_deps "$@"
    return
  fi
  local root build_project=1 samples="${AGILEOS_BUNDLE_SAMPLES:-1}" argument
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  cd "$root"
  for argument in "$@"; do
    case "$argument" in
      --no-build) build_project=0 ;;
      --no-samples) samples=0 ;;
      *) die "unknown argument $argument (usage: bundle.sh [--no-build] [--no-samples])" ;;
    esac
  done
  if ((build_project)); then
    cmake --preset release -DAGILEOS_BUILD_GPU_TESTS=ON
    cmake --build --preset release -j "${AGILEOS_BUILD_JOBS:-2}"
  fi
  local build="${AGILEOS_BUNDLE_BUILD_DIR:-$root/build/release}" bundle="$root/.bundle"
  build="$(cd "$build" && pwd)" || die "no build tree at $build"
  rm -rf -- "$bundle"
  mkdir -p "$bundle"/{bin,shim,deps,programs,bench,guard,modules,module-programs,tenants,tools}
  copy_required "$bundle/bin" "$build/bin/agileosd" "$build/bin/agileos-worker" "$build/bin/agileos-nvrtc-compiler" \
    "$build/bin/agileos-sandbox" "$build/bin/agileos-sandbox-exec" \
    "$build/bin/adversary_wire" "$build/bin/sandbox_probe" "$build/bin/agileos-storage-service" "$build/bin/agileosctl"
  # bubblewrap (Debian's), which agileos-sandbox finds next to itself: the GPU machine has none.
  copy_required "$bundle/bin" "$(command -v bwrap || echo /usr/bin/bwrap)"
  # Issue 5: the example modules' artifacts, their GPU test programs and the storage benchmark.
  copy_required "$bundle/modules" "$build/modules/libkvstore.so" "$build/modules/libstorage.so" \
    "$build/modules/kvstore.ptx" "$build/modules/queue.ptx" "$build/modules/storage.ptx"
  copy_required "$bundle/module-programs" "$build/tests/gpu/modules/module_kvstore" \
    "$build/tests/gpu/modules/module_state_attack" "$build/tests/gpu/modules/module_storage"
  copy_required "$bundle/bench" "$build/tests/bench/agileos_storage_bench"
  copy_required "$bundle/shim" "$build/lib/libagileos_cudart.so" "$build/lib/libagileos_client.so"
  copy_required "$bundle/shim" "${LIBRARY_SHIMS[@]/#/$build/lib/}"
  copy_required "$bundle/bench" "$build/tests/bench/agileos_bench" "$build/tests/bench/agileos_cufft_bench" \
    "$build/tests/bench/agileos_guard_bench" "$build/tests/bench/guard_kernels.ptx"
  if [[ -x "$build/tests/bench/agileos_math_bench" ]]; then
    copy_required "$bundle/bench" "$build/tests/bench/agileos_math_bench"
  fi
  copy_required "$bundle/tools" "$build/bin/agileos_probe_export_tables" "$build/lib/libagileos_trace_driver_calls.so" \
    "$build/lib/libagileos_trace_private_tables.so"
  copy_required "$bundle/guard" "$build/tests/gpu/guard/guard_escape" "$build/tests/gpu/guard/nvrtc_cubin_guard" \
    "$build/tests/gpu/guard/tensor_map_premises"
  copy_required "$bundle/tenants" "$build/tests/gpu/tenants/tenant_memory" "$build/tests/gpu/tenants/tenant_limits" \
    "$build/tests/gpu/tenants/tenant_smoke" \
    "$build/tests/gpu/tenants/tenant_owner" "$build/tests/gpu/tenants/tenant_intruder" \
    "$build/tests/gpu/tenants/tenant_progress" "$build/tests/gpu/tenants/tenant_fault" \
    "$build/tests/gpu/tenants/tenant_residue"
  local program
  for program in "$build/tests/gpu/programs"/*; do
    [[ -x "$program" ]] && cp -L -- "$program" "$bundle/programs/"
  done
  [[ -x "$bundle/programs/adversary_api" ]] || die "no CUDA test programs in $build/tests/gpu/programs"
  [[ -x "$build/tests/gpu/programs_static/vector_add_static" ]] ||
    die "no statically linked CUDA test programs in $build/tests/gpu/programs_static"
  tar -czf "$bundle/programs-static.tar.gz" -C "$build/tests/gpu/programs_static" .

  collect_deps "$bundle/deps" "$bundle"/bin/* "$bundle"/shim/* "$bundle/bench/agileos_guard_bench" \
    "$bundle"/modules/*.so
  strip_elf "$bundle"/bin/* "$bundle"/shim/* "$bundle"/deps/* "$bundle"/programs/* "$bundle"/bench/* \
    "$bundle"/guard/* "$bundle"/tools/* "$bundle"/modules/*.so "$bundle"/module-programs/*
  link_library_shims "$bundle/shim"
  verify_deps "$bundle/deps" "$bundle"/bin/* "$bundle"/shim/* "$bundle/bench/agileos_guard_bench" \
    "$bundle"/modules/*.so

  local bytes
  bytes="$(du -sb "$bundle" | cut -f1)"
  du -sh "$bundle"/* | sed 's/^/  /'
  echo "bundle: $bytes bytes ($((bytes / 1024 / 1024)) MiB) in $bundle;" \
    "$(find "$bundle/deps" -type f | wc -l) libraries, $(find "$bundle/programs" -type f | wc -l) programs"
  ((bytes <= MAX_BUNDLE_BYTES)) || die "the bundle is larger than 52 MiB"
  if ((samples)); then bundle_samples "$root" "$bundle"; fi
}

main "$@"
