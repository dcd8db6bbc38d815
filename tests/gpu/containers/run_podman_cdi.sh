#!/usr/bin/env bash
# run_podman_cdi.sh: issue 18 on the GPU machine: `podman run --device agileos.io/gpu=0 IMAGE
# PROGRAM` runs a CUDA program through AgileOS with no device node and no CUDA library in the
# container, and prints what the same program prints natively.
#
# podman, crun and conmon come from .bundle-containers/debs (Debian's, unpacked with dpkg -x into a
# scratch directory: the GPU machine has none and reaches no registry), the daemon, worker and shims
# from .bundle-containers/prefix (a `cmake --install`), the image is built here from the program and
# the libraries it links on this machine (glibc, libstdc++, libgcc_s; not libcudart), and the CDI
# spec is what the installed agileosd writes (`agileosd --cdi-spec`). Podman runs rootful, in a
# private mount namespace where a scratch directory is bound over /run/cdi (podman 4.3 reads specs
# only from /etc/cdi and /var/run/cdi), with vfs storage, no network, cgroups disabled for the
# container (as tests/cpu/container/podman_cdi_test.sh, which runs the same on the CPU machine).
#
# Usage (repository root, after tests/gpu/containers/bundle.sh; carry [".bundle-containers"]):
#   bash tests/gpu/containers/run_podman_cdi.sh
# A dry run on a machine without a GPU: AGILEOS_CONTAINER_WORKER=<agileos-worker-fake> and
# AGILEOS_CONTAINER_PROGRAM=<a program built against the runtime shim> (no native comparison).
# Output: $OUT/containers_summary.txt (PASS/FAIL lines), $OUT/containers_logs.tar.gz.
# Exit status: 0 all passed, 1 a check failed, 77 no GPU (and no dry run asked for).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
bundle="${AGILEOS_CONTAINERS_BUNDLE:-$repo/.bundle-containers}"
out_dir="${OUT:-$repo/gpu-suite-out}"
mkdir -p "$out_dir"
summary="$out_dir/containers_summary.txt"
: >"$summary"
failures=0
say() { echo "$*" | tee -a "$summary"; }
pass() { say "PASS containers: $*"; }
fail() {
  say "FAIL containers: $*"
  failures=$((failures + 1))
}
dry_run=0
[[ -n ${AGILEOS_CONTAINER_WORKER:-} ]] && dry_run=1
if ((!dry_run)) && [[ ! -e /dev/nvidia0 ]]; then
  say "SKIPPED: no /dev/nvidia0 (set AGILEOS_CONTAINER_WORKER for a dry run with the fake GPU)"
  exit 77
fi
((EUID == 0)) || { fail "rootful podman needs root"; exit 1; }
[[ -d $bundle/debs ]] || { fail "no $bundle (run tests/gpu/containers/bundle.sh first)"; exit 1; }

