#!/usr/bin/env bash
# What `cmake --install` puts on a host works as installed (issue 18): the layout
# (cmake/AgileosInstall.cmake), the example configuration is valid and complete, the CDI spec names
# the installed shims, the systemd unit
# verifies, the installed daemon reports readiness through sd_notify, and a CUDA program runs
# through the installed shims against the installed daemon (fake-GPU workers: the GPU worker needs
# a GPU, so the build's fake worker is copied next to the installed daemon).
#
# Usage: install_test.sh BUILD_DIR FAKE_WORKER E2E_CLIENT
set -uo pipefail
build=$1 fake_worker=$2 client=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root=$(mktemp -d /tmp/agileos-install.XXXXXX)
trap 'rm -rf "$root"' EXIT
prefix=$root/usr
failures=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
check() {
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

cmake --install "$build" --prefix "$prefix" >"$root/install.log" 2>&1 || {
  cat "$root/install.log"
  echo "FAIL: cmake --install"
  exit 1
}

echo "== layout"
for file in bin/agileosd bin/agileos-worker bin/agileos-nvrtc-compiler bin/agileos-storage-service \
  bin/agileos-sandbox bin/agileos-sandbox-exec bin/agileosctl bin/agileos-device-plugin; do
  check "$file is an executable" test -x "$prefix/$file"
done
shim=$prefix/lib/agileos/shim
for file in libagileos_cudart.so libagileos_cuda.so libagileos_cufft.so libagileos_nvrtc.so libagileos_client.so; do
  check "shim $file" test -f "$shim/$file"
done
for link in libcudart.so.13:libagileos_cudart.so libcuda.so.1:libagileos_cuda.so \
  libcufft.so.12:libagileos_cufft.so libnvrtc.so.13:libagileos_nvrtc.so; do
  check "${link%%:*} points at ${link#*:}" test "$(readlink "$shim/${link%%:*}")" = "${link#*:}"
done
check "the runtime shim finds libagileos_client.so next to itself" \
  bash -c 'ldd "$1/libagileos_cudart.so" | grep -q "libagileos_client.so => $1/libagileos_client.so"' _ "$shim"
# The driver (libcuda.so.1) comes with the NVIDIA driver, not the toolkit: absent on a CPU machine.
check "the installed worker finds the CUDA libraries it loads without LD_LIBRARY_PATH" \
  bash -c '! env -u LD_LIBRARY_PATH ldd "$1" | grep "not found" | grep -qv "^[[:space:]]*libcuda\.so\.1 "' _ \
  "$prefix/bin/agileos-worker"

echo "== the shims need nothing of the host but glibc (docs/containers.md)"
# Every NEEDED of every file in the shim directory and deps/ is glibc's or a file there; with an
# empty library search, the loader finds all of them (the RPATHs), none outside the two.
glibc_floor=2.36  # the highest GLIBC_ version anything there needs; docs/containers.md states it
glibc='^(libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64)\.so'
check "lib/agileos/shim/deps holds the closure" test -f "$shim/deps/libprotobuf.so.32" -a -f "$shim/deps/libstdc++.so.6"
needed_outside=$(for file in "$shim"/*.so "$shim"/deps/*; do
  readelf -dW "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u | grep -vE "$glibc" | while read -r name; do
  [[ -e $shim/$name || -e $shim/deps/$name ]] || echo "$name"
done)
check "every library a shim needs is glibc's or in the shim directory (outside: ${needed_outside:-none})" \
  test -z "$needed_outside"
check "the loader resolves every shim's libraries there, with no library path" \
  bash -c 'for f in "$1"/libagileos_cudart.so "$1"/libagileos_cuda.so; do
    env -u LD_LIBRARY_PATH ldd "$f" | awk "/=>/ {print \$3}" | grep -vE "/(libc|libm|libdl|libpthread|librt)\.so" |
      grep -v "^$(realpath "$1")/" | grep -q . && exit 1
  done; exit 0' _ "$shim"
floor=$(for file in "$shim"/*.so "$shim"/deps/*; do objdump -T "$file"; done | grep -oE 'GLIBC_[0-9]+\.[0-9]+' | sort -uV | tail -1)
check "the glibc floor is GLIBC_$glibc_floor (measured: $floor)" test "$floor" = "GLIBC_$glibc_floor"

echo "== the example configuration"
config=$prefix/etc/agileos/agileosd.json
check "agileosd.json is installed" test -f "$config"
for manifest in 00-namespace 10-serviceaccount 20-configmap 30-daemonset example/vectoradd-pod; do
  check "the Kubernetes manifest $manifest.yaml is installed" test -f "$prefix/share/agileos/kubernetes/$manifest.yaml"
done
check "the installed daemon accepts it" "$prefix/bin/agileosd" --config "$config" --check-config
for key in socket_path runtime_dir placement worker guard memory privileges adapters modules services; do
  check "it names $key" python3 -c 'import json, sys; sys.exit(0 if sys.argv[2] in json.load(open(sys.argv[1])) else 1)' \
    "$config" "$key"
done

echo "== the CDI spec (docs/containers.md)"
cdi=$prefix/etc/cdi/agileos.json
check "etc/cdi/agileos.json is installed" test -f "$cdi"
check "it is kind agileos.io/gpu, binds the installed shim directory and sets LD_PRELOAD, no device node" \
  python3 - "$cdi" "$(realpath "$shim")" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
shim_mount = spec["containerEdits"]["mounts"][0]
env = spec["devices"][0]["containerEdits"]["env"]
ok = (spec["kind"] == "agileos.io/gpu" and [d["name"] for d in spec["devices"]] == ["0", "all"]
      and shim_mount["hostPath"] == sys.argv[2] and shim_mount["containerPath"] == "/opt/agileos/shim"
      and "AGILEOS_SOCKET=/run/agileos/agileosd.sock" in env
      and any(e.startswith("LD_PRELOAD=/opt/agileos/shim/libagileos_cudart.so:") for e in env)
      and "deviceNodes" not in json.dumps(spec))
sys.exit(0 if ok else print(json.dumps(spec, indent=1)) or 1)
PY
check "the installed agileosd prints the same spec" \
  bash -c 'cmp -s "$1" <("$2" --cdi-spec)' _ "$cdi" "$prefix/bin/agileosd"

echo "== the systemd unit"
unit=$prefix/lib/systemd/system/agileosd.service
check "agileosd.service is installed" test -f "$unit"
check "it is Type=notify" grep -qx 'Type=notify' "$unit"
check "it keeps /run/agileos (runtime_dir) and /run/agileos-admin for the daemon" grep -qx 'RuntimeDirectory=agileos agileos-admin' "$unit"
check "ExecStart runs the installed agileosd with the installed configuration" \
  grep -qx "ExecStart=$prefix/bin/agileosd --config $config" "$unit"
if command -v systemd-analyze >/dev/null 2>&1; then
  if systemd-analyze verify "$unit" >"$root/verify.log" 2>&1; then
    pass "systemd-analyze verify"
  else
    cat "$root/verify.log"
    fail "systemd-analyze verify"
  fi
else
  echo "SKIP: systemd-analyze verify (no systemd-analyze here)"
fi

echo "== the installed daemon and shims, with fake-GPU workers"
cp "$fake_worker" "$prefix/bin/agileos-worker-fake"
run=$root/run
mkdir -p "$run"
cat >"$root/notify-config.json" <<JSON
{"socket_path": "$run/agileosd.sock", "runtime_dir": "$run", "privileges": {"enabled": false},
 "guard": {"cache_dir": "$root/cache"}, "worker": {"executable": "agileos-worker-fake", "prestart": 1}}
JSON
notify=$root/notify.sock
python3 - "$notify" >"$root/notify.out" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
try:
    while True:
        message = s.recv(4096).decode()
        print(message.replace("\n", " | "), flush=True)
        if "READY=1" in message:
            break
except socket.timeout:
    print("no READY=1 within 20 s")
PY
listener=$!
for _ in $(seq 50); do [[ -S $notify ]] && break; sleep 0.1; done
NOTIFY_SOCKET=$notify "$prefix/bin/agileosd" --config "$root/notify-config.json" >"$root/daemon.log" 2>&1 &
daemon=$!
wait "$listener"
check "agileosd tells systemd it is ready (sd_notify READY=1)" grep -q 'READY=1' "$root/notify.out"
check "only once its socket listens" test -S "$run/agileosd.sock"
check "the installed agileosctl finds it healthy over the admin socket" \
  test "$("$prefix/bin/agileosctl" --socket "$run-admin/admin.sock" health)" = SERVING
kill "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
cat "$root/notify.out"

if bash "$here/../e2e/run_e2e.sh" "$prefix/bin" "$shim" "$client" >"$root/e2e.log" 2>&1; then
  pass "a CUDA program runs through the installed shims against the installed daemon (two clients)"
else
  tail -40 "$root/e2e.log"
  fail "a CUDA program through the installed shims"
fi

echo "$failures failed"
((failures == 0))
