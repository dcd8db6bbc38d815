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
