#!/usr/bin/env bash
# bundle.sh: what tests/gpu/containers/run_podman_cdi.sh needs on the GPU machine, which has no
# podman and reaches no package registry (../shared/notes/MACHINES.md), in .bundle-containers/:
#   debs/         Debian's podman, crun, conmon and the containers configuration packages, as
#                 downloaded here (apt-get download); run_podman_cdi.sh unpacks them (dpkg -x) into
#                 a directory of its own, never over /
#   tool-libs/    the libraries those binaries link that are not glibc's
#   prefix/       `cmake --install` of this build: agileosd, the worker, agileosctl and the shims
#                 with their library closure (lib/agileos/shim/deps), exactly what a package installs
#   daemon-libs/  what the installed daemon and worker link beyond the shims' closure and glibc
#   programs/     vector_add (CUDA runtime linked dynamically), the program the image runs
# It is carried on its own (carry [".bundle-containers"]), not with the suite's .bundle: together
# they exceed what one device call carries.
# Usage: tests/gpu/containers/bundle.sh   (after a release build with AGILEOS_BUILD_GPU_TESTS=ON)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
build="${AGILEOS_BUNDLE_BUILD_DIR:-$root/build/release}"
out="$root/.bundle-containers"
readonly PACKAGES=(podman crun conmon golang-github-containers-common golang-github-containers-image)

rm -rf -- "$out"
mkdir -p "$out"/{debs,tool-libs,daemon-libs,programs}
(cd "$out/debs" && apt-get download "${PACKAGES[@]}" >/dev/null 2>&1) ||
  { echo "bundle.sh: apt-get download ${PACKAGES[*]} failed" >&2; exit 1; }

# The tools' libraries, from this machine's installed podman (scripts/install-deps.sh installs it).
tools=()
for tool in /usr/bin/podman /usr/bin/crun /usr/bin/conmon; do
  [[ -x $tool ]] || { echo "bundle.sh: $tool is not installed here" >&2; exit 1; }
  tools+=("$tool")
done
bash "$root/tests/gpu/bundle.sh" --collect-deps "$out/tool-libs" "${tools[@]}"

cmake --install "$build" --prefix "$out/prefix" >/dev/null
rm -rf -- "$out/prefix/include" "$out/prefix/lib/cmake" "$out/prefix/share"
# Only the daemon, the worker and agileosctl run there (the carry is close to its limit).
find "$out/prefix/bin" -type f ! -name agileosd ! -name agileos-worker ! -name agileosctl -delete
# The daemon's and worker's libraries that the shims' closure does not already hold.
bash "$root/tests/gpu/bundle.sh" --collect-deps "$out/daemon-libs" "$out/prefix/bin/agileosd" \
  "$out/prefix/bin/agileos-worker" "$out/prefix/bin/agileosctl"
for lib in "$out"/daemon-libs/*; do
  [[ -e "$out/prefix/lib/agileos/shim/deps/$(basename "$lib")" ]] && rm -f -- "$lib"
done
cp -L -- "$build/tests/gpu/programs/vector_add" "$out/programs/"
for file in "$out"/prefix/bin/* "$out"/daemon-libs/* "$out"/tool-libs/* "$out"/programs/*; do
  [[ -f $file && ! -L $file ]] && strip --strip-unneeded -- "$file" 2>/dev/null || true
done
du -sh "$out"/* | sed 's/^/  /'
echo "containers bundle: $(du -sb "$out" | cut -f1) bytes in $out"
