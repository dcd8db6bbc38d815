#!/usr/bin/env bash
# `podman run --device agileos.io/gpu=0 IMAGE PROGRAM` runs a CUDA program through AgileOS (issue
# 18, docs/containers.md): the tree is installed into a scratch prefix, agileosd starts with
# fake-GPU workers, the installed agileosd writes the CDI spec, and a CUDA runtime program
# (e2e_client) runs in an image built here that holds only the program, the libraries it links
# (glibc, libstdc++, libgcc_s) and /bin/sh: no CUDA, no gRPC or protobuf, no /dev/nvidia*. The
# shims and everything they need come from the spec's mounts.
#
# The machine's podman is used rootful, with storage (vfs) and run state in a scratch directory,
# no network, cgroupfs with cgroups disabled for the container, and the nofile/nproc limits set to
# what podman itself may set (podman lowers its own nproc limit to 32768 and, without
# CAP_SYS_RESOURCE, crun cannot raise one). Podman 4.3 reads CDI specs only from /etc/cdi and
# /var/run/cdi, so podman runs in a private mount namespace where a scratch directory is bound
# over /run/cdi (created empty if missing: the host's specs are not touched). In that namespace
# a cgroup2 mount beside cgroup v1 controllers (a "hybrid" host, which crun refuses) is unmounted.
#
# Exit 77 (ctest: skipped) only when podman or crun is missing, the test is not root, or podman
# cannot run a trivial container here; every other failure fails.
#
# Usage: podman_cdi_test.sh BUILD_DIR FAKE_WORKER E2E_CLIENT
set -uo pipefail
build=$1 fake_worker=$2 client=$3
skip() {
  echo "SKIP: $*"
  exit 77
}
for tool in podman crun unshare; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps.sh installs podman and crun)"
done
((EUID == 0)) || skip "rootful podman needs root (the daemon's sockets are bound into the container)"

root=$(mktemp -d /tmp/agileos-cdi.XXXXXX)
chmod 755 "$root"
daemon=
cleanup() {
  [[ -n $daemon ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$root" 2>/dev/null || { chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"; }
}
trap cleanup EXIT
failures=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# --- podman, privately
cat >"$root/storage.conf" <<EOF
[storage]
driver = "vfs"
runroot = "$root/podman/run"
graphroot = "$root/podman/graph"
EOF
export CONTAINERS_STORAGE_CONF=$root/storage.conf
hard_nproc=$(ulimit -Hu)
[[ $hard_nproc == unlimited || $hard_nproc -gt 32768 ]] && hard_nproc=32768
podman_run=(podman --runtime crun --cgroup-manager cgroupfs --events-backend none --tmpdir "$root/podman/tmp"
  run --rm --network none --cgroups disabled --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)"
  --ulimit "nproc=$hard_nproc:$hard_nproc")
# Runs "$@" in a private mount namespace: the scratch CDI directory over /run/cdi, no hybrid
# cgroup2 mount.
in_namespace() {
  unshare --mount --propagation private bash -c '
    set -e
    if grep -q " /sys/fs/cgroup/unified cgroup2 " /proc/mounts && [[ -n $(cat /sys/fs/cgroup/unified/cgroup.controllers) ]]; then
      umount /sys/fs/cgroup/unified
    fi
    mkdir -p /run/cdi
    mount --bind "$0" /run/cdi
    exec "$@"' "$root/cdi" "$@"
}
mkdir -p "$root/cdi" "$root/podman/tmp"

# --- the image: the program and its own libraries but the CUDA runtime, and /bin/sh
image=$root/image
mkdir -p "$image/prog" "$image/tmp"
cp "$client" "$image/prog/e2e_client"
cp -L --parents /bin/sh "$image/"
for file in $( (ldd "$client"; ldd /bin/sh) | awk '/=>/ {print $3} /^\t\// {print $1}' | sort -u); do
  case $(basename "$file") in
  libcudart.so* | libcuda.so* | libagileos*) ;;  # what AgileOS brings, never the image
  *) cp -L --parents "$file" "$image/" ;;
  esac
