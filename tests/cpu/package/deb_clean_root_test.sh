#!/usr/bin/env bash
# The Debian package in a clean Debian 12 root (issue 18, docs/packaging.md): cpack builds the .deb
# from the build tree, debootstrap makes a minimal root (--variant=minbase, cached under the build
# directory), apt installs the .deb there and resolves its Depends from Debian, and then, inside
# the root (chroot):
#   - dpkg's view: the package's files, its conffiles, the unit, nothing started by postinst;
#   - every ELF file of the package finds every library it needs but the CUDA ones (the Depends
#     are complete);
#   - agileosd runs with the command line of the installed unit's ExecStart, in the directories
#     the unit's RuntimeDirectory= and CacheDirectory= make, with NOTIFY_SOCKET as Type=notify
#     gives it, and the installed configuration edited only to name the fake-GPU worker: it
#     reports READY=1, agileosctl finds it SERVING and lists its clients, a CUDA program runs
#     through the installed shims as an unprivileged uid, and SIGTERM stops it with status 0;
#   - apt-get remove leaves the conffiles and nothing else; purge leaves nothing of the package
#     (its conffiles, the compiled-module cache, the link `systemctl enable` makes).
# The test never installs anything on the machine itself.
#
# What is copied into the root besides the package, and why (the package must not contain them):
#   - agileos-worker-fake, the worker on a fake GPU backend (tests only): the packaged worker needs
#     a GPU and the NVIDIA driver. It links only Debian libraries that the package's Depends bring
#     (checked below), so nothing else is copied for it: no CUDA library is needed in the root.
#   - e2e_client, a CUDA runtime program (linked against libcudart.so.13, which the preloaded
#     runtime shim provides by its soname): the program a user would run.
#
# The minimal root is cached in BUILD_DIR/deb-clean-root/minbase-<key>, the key being a hash of its
# recipe (make_minimal_root below, the suite and the mirror), so a change to the recipe makes a new
# one; the .debs apt downloads for the Depends are kept in BUILD_DIR/deb-clean-root/apt-archives.
# Each run copies the cached root to a scratch root, so the cache stays clean. The test runs in a
# private mount namespace: its mounts (/proc, a minimal /dev, /run) go when it ends, however it
# ends, and the scratch root is removed only when nothing is mounted in it.
#
# Exit 77 (ctest: skipped) only when the test is not root (chroot, mounts, apt), or when there is
# no cached root and debootstrap is missing or cannot reach the mirror (no network), or when the
# Depends are not cached and the mirror cannot be reached. Every other failure fails.
#
# Usage: deb_clean_root_test.sh BUILD_DIR FAKE_WORKER E2E_CLIENT
#   AGILEOS_DEBIAN_MIRROR overrides the mirror (default http://deb.debian.org/debian).
set -euo pipefail
build=$(realpath "$1") fake_worker=$2 client=$3
suite=bookworm
mirror=${AGILEOS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
skip() {
  echo "SKIP: $*"
  exit 77
}
((EUID == 0)) || skip "needs root (chroot, mounts, apt and dpkg in the root)"
for tool in unshare chroot cpack flock python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed"; exit 1; }
done

# A private mount namespace for everything below (see above).
if [[ -z ${AGILEOS_DEB_TEST_NAMESPACE:-} ]]; then
  export AGILEOS_DEB_TEST_NAMESPACE=1
  exec unshare --mount --propagation private "$0" "$@"
fi

started=$SECONDS
phase() { echo "== $* (at $((SECONDS - started)) s)"; }
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

cache=$build/deb-clean-root
mkdir -p "$cache/apt-archives/partial"
work=$(mktemp -d "$cache/run.XXXXXX")
chmod 755 "$work"
root=$work/root
daemon='' listener=''
# The processes whose root is the scratch root: only this test starts any there.
processes_in_root() {
  local proc
  for proc in /proc/[0-9]*; do
    [[ $(readlink "$proc/root" 2>/dev/null) == "$root" ]] && echo "${proc#/proc/}"
  done
  return 0
}
cleanup() {
  set +e
  [[ -n $listener ]] && kill "$listener" 2>/dev/null
  [[ -n $daemon ]] && kill -KILL "$daemon" 2>/dev/null
  local pid
  for pid in $(processes_in_root); do kill -KILL "$pid" 2>/dev/null; done
  sleep 0.2
  # Innermost mounts first.
  local mount
  for mount in $(awk -v r="$root" '$5 == r || index($5, r "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount "$mount" 2>/dev/null || umount -l "$mount"
  done
  if awk -v r="$root" '$5 == r || index($5, r "/") == 1 {found = 1} END {exit !found}' /proc/self/mountinfo; then
    echo "cleanup: something is still mounted in $root; not removing $work"
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

# --- the package
phase "cpack -G DEB"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  echo "FAIL: cpack -G DEB"
  exit 1
}
debs=("$work"/pkg/agileos_*.deb)
[[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || { ls -l "$work/pkg"; echo "FAIL: cpack made no single agileos_*.deb"; exit 1; }
deb=${debs[0]}
echo "$(basename "$deb"): $(stat -c %s "$deb") bytes"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends

# --- the minimal root, cached by its recipe
make_minimal_root() {
  debootstrap --variant=minbase "$suite" "$1" "$mirror"
  # The .debs debootstrap kept: not needed by the copies, which would only take longer to copy.
  chroot "$1" apt-get clean
}
key=$( (declare -f make_minimal_root; echo "$suite $mirror") | sha256sum | cut -c1-16)
minbase=$cache/minbase-$key
mirror_host=$(sed -E 's|^[a-z]+://([^/:]+).*|\1|' <<<"$mirror")
mirror_port=$(sed -nE 's|^[a-z]+://[^/:]+:([0-9]+).*|\1|p' <<<"$mirror")
[[ -n $mirror_port ]] || { [[ $mirror == https:* ]] && mirror_port=443 || mirror_port=80; }
mirror_reachable() { timeout 15 bash -c "exec 3<>/dev/tcp/$mirror_host/$mirror_port" 2>/dev/null; }
exec 9>"$cache/lock"
flock -w 900 9
if [[ ! -f $minbase/complete ]]; then
  phase "debootstrap --variant=minbase $suite (no cached root for key $key)"
  command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/install-deps.sh installs it) and no root is cached"
  rm -rf --one-file-system "$cache"/building.*
  building=$(mktemp -d "$cache/building.XXXXXX")
  if ! make_minimal_root "$building/root" >"$work/debootstrap.log" 2>&1; then
    rm -rf --one-file-system "$building"
    mirror_reachable || skip "no network: $mirror cannot be reached to make the minimal root, and none is cached"
    tail -30 "$work/debootstrap.log"
    echo "FAIL: debootstrap"
    exit 1
  fi
  touch "$building/complete"
  # Roots of other recipes are stale: a root is kept only for the recipe that made it.
  rm -rf --one-file-system "$cache"/minbase-*
  mv "$building" "$minbase"
else
  phase "the cached minimal root $minbase"
fi
flock -u 9

# --- the scratch root
phase "copy the minimal root"
cp -a --reflink=auto "$minbase/root" "$root"
chmod 755 "$root"
# The host's resolver, for apt (a cached root's may be stale).
[[ -e /etc/resolv.conf ]] && cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
# A minimal /dev: the host's null, zero, full, random, urandom and tty nodes, a private /dev/shm.
mount -t tmpfs -o mode=755,nosuid dev "$root/dev"
for node in null zero full random urandom tty; do
  [[ -e /dev/$node ]] || continue
  touch "$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/shm" "$root/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
for fd in 0:stdin 1:stdout 2:stderr; do ln -s "/proc/self/fd/${fd%%:*}" "$root/dev/${fd#*:}"; done
# /run is a tmpfs, as on a booted system (the unit's RuntimeDirectory= lives there).
mount -t tmpfs -o mode=755,nosuid,nodev run "$root/run"
# apt's downloads of the Depends, kept between runs.
mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }

# The maintainer scripts call systemctl only where systemd runs (/run/systemd/system). The root has
# no systemd: it gets that directory and, where systemd puts it, a systemctl that records its
# arguments and the maintainer script that called it, one call a line, so that what agileos's
# scripts would ask of systemd is checked (never start, never enable). Other packages' scripts
# call it too (the Depends' own, on install), which the check leaves out.
mkdir -p "$root/run/systemd/system"
cat >"$root/usr/bin/systemctl" <<'SH'
#!/bin/sh
echo "$(tr '\000' ' ' </proc/$PPID/cmdline)| $*" >>/run/systemctl.calls
SH
chmod 755 "$root/usr/bin/systemctl"
# agileos's scripts' calls since the last look, joined by "; ".
systemctl_calls() {
  [[ -f $root/run/systemctl.calls ]] || return 0
  sed -n 's|^.*/var/lib/dpkg/info/agileos\.[a-z]* .*[|] ||p' "$root/run/systemctl.calls" | paste -sd';' | sed 's/;/; /g'
  sed -n '/\/var\/lib\/dpkg\/info\/agileos\./!s/^/  systemctl called by another script: /p' "$root/run/systemctl.calls" >&2
  rm -f "$root/run/systemctl.calls"
}

# --- apt installs the package and its Depends
phase "apt-get install ./$(basename "$deb")"
mkdir -p "$root/tmp/pkg"
cp "$deb" "$root/tmp/pkg/"
chmod -R a+rX "$root/tmp/pkg"
apt_install() {
  in_root DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Use-Pty=0 "/tmp/pkg/$(basename "$deb")"
}
# Which of the package's paths the root has before it is installed: after purge, exactly these
# are to be there (a directory such as /usr/include, which base-files owns, stays; /etc/cdi, which
# only this package brings, goes).
dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -E 's|^\./?|/|; s|/$||' | grep -v '^/$' >"$work/package-paths"
while read -r path; do
  [[ -e $root$path || -L $root$path ]] && echo "$path"
done <"$work/package-paths" >"$work/before"
installed_at=$SECONDS
flock -w 900 9
if ! apt_install >"$work/apt.log" 2>&1; then
  # The cached root's package lists may name versions the mirror no longer has: update, retry.
  if ! { in_root apt-get update -q && apt_install; } >>"$work/apt.log" 2>&1; then
    mirror_reachable || skip "no network: $mirror cannot be reached for the package's Depends, and they are not cached"
    tail -40 "$work/apt.log"
    echo "FAIL: apt-get install"
    exit 1
  fi
fi
flock -u 9
exec 9>&-
echo "apt-get install took $((SECONDS - installed_at)) s"
grep -E '^(Setting up|Unpacking) agileos|newly installed' "$work/apt.log" || true

# --- dpkg's view
phase "dpkg's view of the package"
check "dpkg: agileos $(dpkg-deb -f "$deb" Version) is installed" \
  test "$(in_root dpkg-query -W -f='${Status} ${Version}' agileos)" = "install ok installed $(dpkg-deb -f "$deb" Version)"
in_root dpkg -L agileos >"$work/files"
for file in /usr/bin/agileosd /usr/bin/agileos-worker /usr/bin/agileosctl /usr/bin/agileos-sandbox \
  /usr/lib/agileos/shim/libagileos_cudart.so /usr/lib/agileos/shim/deps/libprotobuf.so.32 \
  /lib/systemd/system/agileosd.service /etc/agileos/agileosd.json /etc/cdi/agileos.json /usr/include/agileos/module_abi.h; do
  check "dpkg -L lists $file and it is there" bash -c 'grep -qx "$1" "$2" && test -e "$3$1"' _ "$file" "$work/files" "$root"
done
# The package's NVIDIA sonames are its own shims, never a CUDA library.
check "every CUDA soname in the package is a link to a shim" bash -c '
  grep -E "/lib(cuda|cudart|cufft|nvrtc)[^/]*$" "$1" | while read -r f; do
    [[ -L $2$f && $(readlink "$2$f") == libagileos_* ]] || { echo "  $f is not a link to a shim"; exit 1; }
  done' _ "$work/files" "$root"
conffiles=$(in_root dpkg-query -W -f='${Conffiles}\n' agileos | awk 'NF {print $1, $2}' | sort)
check "the conffiles are /etc/agileos/agileosd.json and /etc/cdi/agileos.json ($(tr '\n' ' ' <<<"$conffiles"))" \
  test "$(awk '{print $1}' <<<"$conffiles" | tr '\n' ' ')" = "/etc/agileos/agileosd.json /etc/cdi/agileos.json "
check "dpkg's checksums of the conffiles match the installed files" bash -c '
  while read -r f sum; do [[ $(md5sum <"$2$f" | cut -d" " -f1) == "$sum" ]] || exit 1; done <<<"$1"' _ "$conffiles" "$root"
unit=$root/lib/systemd/system/agileosd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
check "the unit's ExecStart runs /usr/bin/agileosd with /etc/agileos/agileosd.json ($exec_start)" \
  test "$exec_start" = "/usr/bin/agileosd --config /etc/agileos/agileosd.json"
check "the CDI spec binds the installed shim directory" grep -q '"hostPath": "/usr/lib/agileos/shim"' "$root/etc/cdi/agileos.json"
calls=$(systemctl_calls)
check "postinst asked systemd only to reload its units (systemctl calls: ${calls:-none})" \
  test "$calls" = "--system daemon-reload"
check "postinst started nothing: no process in the root, no /run/agileos" \
  test -z "$(processes_in_root)" -a ! -e "$root/run/agileos"
check "the service is not enabled" test ! -e "$root/etc/systemd/system/multi-user.target.wants/agileosd.service"
check "the unit's Documentation= names an installed directory" \
  test -d "$root$(sed -n 's|^Documentation=file://||p' "$root/lib/systemd/system/agileosd.service")"
# An upgrade (here: the same version again): prerm leaves the service running, postinst restarts
# it only if it runs (try-restart), so an upgrade does not start a stopped service either.
in_root DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall -o Dpkg::Use-Pty=0 \
  "/tmp/pkg/$(basename "$deb")" >"$work/reinstall.log" 2>&1 || { cat "$work/reinstall.log"; fail "apt-get install --reinstall"; }
calls=$(systemctl_calls)
check "on upgrade the scripts reload systemd and restart the service only if it runs (systemctl calls: ${calls:-none})" \
  test "$calls" = "--system daemon-reload; try-restart agileosd.service"

# Every ELF file of the package (but the shims' private closure, whose files the shims' RPATH finds)
# finds its libraries in the root: the Depends bring all but the CUDA ones. The shims are looked at
# as they are used, with the runtime shim preloaded: the cuFFT and NVRTC shims bind to the
# process's libcudart.so.13, which is the runtime shim.
missing=$(while read -r file; do
  [[ -f $root$file && ! -L $root$file && $file != /usr/lib/agileos/shim/deps/* ]] || continue
  [[ $(head -c4 "$root$file" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] || continue
  preload=
  [[ $file == /usr/lib/agileos/shim/* ]] && preload=/usr/lib/agileos/shim/libagileos_cudart.so
  in_root LD_PRELOAD=$preload ldd "$file" | awk -v f="$file" '/not found/ {print f ": " $1}'
done <"$work/files" | grep -vE ': (libcuda\.so\.1|libcufft\.so\.12|libnvrtc\.so\.13)$' | tr '\n' ' ' || true)
check "every library the package's programs and shims need is in the root but CUDA's (missing: ${missing:-none})" \
  test -z "$missing"
worker_missing=$(in_root ldd /usr/bin/agileos-worker | awk '/not found/ {print $1}' | sort | tr '\n' ' ')
check "the worker lacks only the NVIDIA driver's and the toolkit's libraries (lacks: $worker_missing)" \
  test "$worker_missing" = "libcuda.so.1 libcufft.so.12 libnvrtc.so.13 "

# --- agileosd as the unit runs it
phase "agileosd from the unit's ExecStart, with fake-GPU workers"
mkdir -p "$root/opt/agileos-test"
install -m 755 "$fake_worker" "$root/opt/agileos-test/agileos-worker-fake"
install -m 755 "$client" "$root/opt/agileos-test/e2e_client"
check "the fake worker finds every library it links in the root (the package's Depends)" \
  bash -c '! chroot "$1" ldd /opt/agileos-test/agileos-worker-fake | grep -q "not found"' _ "$root"
# What systemd does for the unit before ExecStart: the runtime and cache directories.
mode=$(sed -n 's/^RuntimeDirectoryMode=//p' "$unit")
for dir in $(sed -n 's/^RuntimeDirectory=//p' "$unit"); do install -d -m "${mode:-0755}" "$root/run/$dir"; done
for dir in $(sed -n 's/^CacheDirectory=//p' "$unit"); do install -d -m 0755 "$root/var/cache/$dir"; done
# The administrator's edits: the worker, and the privilege-separation ids moved by 100000. Before
# it gives a worker a uid, agileosd kills every process of that uid, and its claim on the uid lives
# in the root's /run: with the packaged ids it would kill the workers of any other daemon on this
# machine that uses the defaults (the e2e tests' daemons, run beside this test on a shared machine)
# and they ours. Everything else stays as packaged (socket, runtime directory, privilege separation
# itself: the workers run as uids of their own).
python3 - "$root/etc/agileos/agileosd.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["worker"]["executable"] = "/opt/agileos-test/agileos-worker-fake"
for key in ("worker_uid_base", "service_uid_base", "shared_gid"):
    config["privileges"][key] += 100000
json.dump(config, open(sys.argv[1], "w"), indent=2)
PY
python3 - "$root/run/notify.sock" >"$work/notify.out" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
try:
    while True:
        message = s.recv(4096).decode()
        print(message.replace("\n", " | "), flush=True)
        if "STOPPING=1" in message:
            break
except socket.timeout:
    print("no STOPPING=1 within 60 s")
PY
listener=$!
for _ in $(seq 50); do [[ -S $root/run/notify.sock ]] && break; sleep 0.1; done
read -ra command <<<"$exec_start"
# Not through in_root: $! must be agileosd itself (chroot and env exec it), not a subshell.
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C NOTIFY_SOCKET=/run/notify.sock \
  "${command[@]}" >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do grep -q READY=1 "$work/notify.out" 2>/dev/null && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
check "agileosd reports READY=1 (Type=notify)" grep -q READY=1 "$work/notify.out"
check "its client socket is the packaged configuration's, /run/agileos/agileosd.sock" test -S "$root/run/agileos/agileosd.sock"
check "agileosctl health prints SERVING" \
  test "$(in_root agileosctl --socket /run/agileos-admin/admin.sock health 2>&1)" = SERVING
in_root agileosctl --socket /run/agileos-admin/admin.sock --json clients >"$work/clients.json" 2>&1 || true
check "agileosctl --json clients answers with JSON ($(head -c 200 "$work/clients.json" | tr '\n' ' '))" \
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/clients.json"

# The program as an unprivileged uid (nobody), the installed runtime shim preloaded, the socket
# the shim's default: the one the packaged configuration names.
if in_root LD_PRELOAD=/usr/lib/agileos/shim/libagileos_cudart.so \
  setpriv --reuid=65534 --regid=65534 --clear-groups timeout 120 /opt/agileos-test/e2e_client >"$work/client.log" 2>&1; then
  pass "a CUDA program runs through the installed shims against the installed daemon"
else
  tail -30 "$work/client.log"
  fail "the CUDA program through the installed shims"
fi
check "every check of the program passed" grep -qx '0 failed' "$work/client.log"
check "the daemon saw the program as uid 65534 and assigned it a worker" \
  bash -c 'grep -q "hello from .*(uid 65534 " "$1" && grep -q "client 1: assigned worker" "$1"' _ "$work/daemon.log"
check "the workers ran as uids of their own (privileges)" grep -q "starting as uid 299100," "$work/daemon.log"

kill -TERM "$daemon"
status=0
wait "$daemon" || status=$?
daemon=
check "SIGTERM stops agileosd with status 0 (got $status)" test "$status" = 0
wait "$listener" || true
listener=
check "agileosd reported STOPPING=1" grep -q STOPPING=1 "$work/notify.out"
for _ in $(seq 50); do [[ -z $(processes_in_root) ]] && break; sleep 0.1; done
check "no process is left in the root (the workers stopped with the daemon)" test -z "$(processes_in_root)"
if ((failures)); then echo "--- daemon log"; tail -40 "$work/daemon.log"; fi

# --- remove, purge
phase "apt-get remove, purge"
# What `systemctl enable agileosd` makes (the unit's WantedBy=), which purge must take away.
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -s /lib/systemd/system/agileosd.service "$root/etc/systemd/system/multi-user.target.wants/agileosd.service"
in_root DEBIAN_FRONTEND=noninteractive apt-get remove -y -q -o Dpkg::Use-Pty=0 agileos >"$work/remove.log" 2>&1 ||
  { cat "$work/remove.log"; fail "apt-get remove"; }
calls=$(systemctl_calls)
check "on remove the scripts stop the service and reload systemd (systemctl calls: ${calls:-none})" \
  test "$calls" = "stop agileosd.service; --system daemon-reload"
check "after remove, dpkg keeps only the conffiles (status config-files)" \
  test "$(in_root dpkg-query -W -f='${Status}' agileos)" = "deinstall ok config-files"
check "after remove, the conffiles are there, the edited one as edited" \
  bash -c 'test -f "$1/etc/cdi/agileos.json" && grep -q agileos-worker-fake "$1/etc/agileos/agileosd.json"' _ "$root"
left=$(while read -r file; do
  [[ -e $root$file || -L $root$file ]] && [[ ! -d $root$file ]] && ! grep -qx "$file" <<<"$(awk '{print $1}' <<<"$conffiles")" && echo "$file"
done <"$work/files" || true)
check "after remove, no other file of the package is left (left: ${left:-none})" test -z "$left"
in_root DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o Dpkg::Use-Pty=0 agileos >"$work/purge.log" 2>&1 ||
  { cat "$work/purge.log"; fail "apt-get purge"; }
calls=$(systemctl_calls)
check "on purge the scripts reload systemd (systemctl calls: ${calls:-none})" test "$calls" = "--system daemon-reload"
check "after purge, dpkg knows nothing of agileos" \
  bash -c '! chroot "$1" dpkg-query -W -f="\${Status}" agileos 2>/dev/null | grep -qv "^unknown ok not-installed$"' _ "$root"
while read -r path; do
  [[ -e $root$path || -L $root$path ]] && echo "$path"
done <"$work/package-paths" >"$work/after"
left=$(comm -13 "$work/before" "$work/after" | tr '\n' ' ')
check "after purge, none of the package's paths is left that the root did not have before (left: ${left:-none})" \
  test -z "$left"
taken=$(comm -23 "$work/before" "$work/after" | tr '\n' ' ')
check "purge took away none of the root's own paths (taken: ${taken:-none})" test -z "$taken"
for path in /etc/agileos /etc/cdi/agileos.json /var/cache/agileos /lib/systemd/system/agileosd.service \
  /etc/systemd/system/multi-user.target.wants/agileosd.service /usr/lib/agileos; do
  check "after purge, $path is gone" bash -c '[[ ! -e $1$2 && ! -L $1$2 ]]' _ "$root" "$path"
done

phase "done"
echo "$failures failed"
((failures == 0))
