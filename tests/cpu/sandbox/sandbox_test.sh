#!/usr/bin/env bash
# Tests agileos-sandbox (docker/sandbox/agileos-sandbox) on a machine without a GPU but with the CUDA toolkit.
#
# Usage: sandbox_test.sh SANDBOX PROBE SHIM_DIR
#   SANDBOX   the agileos-sandbox script under test
#   PROBE     the sandbox_probe binary (tests/gpu/sandbox_probe.c)
#   SHIM_DIR  a directory holding a libagileos_cudart.so (a fake one will do)
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, or
# the kernel refuses the namespaces), with the reason printed.
set -uo pipefail

readonly SANDBOX="$1" PROBE="$2" SHIM_DIR="$3"
readonly REAL_CUDART=/usr/local/cuda/lib64/libcudart.so.13
# In sanitizer builds the probe is instrumented and the preloaded (fake) shim comes first; leak
# checking needs ptrace, which the sandbox's dropped capabilities may refuse.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"

failures=0
checks=0

pass() {
  checks=$((checks + 1))
  echo "PASS: $*"
}

fail() {
  checks=$((checks + 1))
  failures=$((failures + 1))
  echo "FAIL: $*"
}

# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
  local description="$1"
  shift
  if "$@"; then pass "$description"; else fail "$description"; fi
}

skip() {
  echo "SKIPPED: $*"
  exit 77
}

if ((EUID != 0)); then skip "agileos-sandbox needs root (running as uid $EUID)"; fi
if ! unshare --mount --net --ipc --pid --fork --mount-proc --propagation private true 2>/dev/null; then
  skip "this kernel or container does not permit unshare of mount/pid/net/ipc namespaces"
fi
for file in "$SANDBOX" "$PROBE" "$SHIM_DIR/libagileos_cudart.so"; do
  [[ -e "$file" ]] || { echo "FAIL: $file does not exist (build the targets first)"; exit 1; }
done

work="$(mktemp -d /tmp/agileos-sandbox-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sockets" "$work/other" "$work/programs"
: >"$work/sockets/agileosd.sock"
: >"$work/sockets/worker-1.sock"
echo "secret" >"$work/outside-secret"
: >"$work/other/agileosd.sock"
cp "$PROBE" "$work/programs/sandbox_probe"

# sandbox [OPTIONS...] -- PROGRAM...: the sandbox with this test's socket dir and shim.
sandbox() {
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" "$@"
}

echo "== probe outside the sandbox (reference)"
outside="$("$work/programs/sandbox_probe")"
outside_status=$?
echo "$outside"
if [[ -e "$REAL_CUDART" ]]; then
  check "outside, the probe loads the real CUDA runtime (so hiding it inside means something)" \
    grep -q "dlopen $REAL_CUDART: REACHED" <<<"$outside"
  check "outside, the probe exits 1" test "$outside_status" -eq 1
else
  echo "NOTE: $REAL_CUDART is absent on this machine; library hiding is exercised only partially"
fi

echo "== probe inside the sandbox"
inside="$(sandbox --keep "$work/programs" -- "$work/programs/sandbox_probe")"
inside_status=$?
echo "$inside"
check "inside, the probe exits 0" test "$inside_status" -eq 0
check "inside, every attempt is blocked" grep -q "^probe: all [0-9]* attempts blocked$" <<<"$inside"
check "inside, libcudart.so.13 resolves to the preloaded shim only" \
  grep -q "dlopen libcudart.so.13: blocked (resolved to the preloaded AgileOS shim" <<<"$inside"

