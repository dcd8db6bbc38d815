#!/usr/bin/env bash
# Installs the Debian packages AgileOS builds against (idempotent). The CUDA
# Toolkit 13 is expected at /usr/local/cuda (it is not a Debian package).
set -euo pipefail

packages=(
  cmake ninja-build g++ python3 pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev nlohmann-json3-dev libgtest-dev liblz4-dev libzstd-dev libssl-dev
  clang libclang-rt-14-dev util-linux libseccomp-dev strace bubblewrap libcli11-dev libsystemd-dev prometheus-cpp-dev
  podman crun  # tests/cpu/container: a CUDA program in a container through the CDI spec
  debootstrap dpkg-dev  # tests/cpu/package: dpkg-shlibdeps for the .deb, which is installed into a minimal Debian root
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: CUDA Toolkit 13 not found at /usr/local/cuda" >&2
  exit 1
fi

# The npm packages of the Kubernetes manifest check (tests/cpu/kubernetes/check_manifests.mjs):
# installed from the committed package-lock.json into tests/cpu/kubernetes/node_modules/, where the
# check finds them. Skipped when that lock file is the one last installed.
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing nodejs npm"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm
fi
k8s_check="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/cpu/kubernetes"
k8s_stamp=$k8s_check/node_modules/.agileos-installed-lock.json
if ! cmp -s "$k8s_check/package-lock.json" "$k8s_stamp"; then
  echo "install-deps: npm ci in $k8s_check"
  (cd "$k8s_check" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$k8s_check/package-lock.json" "$k8s_stamp"
fi