done
[[ -e $image/lib64 ]] || { mkdir -p "$image/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$image/lib64/"; }
if find "$image" -name 'libcuda*' -o -name 'libcudart*' -o -name 'libgrpc*' -o -name 'libprotobuf*' | grep -q .; then
  fail "the image holds no CUDA, gRPC or protobuf library"
fi
tar -C "$image" -cf "$root/image.tar" .
podman --events-backend none --tmpdir "$root/podman/tmp" import "$root/image.tar" localhost/agileos-cdi-test:1 \
  >"$root/import.log" 2>&1 || { cat "$root/import.log"; skip "podman cannot import an image here"; }

if ! in_namespace "${podman_run[@]}" localhost/agileos-cdi-test:1 /bin/sh -c 'echo container-ok' \
  >"$root/probe.log" 2>&1 || ! grep -qx container-ok "$root/probe.log"; then
  cat "$root/probe.log"
  skip "podman cannot run a container on this machine (above: its error)"
fi
pass "podman runs a container here"

# --- the installed tree, the daemon with fake-GPU workers, the spec
prefix=$root/usr
cmake --install "$build" --prefix "$prefix" >"$root/install.log" 2>&1 || {
  cat "$root/install.log"
  echo "FAIL: cmake --install"
  exit 1
}
cp "$fake_worker" "$prefix/bin/agileos-worker-fake"
run=$root/run
cat >"$root/config.json" <<JSON
{"socket_path": "$run/agileosd.sock", "runtime_dir": "$run", "privileges": {"enabled": false},
 "guard": {"cache_dir": "$root/cache"}, "worker": {"executable": "agileos-worker-fake", "prestart": 1}}
JSON
if "$prefix/bin/agileosd" --config "$root/config.json" --cdi-spec >"$root/cdi/agileos.json"; then
  pass "agileosd --cdi-spec writes the spec"
else
  fail "agileosd --cdi-spec"
fi
"$prefix/bin/agileosd" --config "$root/config.json" >"$root/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -S $run/agileosd.sock ]] && break; sleep 0.1; done
[[ -S $run/agileosd.sock ]] || { cat "$root/daemon.log"; echo "FAIL: agileosd did not start"; exit 1; }

# --- the program in the container, through the spec
inside='
for node in /dev/nvidia*; do [ -e "$node" ] && echo "DEVICE NODE $node"; done
for lib in /lib/x86_64-linux-gnu/libcuda* /usr/lib/x86_64-linux-gnu/libcuda* /usr/local/cuda; do
  [ -e "$lib" ] && echo "CUDA FILE $lib"
done
echo "LD_PRELOAD=$LD_PRELOAD"
echo "AGILEOS_SOCKET=$AGILEOS_SOCKET"
exec /prog/e2e_client'
in_namespace "${podman_run[@]}" --device agileos.io/gpu=0 localhost/agileos-cdi-test:1 /bin/sh -c "$inside" \
  >"$root/container.log" 2>&1
status=$?
cat "$root/container.log"
if ((status == 0)); then
  pass "the CUDA program runs through AgileOS in the container (exit 0)"
else
  fail "the CUDA program in the container exited $status"
fi
grep -q '^0 failed$' "$root/container.log" && pass "every check of the program passed" || fail "the program's checks"
grep -q '^DEVICE NODE' "$root/container.log" && fail "the container has a /dev/nvidia* node" ||
  pass "no /dev/nvidia* in the container"
grep -q '^CUDA FILE' "$root/container.log" && fail "the container has a CUDA library" || pass "no CUDA library in the container"
grep -q '^LD_PRELOAD=/opt/agileos/shim/libagileos_cudart.so:' "$root/container.log" &&
  pass "the spec set LD_PRELOAD" || fail "LD_PRELOAD in the container"
grep -q "^AGILEOS_SOCKET=$run/agileosd.sock\$" "$root/container.log" && pass "the spec set AGILEOS_SOCKET" ||
  fail "AGILEOS_SOCKET in the container"
# The daemon saw the client: it assigned it a worker.
grep -qE 'assign|attached' "$root/daemon.log" && pass "the daemon served the container's client" ||
  fail "the daemon's log shows no client"
kill -0 "$daemon" 2>/dev/null || fail "agileosd died"
if ((failures)); then echo "--- daemon log"; tail -40 "$root/daemon.log"; fi
echo "$failures failed"
((failures == 0))