echo "== what the program sees"
# Each line printed by the inner script is "name=value"; compared below. The script is single-quoted
# on purpose: it expands its variables inside the sandbox ($work is spliced in from here).
# shellcheck disable=SC2016
view="$(sandbox -- /bin/sh -c '
  echo "socket=$( [ -e "$AGILEOS_SOCKET" ] && echo visible || echo missing)"
  echo "worker_socket=$( [ -e "$(dirname "$AGILEOS_SOCKET")/worker-1.sock" ] && echo visible || echo missing)"
  echo "secret=$( [ -e "'"$work"'/outside-secret" ] && echo visible || echo hidden)"
  echo "other_socket_dir=$( [ -e "'"$work"'/other/agileosd.sock" ] && echo visible || echo hidden)"
  echo "dev=$(ls /dev | sort | tr "\n" " ")"
  echo "nvidia_nodes=$(ls /dev | grep -c nvidia)"
  echo "cuda_dir=$(ls -A /usr/local/cuda/ 2>/dev/null | wc -l)"
  echo "cap_eff=$(grep "^CapEff" /proc/self/status | cut -f2)"
  echo "no_new_privs=$(grep "^NoNewPrivs" /proc/self/status | cut -f2)"
  echo "preload=$LD_PRELOAD"
  echo "socket_env=$AGILEOS_SOCKET"
  echo "root_writable=$(touch /agileos-sandbox-write-test 2>/dev/null && echo yes || echo no)"
  echo "socket_dir_writable=$(touch "$(dirname "$AGILEOS_SOCKET")/x" 2>/dev/null && echo yes || echo no)"
  echo "tmp_writable=$(touch /tmp/x 2>/dev/null && echo yes || echo no)"
  echo "processes=$(ls /proc | grep -c "^[0-9]*$")"
  echo "network=$(cat /sys/class/net/*/operstate 2>/dev/null | tr "\n" " ")"
')"
echo "$view"
expect_line() {
  check "inside: $1" grep -qx -- "$1" <<<"$view"
}
expect_line "socket=visible"
expect_line "worker_socket=visible"
expect_line "secret=hidden"
expect_line "other_socket_dir=hidden"
expect_line "dev=fd full null ptmx pts random shm stderr stdin stdout tty urandom zero "
expect_line "nvidia_nodes=0"
expect_line "cuda_dir=0"
expect_line "cap_eff=0000000000000000"
expect_line "no_new_privs=1"
expect_line "preload=$(readlink -f "$SHIM_DIR")/libagileos_cudart.so"
expect_line "socket_env=$work/sockets/agileosd.sock"
expect_line "root_writable=no"
expect_line "socket_dir_writable=no"
expect_line "tmp_writable=yes"
# shellcheck disable=SC2016
check "inside: only the sandbox's own processes are visible" \
  awk -F= '$1 == "processes" { exit !($2 <= 8) }' <<<"$view"
check "/agileos-sandbox-write-test was not created outside" test ! -e /agileos-sandbox-write-test

if command -v python3 >/dev/null; then
  echo "== unix sockets"
  rm -f "$work/sockets/agileosd.sock"
  python3 - "$work/sockets/agileosd.sock" "$work/other/other.sock" <<'EOF' &
import socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(1)
other = socket.socket(socket.AF_UNIX)
other.bind(sys.argv[2])
other.listen(1)
abstract = socket.socket(socket.AF_UNIX)
abstract.bind("\0agileos-sandbox-test")
abstract.listen(1)
server.settimeout(20)
connection, _ = server.accept()
connection.sendall(b"hello from outside\n")
EOF
  server_pid=$!
  for _ in $(seq 50); do [[ -S "$work/other/other.sock" ]] && break; sleep 0.1; done
  sockets="$(sandbox --keep "$work/other" -- /usr/bin/python3 -c '
import os, socket
def attempt(address):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address)
        return "connected"
    except OSError:
        return "refused"
print("abstract=" + attempt("\0agileos-sandbox-test"))
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["AGILEOS_SOCKET"])
print("daemon=" + s.recv(100).decode().strip())
')"
  echo "$sockets"
  wait "$server_pid"
  check "inside: the daemon socket (read-only bind) accepts connections" \
    grep -qx "daemon=hello from outside" <<<"$sockets"
  check "inside: abstract unix sockets of the host are unreachable" grep -qx "abstract=refused" <<<"$sockets"
fi

