#!/usr/bin/env bash
# The main job: builds AgileOS (Release), starts agileosd, runs one CUDA program
# through it inside agileos-sandbox (no GPU device nodes, no CUDA libraries),
# and stops the daemon.
# Usage: scripts/run-program.sh [PROGRAM [ARGS...]]   (default: the vector_add test program)
# Needs root (the sandbox takes an unprivileged uid of its own for the program; bubblewrap with
# unprivileged user namespaces) and an NVIDIA GPU with its driver.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH=/usr/local/cuda/bin:$PATH

scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
build=$root/build/release

if (($# == 0)); then
  set -- "$(find "$build/tests/gpu" -maxdepth 2 -type f -name vector_add -perm -u+x | head -1)"
fi
program=$(realpath "$1")
shift

run=$(mktemp -d /tmp/agileos-run.XXXXXX)
chmod 755 "$run" # the sandbox's unprivileged uid reaches the daemon's socket through it
# The program and the shim are read inside as that uid: a checkout under a private directory
# (/root) is out of its reach, so the shim is always copied beside the socket, and the program
# when it has to be. The shim directory holds the shims and nothing else, under the names programs load: the runtime
# shim (preloaded), the session library it and the driver shim share, and the driver, cuFFT and
# NVRTC shims beside their sonames (libcuda.so.1, libcufft.so.12, libnvrtc.so.13).
reachable() { setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$1"; }
shim=$run/shim
mkdir -p "$shim"
for library in libagileos_cudart.so libagileos_client.so libagileos_cuda.so libagileos_cufft.so libagileos_nvrtc.so; do
  cp -L "$build/lib/$library" "$shim/"
done
ln -s libagileos_cuda.so "$shim/libcuda.so.1"
ln -s libagileos_cufft.so "$shim/libcufft.so.12"
ln -s libagileos_nvrtc.so "$shim/libnvrtc.so.13"
chmod -R a+rX "$shim"
if ! reachable "$program"; then
  cp "$program" "$run/$(basename "$program")" && chmod 755 "$run/$(basename "$program")"
  program=$run/$(basename "$program")
fi
cat >"$run/agileosd.json" <<JSON
{
  "socket_path": "$run/sock/agileosd.sock",
  "runtime_dir": "$run/sock",
  "log_level": "info",
  "worker": {"prestart": 1, "max_workers": 4}
}
JSON
"$build/bin/agileosd" --config "$run/agileosd.json" >"$run/agileosd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; echo "agileosd log: $run/agileosd.log"' EXIT
for _ in $(seq 300); do [[ -S $run/sock/agileosd.sock ]] && break; sleep 0.1; done
[[ -S $run/sock/agileosd.sock ]] || { tail -20 "$run/agileosd.log"; echo "agileosd did not start" >&2; exit 1; }

"$build/bin/agileos-sandbox" --socket-dir "$run/sock" --shim "$shim" -- "$program" "$@"