root=$(mktemp -d /tmp/agileos-containers.XXXXXX)
chmod 755 "$root"
daemon=""
finish() {
  [[ -n $daemon ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  tar -C "$root" -czf "$out_dir/containers_logs.tar.gz" --exclude=podman --exclude=tools --exclude=image \
    --exclude=image.tar . 2>/dev/null
  rm -rf "$root" 2>/dev/null || { chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"; }
  say "containers: $failures failure(s)"
}
trap finish EXIT

# --- the tools, unpacked where nothing else looks
tools=$root/tools
for deb in "$bundle"/debs/*.deb; do dpkg -x "$deb" "$tools" || { fail "dpkg -x $(basename "$deb")"; exit 1; }; done
export PATH="$tools/usr/bin:$PATH"
tool_libs="$bundle/tool-libs"
mkdir -p "$root/podman/tmp" "$root/cdi" "$root/etc" "$root/wrappers"
# podman starts conmon, and conmon crun, with an environment of their own: LD_LIBRARY_PATH does
# not reach them, and the GPU machine has none of their libraries (glib, yajl, ...). Each runs
# through a wrapper that names the bundled ones. (The container's own environment is the OCI
# spec's, which the wrappers do not touch.)
for tool in conmon crun; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$tool_libs" "$tools/usr/bin/$tool" >"$root/wrappers/$tool"
  chmod 755 "$root/wrappers/$tool"
done
cat >"$root/etc/storage.conf" <<CONF
[storage]
driver = "vfs"
runroot = "$root/podman/run"
graphroot = "$root/podman/graph"
CONF
cat >"$root/etc/containers.conf" <<CONF
[engine]
conmon_path = ["$root/wrappers/conmon"]
helper_binaries_dir = ["$tools/usr/lib/podman"]
events_logger = "none"
cgroup_manager = "cgroupfs"
[engine.runtimes]
crun = ["$root/wrappers/crun"]
CONF
export CONTAINERS_STORAGE_CONF=$root/etc/storage.conf CONTAINERS_CONF=$root/etc/containers.conf
export CONTAINERS_REGISTRIES_CONF=$tools/etc/containers/registries.conf
hard_nproc=$(ulimit -Hu)
[[ $hard_nproc == unlimited || $hard_nproc -gt 32768 ]] && hard_nproc=32768
podman=(env LD_LIBRARY_PATH="$tool_libs" "$tools/usr/bin/podman" --runtime "$root/wrappers/crun"
  --tmpdir "$root/podman/tmp")
podman_run=("${podman[@]}" run --rm --network none --cgroups disabled
  --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=$hard_nproc:$hard_nproc")
# The /etc podman sees: this machine's, with the unpacked containers configuration (policy.json,
# registries.conf) in place of whatever /etc/containers holds here (the GPU machine has none). A
# copy bound over /etc inside the namespace changes nothing on the host.
etc_view=$root/etc-view
cp -a /etc "$etc_view" 2>/dev/null
rm -rf "$etc_view/containers"
cp -a "$tools/etc/containers" "$etc_view/containers"
# "$@" in a private mount namespace: that /etc, the scratch CDI directory over /run/cdi, and no
# hybrid cgroup2 mount (crun refuses one beside v1 controllers).
in_namespace() {
  unshare --mount --propagation private bash -c '
    set -e
    if grep -q " /sys/fs/cgroup/unified cgroup2 " /proc/mounts && [[ -n $(cat /sys/fs/cgroup/unified/cgroup.controllers) ]]; then
      umount /sys/fs/cgroup/unified
    fi
    mount --bind "$1" /etc
    mkdir -p /run/cdi
    mount --bind "$0" /run/cdi
    shift
    exec "$@"' "$root/cdi" "$etc_view" "$@"
}

# --- the image: the program and the libraries it links here, except the CUDA runtime, and /bin/sh
program="${AGILEOS_CONTAINER_PROGRAM:-$bundle/programs/vector_add}"
image=$root/image
mkdir -p "$image/prog" "$image/tmp"
cp "$program" "$image/prog/program"
cp -L --parents /bin/sh "$image/"
for file in $( (ldd "$program"; ldd /bin/sh) | awk '/=>/ && $3 ~ /^\// {print $3} /^\t\// {print $1}' | sort -u); do
  case $(basename "$file") in
  libcudart.so* | libcuda.so* | libagileos*) ;; # what AgileOS brings, never the image
  *) cp -L --parents "$file" "$image/" ;;
  esac
done
[[ -e $image/lib64/ld-linux-x86-64.so.2 ]] || { mkdir -p "$image/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$image/lib64/"; }
if find "$image" -name 'libcuda*' -o -name 'libcudart*' -o -name 'libnvidia*' | grep -q .; then
  fail "the image holds a CUDA library"
fi
tar -C "$image" -cf "$root/image.tar" .
if in_namespace "${podman[@]}" import "$root/image.tar" localhost/agileos-cuda:1 >"$root/import.log" 2>&1; then
  pass "podman (Debian's, unpacked) imports the image"
else
  fail "podman import"
  sed 's/^/  /' "$root/import.log" | tail -20 | tee -a "$summary"
  exit 1
fi

# --- the daemon: the installed tree, real workers (or the dry run's fake ones)
prefix=$bundle/prefix
driver_dir=""
for dir in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/local/cuda/compat; do
  [[ -e $dir/libcuda.so.1 ]] && { driver_dir=$dir; break; }
done
cudart_dir=""
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
  [[ -e $dir/libcudart.so.13 ]] && { cudart_dir=$dir; break; }
done
daemon_libs="$bundle/daemon-libs:$prefix/lib/agileos/shim/deps${driver_dir:+:$driver_dir}${cudart_dir:+:$cudart_dir}"
worker="${AGILEOS_CONTAINER_WORKER:-$prefix/bin/agileos-worker}"
run=$root/run
mkdir -p "$run"
cat >"$root/agileosd.json" <<JSON
{"socket_path": "$run/agileosd.sock", "runtime_dir": "$run", "privileges": {"enabled": false},
 "guard": {"cache_dir": ""}, "audit_log": "$root/audit.log",
 "worker": {"executable": "$worker", "prestart": 1, "max_workers": 2}}
JSON
if LD_LIBRARY_PATH="$daemon_libs" "$prefix/bin/agileosd" --config "$root/agileosd.json" --cdi-spec \
  --cdi-shim-dir "$prefix/lib/agileos/shim" >"$root/cdi/agileos.json" 2>"$root/cdi-spec.err"; then
  pass "the installed agileosd writes the CDI spec"
else
  fail "agileosd --cdi-spec"
  sed 's/^/  /' "$root/cdi-spec.err" | tee -a "$summary"
  exit 1
fi
grep -q '"deviceNodes"' "$root/cdi/agileos.json" && fail "the spec names device nodes" || pass "the spec names no device node"
LD_LIBRARY_PATH="$daemon_libs" timeout 300 "$prefix/bin/agileosd" --config "$root/agileosd.json" >"$root/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do [[ -S $run/agileosd.sock ]] && break; sleep 0.1; done
[[ -S $run/agileosd.sock ]] || { fail "agileosd did not start"; sed 's/^/  /' "$root/daemon.log" | tail -20 | tee -a "$summary"; exit 1; }
pass "agileosd serves"

# --- the program: in the container through the spec, and natively for comparison
inside='
for node in /dev/nvidia*; do [ -e "$node" ] && echo "DEVICE NODE $node"; done
for lib in /lib/x86_64-linux-gnu/libcuda* /usr/lib/x86_64-linux-gnu/libcuda* /usr/local/cuda /usr/local/nvidia; do
  [ -e "$lib" ] && echo "CUDA FILE $lib"
done
echo "LD_PRELOAD=$LD_PRELOAD"
echo "AGILEOS_SOCKET=$AGILEOS_SOCKET"
echo "--- program"
exec /prog/program'
in_namespace "${podman_run[@]}" --device agileos.io/gpu=0 localhost/agileos-cuda:1 /bin/sh -c "$inside" \
  >"$root/container.log" 2>&1
status=$?
sed 's/^/  /' "$root/container.log" | head -40 | tee -a "$summary"
((status == 0)) && pass "the CUDA program runs through AgileOS in the container (exit 0)" ||
  fail "the program in the container exited $status"
grep -q '^DEVICE NODE' "$root/container.log" && fail "the container has a /dev/nvidia* node" ||
  pass "no /dev/nvidia* in the container"
grep -q '^CUDA FILE' "$root/container.log" && fail "the container has CUDA files" || pass "no CUDA library in the container"
grep -q '^LD_PRELOAD=/opt/agileos/shim/libagileos_cudart.so' "$root/container.log" &&
  pass "the spec set LD_PRELOAD" || fail "LD_PRELOAD in the container"
grep -qE 'client [0-9]+: assigned worker' "$root/daemon.log" && pass "the daemon assigned the container's client a worker" ||
  fail "the daemon's log shows no assignment"
if ((!dry_run)) && [[ -n $cudart_dir && -n $driver_dir ]]; then
  LD_LIBRARY_PATH="$cudart_dir:$driver_dir" timeout 120 "$program" >"$root/native.log" 2>&1
  sed -n '/^--- program$/,$p' "$root/container.log" | tail -n +2 >"$root/container.program.log"
  if diff -q "$root/native.log" "$root/container.program.log" >/dev/null; then
    pass "the output in the container is the native output ($(wc -l <"$root/native.log") lines)"
  else
    fail "the output in the container differs from the native run"
    diff "$root/native.log" "$root/container.program.log" | head -20 | sed 's/^/  /' | tee -a "$summary"
  fi
fi
kill -0 "$daemon" 2>/dev/null && pass "agileosd is still running" || fail "agileosd died"
exit $((failures != 0))