echo "== exit status and signals"
sandbox -- /bin/sh -c 'exit 7'
check "PROGRAM's exit status is passed through" test $? -eq 7
start=$SECONDS
timeout 2 "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" -- /bin/sleep 60
status=$?
check "timeout's SIGTERM reaches PROGRAM (status $status after $((SECONDS - start)) s)" \
  test "$status" -eq 124 -a $((SECONDS - start)) -lt 10

echo "== refusals (PROGRAM must not run)"
# refused DESCRIPTION MESSAGE COMMAND...: COMMAND must exit 125 saying MESSAGE, and must not have
# run its PROGRAM (which would create $work/ran, visible here through --keep-rw "$work").
refused() {
  local description="$1" expected_message="$2"
  shift 2
  rm -f "$work/ran"
  local output status
  output="$("$@" 2>&1)"
  status=$?
  echo "$output"
  check "$description: exit 125" test "$status" -eq 125
  check "$description: says why" grep -q -- "$expected_message" <<<"$output"
  check "$description: PROGRAM did not run" test ! -e "$work/ran"
}
mkdir -p "$work/fakebin"
printf '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n' >"$work/fakebin/unshare"
chmod +x "$work/fakebin/unshare"
refused "unshare refused" "cannot create the namespaces" \
  env PATH="$work/fakebin:$PATH" "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" \
  --keep-rw "$work" -- /usr/bin/touch "$work/ran"
# shellcheck disable=SC2016
printf '#!/bin/sh\nfor a; do [ "$a" = "-t" ] && { echo "mount: permission denied" >&2; exit 32; }; done\nexec /usr/bin/mount "$@"\n' \
  >"$work/fakebin/mount"
chmod +x "$work/fakebin/mount"
rm "$work/fakebin/unshare"
refused "mount refused" "cannot mount a tmpfs" \
  env PATH="$work/fakebin:$PATH" "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" \
  --keep-rw "$work" -- /usr/bin/touch "$work/ran"
refused "no shim" "libagileos_cudart.so does not exist" \
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$work/other" --keep-rw "$work" -- /usr/bin/touch "$work/ran"
if [[ -d /usr/local/cuda ]]; then
  refused "--keep of the CUDA toolkit" "would expose" \
    "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" --keep /usr/local/cuda --keep-rw "$work" \
    -- /usr/bin/touch "$work/ran"
fi
refused "not root" "must run as root" \
  setpriv --reuid=65534 --regid=65534 --clear-groups "$SANDBOX" --socket-dir "$work/sockets" \
  --shim "$SHIM_DIR" -- /usr/bin/touch "$work/ran"

echo "== --keep-rw"
sandbox --keep-rw "$work" -- /usr/bin/touch "$work/ran"
check "a --keep-rw path is writable inside" test -e "$work/ran"

echo "== the compiled-module cache is hidden (/var/cache, and --hide even under the socket dir)"
mkdir -p "$work/sockets/module-cache"
echo "cubin" >"$work/sockets/module-cache/entry.cubin"
cache_listing="$(sandbox --hide "$work/sockets/module-cache" -- /bin/sh -c '
  echo "var-cache:$(ls -A /var/cache | tr "\n" " ")"
  echo "hidden:$(ls -A "$1" | tr "\n" " ")"
  echo "sockets:$(ls -A "$2" | tr "\n" " ")"' sh "$work/sockets/module-cache" "$work/sockets")"
echo "$cache_listing"
check "/var/cache is empty inside" grep -qx "var-cache:" <<<"$cache_listing"
check "a --hide directory under the socket dir is empty inside" grep -qx "hidden:" <<<"$cache_listing"
check "the socket dir itself stays visible" grep -q "^sockets:.*agileosd.sock" <<<"$cache_listing"
check "the hidden entry is still there outside" test -s "$work/sockets/module-cache/entry.cubin"
refused "--hide of a relative path" "not an absolute path" \
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" --hide relative/dir -- /bin/true

echo
echo "$((checks - failures)) passed, $failures failed"
((failures == 0))
