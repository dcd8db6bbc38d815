#!/usr/bin/env bash
# Tests agileos-sandbox (docker/sandbox/, bubblewrap underneath) on a machine without a GPU but with
# the CUDA toolkit.
#
# Usage: sandbox_test.sh SANDBOX PROBE SHIM_DIR
#   SANDBOX   the agileos-sandbox launcher under test
#   PROBE     the sandbox_probe binary (tests/gpu/sandbox_probe.c)
#   SHIM_DIR  a directory holding a libagileos_cudart.so (a fake one will do)
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, no bubblewrap, or the
# kernel refuses unprivileged user namespaces), with the reason printed.
set -uo pipefail

readonly SANDBOX="$1" PROBE="$2" SHIM_DIR="$3"
readonly REAL_CUDART=/usr/local/cuda/lib64/libcudart.so.13
# In sanitizer builds the probe is instrumented and the preloaded (fake) shim comes first; leak
# checking needs ptrace, which the sandbox's seccomp filter refuses.
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
command -v bwrap >/dev/null || skip "bubblewrap (bwrap) is not installed"
if ! setpriv --reuid=65534 --regid=65534 --clear-groups bwrap --unshare-user --ro-bind / / true 2>/dev/null; then
  skip "this kernel or container does not permit unprivileged user namespaces (bubblewrap needs them)"
fi
for file in "$SANDBOX" "$PROBE" "$SHIM_DIR/libagileos_cudart.so"; do
  [[ -e "$file" ]] || { echo "FAIL: $file does not exist (build the targets first)"; exit 1; }
done

# Everything the sandboxes read lies under $work, which their unprivileged uids must be able to pass.
work="$(mktemp -d /tmp/agileos-sandbox-test.XXXXXX)"
chmod 755 "$work"
trap 'rm -rf "$work" "$work-state"' EXIT
mkdir -p "$work/sockets" "$work/other" "$work/programs" "$work/shared" "$work/private"
chmod 755 "$work/sockets" "$work/other" "$work/programs"
chmod 1777 "$work/shared" # --keep-rw: written as the sandbox's host uid
chmod 700 "$work/private"
: >"$work/sockets/agileosd.sock"
: >"$work/sockets/worker-1.sock"
echo "secret" >"$work/outside-secret"
echo "root only" >"$work/private/root-only"
echo "root only" >"$work/root-only-file"
chmod 600 "$work/root-only-file"
: >"$work/other/agileosd.sock"
cp "$PROBE" "$work/programs/sandbox_probe"
# The lease directory lies outside $work, which some checks keep visible (a kept path may not hold it).
readonly STATE="$work-state"

# sandbox [OPTIONS...] -- PROGRAM...: the sandbox with this test's socket dir, shim and lease dir.
sandbox() {
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" --state-dir "$STATE" "$@"
}
# The shell and the tools the inner scripts use live in /usr (the CUDA toolkit under it is covered).
tools=(--keep /usr --keep /etc)

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

probe_paths=("$work/private/root-only" "$work/root-only-file" "$work/private")
echo "== probe inside the sandbox"
inside="$(sandbox --keep "$work/programs" -- "$work/programs/sandbox_probe" "${probe_paths[@]}")"
inside_status=$?
echo "$inside"
check "inside, the probe exits 0" test "$inside_status" -eq 0
check "inside, every attempt is blocked" grep -q "^probe: all [0-9]* attempts blocked$" <<<"$inside"
check "inside, libcudart.so.13 resolves to the preloaded shim only" \
  grep -q "dlopen libcudart.so.13: blocked (resolved to the preloaded AgileOS shim" <<<"$inside"
check "inside, the uid is not 0" grep -q "^run as uid 0: blocked" <<<"$inside"
check "inside, ptrace is refused" grep -q "^ptrace the parent process: blocked" <<<"$inside"

echo "== the same probe with the whole of /usr and /etc kept"
inside="$(sandbox "${tools[@]}" --keep "$work" -- "$work/programs/sandbox_probe" "${probe_paths[@]}")"
inside_status=$?
echo "$inside"
check "kept /usr and /etc: every attempt is still blocked" test "$inside_status" -eq 0
check "kept /etc: /etc/shadow exists but is unreadable" \
  grep -q "^read /etc/shadow: blocked (Permission denied)" <<<"$inside"
check "kept $work: a root-only file is unreadable" \
  grep -q "^read $work/root-only-file: blocked (Permission denied)" <<<"$inside"
check "kept $work: a root-only directory is unreadable" \
  grep -q "^read $work/private: blocked (Permission denied)" <<<"$inside"

echo "== what the program sees"
# Each line printed by the inner script is "name=value"; compared below. The script is single-quoted
# on purpose: it expands its variables inside the sandbox ($work is spliced in from here).
# shellcheck disable=SC2016
view="$(sandbox "${tools[@]}" -- /bin/sh -c '
  echo "uid=$(id -u) gid=$(id -g)"
  echo "socket=$( [ -e "$AGILEOS_SOCKET" ] && echo visible || echo missing)"
  echo "worker_socket=$( [ -e "$(dirname "$AGILEOS_SOCKET")/worker-1.sock" ] && echo visible || echo missing)"
  echo "secret=$( [ -e "'"$work"'/outside-secret" ] && echo visible || echo hidden)"
  echo "other_socket_dir=$( [ -e "'"$work"'/other/agileosd.sock" ] && echo visible || echo hidden)"
  echo "root=$(ls / | sort | tr "\n" " ")"
  echo "dev=$(ls /dev | sort | tr "\n" " ")"
  echo "nvidia_nodes=$(ls /dev | grep -c nvidia)"
  echo "cuda_dir=$(ls -A /usr/local/cuda/ 2>/dev/null | wc -l)"
  echo "cuda_real_dir=$(ls -A "$(readlink -f /usr/local/cuda)" 2>/dev/null | wc -l)"
  echo "var_cache=$( [ -e /var/cache ] && echo visible || echo absent)"
  echo "cap_eff=$(grep "^CapEff" /proc/self/status | cut -f2)"
  echo "cap_bnd=$(grep "^CapBnd" /proc/self/status | cut -f2)"
  echo "no_new_privs=$(grep "^NoNewPrivs" /proc/self/status | cut -f2)"
  echo "seccomp=$(grep "^Seccomp:" /proc/self/status | cut -f2)"
  echo "nofile=$(ulimit -n)"
  echo "core=$(ulimit -c)"
  echo "preload=$LD_PRELOAD"
  echo "socket_env=$AGILEOS_SOCKET"
  echo "root_writable=$(touch /agileos-sandbox-write-test 2>/dev/null && echo yes || echo no)"
  echo "usr_writable=$(touch /usr/agileos-sandbox-write-test 2>/dev/null && echo yes || echo no)"
  echo "socket_dir_writable=$(touch "$(dirname "$AGILEOS_SOCKET")/x" 2>/dev/null && echo yes || echo no)"
  echo "tmp_writable=$(touch /tmp/x 2>/dev/null && echo yes || echo no)"
  echo "processes=$(ls /proc | grep -c "^[0-9]*$")"
  echo "network=$(cat /sys/class/net/*/operstate 2>/dev/null | tr "\n" " ")"
')"
echo "$view"
expect_line() {
  check "inside: $1" grep -qx -- "$1" <<<"$view"
}
expect_line "uid=1000 gid=1000"
expect_line "socket=visible"
expect_line "worker_socket=visible"
expect_line "secret=hidden"
expect_line "other_socket_dir=hidden"
expect_line "nvidia_nodes=0"
expect_line "cuda_dir=0"
expect_line "cuda_real_dir=0"
expect_line "var_cache=absent"
expect_line "cap_eff=0000000000000000"
expect_line "cap_bnd=0000000000000000"
expect_line "no_new_privs=1"
expect_line "seccomp=2"
expect_line "nofile=4096"
expect_line "core=0"
expect_line "preload=$(readlink -f "$SHIM_DIR")/libagileos_cudart.so"
expect_line "socket_env=$(readlink -f "$work/sockets")/agileosd.sock"
expect_line "root_writable=no"
expect_line "usr_writable=no"
expect_line "socket_dir_writable=no"
expect_line "tmp_writable=yes"
expect_line "network="
check "inside: the root holds only what was bound (no /home, /root, /var, /opt, /srv, /boot, /mnt)" \
  bash -c '! grep -qE "^root=.*\b(home|root|var|opt|srv|boot|mnt)\b" <<<"$1"' _ "$view"
check "inside: /dev has the usual nodes" grep -q "^dev=.*null.*urandom.*zero" <<<"$view"
check "inside: only the sandbox's own processes are visible" \
  awk -F= '$1 == "processes" { found = 1; exit !($2 <= 8) } END { if (!found) exit 1 }' <<<"$view"
check "/agileos-sandbox-write-test was not created outside" test ! -e /agileos-sandbox-write-test

echo "== the allow-list root without --keep: only the program, its libraries, the shim and the sockets"
# shellcheck disable=SC2016
bare="$(sandbox -- /bin/sh -c 'for d in /etc/shadow /etc/hosts /usr/bin/ls /home /var /opt /root; do
  [ -e "$d" ] && echo "visible $d"; done; echo done')"
echo "$bare"
check "without --keep, /etc, other programs and the host's trees are absent" test "$bare" = "done"
# The account files are the sandbox's own: the inside user (with home /tmp) and nobody, never the
# host's (no root line), and the environment names the same user.
# shellcheck disable=SC2016
accounts="$(sandbox -- /bin/sh -c 'while read -r line; do echo "passwd $line"; done </etc/passwd
  while read -r line; do echo "group $line"; done </etc/group; echo "env $USER $LOGNAME $HOME"')"
echo "$accounts"
check "inside: /etc/passwd names the inside user, home /tmp" \
  grep -qx "passwd agileos:x:1000:1000:AgileOS client:/tmp:/usr/sbin/nologin" <<<"$accounts"
check "inside: /etc/passwd and /etc/group hold no host account" \
  bash -c '! grep -qE "^(passwd|group) (root|daemon|bin|sys):" <<<"$1"' _ "$accounts"
check "inside: USER, LOGNAME and HOME name the inside user" grep -qx "env agileos agileos /tmp" <<<"$accounts"

if command -v python3 >/dev/null; then
  echo "== seccomp refusals"
  refusals="$(sandbox "${tools[@]}" -- /usr/bin/python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
numbers = {"ptrace": 101, "mount": 165, "keyctl": 250, "bpf": 321, "perf_event_open": 298,
           "userfaultfd": 323, "kexec_load": 246, "init_module": 175, "unshare": 272, "setns": 308}
for name, number in numbers.items():
    result = libc.syscall(number, 0, 0, 0, 0, 0)
    errno = ctypes.get_errno()
    print(name + "=" + ("refused" if result == -1 and errno == 1 else "allowed %d/%d" % (result, errno)))
')"
  echo "$refusals"
  for call in ptrace mount keyctl bpf perf_event_open userfaultfd kexec_load init_module unshare setns; do
    check "seccomp: $call fails with EPERM" grep -qx "$call=refused" <<<"$refusals"
  done
fi

zstd="$(ldconfig -p | awk '$1 == "libzstd.so.1" && /x86-64|AArch64/ {print $NF; exit}')"
if [[ -x /usr/bin/python3 && -n "$zstd" ]]; then
  echo "== --library: a library the program opens at run time, bound with its dependencies"
  # Python's ctypes module is itself such a library (lib-dynload/_ctypes*.so, which needs libffi:
  # neither is in the interpreter's closure), and libzstd stands for any library a program dlopens.
  stdlib="$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
  ctypes_module="$(/usr/bin/python3 -c 'import _ctypes; print(_ctypes.__file__)')"
  # shellcheck disable=SC2016
  opener='import ctypes, sys
try:
    ctypes.CDLL(sys.argv[1])
    print("opened")
except OSError as error:
    print("refused", error)'
  opened="$(sandbox --keep "$stdlib" --library "$ctypes_module" --library "$zstd" -- \
    /usr/bin/python3 -c "$opener" "$zstd" 2>&1)"
  echo "$opened"
  check "--library: ctypes imports (its libffi came with it) and dlopen finds the named library" \
    test "$opened" = "opened"
  without="$(sandbox --keep "$stdlib" --library "$ctypes_module" -- /usr/bin/python3 -c "$opener" "$zstd" 2>&1)"
  echo "$without"
  check "without --library, the same dlopen finds nothing" grep -q "^refused" <<<"$without"
  mkdir -p "$work/fake-driver"
  cp "$zstd" "$work/fake-driver/libcuda.so.1"
  sandbox --library "$work/fake-driver/libcuda.so.1" -- /bin/true 2>"$work/library.err"
  status=$?
  check "--library refuses a driver library (exit 125)" test "$status" -eq 125
  check "--library's refusal says why" grep -q "GPU driver or runtime library" "$work/library.err"
  sandbox --library "/lib/../proc/self/exe" -- /bin/true 2>"$work/library.err"
  status=$?
  check "--library refuses a name with .. parts (exit 125)" test "$status" -eq 125
fi

echo "== distinct host uids for concurrent sandboxes"
sandbox -- /bin/sleep 3 &
first=$!
sandbox -- /bin/sleep 3 &
second=$!
sleep 1.5
uids="$(ps -eo uid=,comm= | awk '$2 == "sleep" && $1 >= 200000 { print $1 }' | sort -u)"
echo "host uids of the sandboxed sleeps: $(echo "$uids" | tr '\n' ' ')"
check "two concurrent sandboxes run as two different unprivileged host uids" test "$(wc -w <<<"$uids")" -eq 2
wait "$first" "$second"

if command -v python3 >/dev/null; then
  echo "== unix sockets"
  rm -f "$work/sockets/agileosd.sock"
  python3 - "$work/sockets/agileosd.sock" "$work/other/other.sock" <<'EOF' &
import os, socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
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
  sockets="$(sandbox "${tools[@]}" -- /usr/bin/python3 -c '
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
sandbox "${tools[@]}" -- /bin/sh -c 'exit 7'
check "PROGRAM's exit status is passed through" test $? -eq 7
start=$SECONDS
timeout 2 "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" --state-dir "$STATE" -- /bin/sleep 60
status=$?
check "timeout's SIGTERM reaches PROGRAM (status $status after $((SECONDS - start)) s)" \
  test "$status" -eq 124 -a $((SECONDS - start)) -lt 10

echo "== refusals (PROGRAM must not run)"
# refused DESCRIPTION MESSAGE COMMAND...: COMMAND must exit 125 saying MESSAGE, and must not have
# run its PROGRAM (which would create $work/shared/ran, visible here through --keep-rw).
refused() {
  local description="$1" expected_message="$2"
  shift 2
  rm -f "$work/shared/ran"
  local output status
  output="$("$@" 2>&1)"
  status=$?
  echo "$output"
  check "$description: exit 125" test "$status" -eq 125
  check "$description: says why" grep -q -- "$expected_message" <<<"$output"
  check "$description: PROGRAM did not run" test ! -e "$work/shared/ran"
}
mkdir -p "$work/fakebin"
printf '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n' >"$work/fakebin/bwrap"
chmod 755 "$work/fakebin/bwrap"
refused "bubblewrap fails" "could not set up the sandbox" \
  sandbox --bwrap "$work/fakebin/bwrap" --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
chmod 777 "$work/fakebin/bwrap"
refused "a bubblewrap others may replace" "must not be writable" \
  sandbox --bwrap "$work/fakebin/bwrap" --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
refused "no shim" "libagileos_cudart.so does not exist" \
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$work/other" --state-dir "$STATE" --keep-rw "$work/shared" \
  -- /usr/bin/touch "$work/shared/ran"
if [[ -d /usr/local/cuda ]]; then
  refused "--keep of the CUDA toolkit" "would expose" \
    sandbox --keep /usr/local/cuda/lib64 --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
fi
refused "--keep /" "would expose the whole host" \
  sandbox --keep / --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
refused "not root" "must run as root" \
  setpriv --reuid=65534 --regid=65534 --clear-groups "$SANDBOX" --socket-dir "$work/sockets" \
  --shim "$SHIM_DIR" -- /usr/bin/touch "$work/shared/ran"
chmod 755 "$work/private"
refused "a lease directory others can reach" "must be a directory owned by root with mode 0700" \
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" --state-dir "$work/private" \
  --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
chmod 700 "$work/private"
refused "every uid leased" "are in use" \
  bash -c 'exec 9>"$1/200123"; flock 9; shift; exec "$@"' _ "$STATE" \
  "$SANDBOX" --socket-dir "$work/sockets" --shim "$SHIM_DIR" --state-dir "$STATE" --uid-base 200123 \
  --uid-count 1 --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
refused "--inside-uid 0" "inside-uid" \
  sandbox --inside-uid 0 --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"

echo "== library shims preloaded after the runtime shim"
# A shim directory that also holds the cuFFT shim: it is preloaded after the runtime shim, so that
# it wins over a real libcufft a program loads by path (the fake runtime shim serves as both).
mkdir -p "$work/shim-with-cufft"
cp "$SHIM_DIR/libagileos_cudart.so" "$work/shim-with-cufft/libagileos_cudart.so"
cp "$SHIM_DIR/libagileos_cudart.so" "$work/shim-with-cufft/libagileos_cufft.so"
chmod 755 "$work/shim-with-cufft"
preloaded="$("$SANDBOX" --socket-dir "$work/sockets" --shim "$work/shim-with-cufft" --state-dir "$STATE" \
  "${tools[@]}" -- /bin/sh -c 'echo "preload=$LD_PRELOAD"')"
check "the cuFFT shim is preloaded after the runtime shim when the shim directory has it" \
  test "$preloaded" = "preload=$(readlink -f "$work/shim-with-cufft")/libagileos_cudart.so:$(readlink -f "$work/shim-with-cufft")/libagileos_cufft.so"

echo "== --keep-rw"
sandbox --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
check "a --keep-rw path is writable inside" test -e "$work/shared/ran"
check "what the program wrote belongs to its unprivileged host uid" \
  test "$(stat -c %u "$work/shared/ran" 2>/dev/null || echo 0)" -ge 200000

echo "== --hide, even under the socket dir"
mkdir -p "$work/sockets/module-cache"
echo "cubin" >"$work/sockets/module-cache/entry.cubin"
cache_listing="$(sandbox "${tools[@]}" --hide "$work/sockets/module-cache" -- /bin/sh -c '
  echo "hidden:$(ls -A "$1" | tr "\n" " ")"
  echo "sockets:$(ls -A "$2" | tr "\n" " ")"' sh "$work/sockets/module-cache" "$work/sockets")"
echo "$cache_listing"
check "a --hide directory under the socket dir is empty inside" grep -qx "hidden:" <<<"$cache_listing"
check "the socket dir itself stays visible" grep -q "^sockets:.*agileosd.sock" <<<"$cache_listing"
check "the hidden entry is still there outside" test -s "$work/sockets/module-cache/entry.cubin"
refused "--hide of a relative path" "not an absolute path" \
  sandbox --hide relative/dir -- /bin/true

echo "== cgroup limits"
# cgroup_dir PID CONTROLLER: the directory of PID's cgroup that holds CONTROLLER's files (v2: the
# unified one; v1: the controller's own hierarchy, mounted from its root as on the CPU machine).
cgroup_dir() {
  if [[ "$(stat -f -c %T /sys/fs/cgroup)" == cgroup2fs ]]; then
    echo "/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$1/cgroup")"
  else
    echo "/sys/fs/cgroup/$2$(awk -F: -v c="$2" '{ n = split($2, l, ","); for (i = 1; i <= n; i++) if (l[i] == c) print $3 }' "/proc/$1/cgroup")"
  fi
}
# pid_of ARGS: the pid of the process whose command line is exactly ARGS (waits up to 5 s).
pid_of() {
  local pid=""
  for _ in $(seq 50); do
    pid="$(ps -eo pid=,args= | awk -v a="$1" '{ p = $1; sub(/^ *[0-9]+ /, ""); if ($0 == a) { print p; exit } }')"
    [[ -n "$pid" ]] && break
    sleep 0.1
  done
  echo "$pid"
}
probe_output="$(sandbox --cgroup require --max-pids 64 -- /bin/true 2>&1)"
probe_status=$?
if ((probe_status != 0)); then
  echo "$probe_output"
  if grep -q "cgroup limits cannot be set (--cgroup require)" <<<"$probe_output"; then
    echo "SKIPPED (cgroup checks): this host offers no usable cgroup hierarchy, as said above"
    auto_output="$(sandbox --max-pids 64 -- /bin/true 2>&1)"
    auto_status=$?
    echo "$auto_output"
    check "--cgroup auto on a host without usable cgroups still runs the program" test "$auto_status" -eq 0
    check "--cgroup auto says once that the limits are left out" \
      test "$(grep -c "cgroup limits left out" <<<"$auto_output")" -eq 1
  else
    fail "--cgroup require --max-pids 64 exits $probe_status for another reason than the host"
  fi
else
  if [[ "$(stat -f -c %T /sys/fs/cgroup)" == cgroup2fs ]]; then memory_file=memory.max; else memory_file=memory.limit_in_bytes; fi
  check "--cgroup auto (the default) says nothing where the host offers the limits" \
    test -z "$(sandbox -- /bin/true 2>&1)"
  sandbox --max-pids 32 --max-memory 256M -- /bin/sleep 4.31 &
  launcher=$!
  sleeper="$(pid_of "/bin/sleep 4.31")"
  if [[ -z "$sleeper" ]]; then
    fail "the sandboxed /bin/sleep 4.31 did not show up"
  else
    leased="$(ps -o uid= -p "$sleeper" | tr -d ' ')"
    pids_dir="$(cgroup_dir "$sleeper" pids)"
    memory_dir="$(cgroup_dir "$sleeper" memory)"
    echo "the program (host uid $leased) is in $pids_dir and $memory_dir"
    cat "/proc/$sleeper/cgroup"
    check "the program is in the cgroup named after its leased uid (pids)" \
      test "$(basename "$pids_dir")" = "agileos-sandbox-$leased"
    check "the program is in the cgroup named after its leased uid (memory)" \
      test "$(basename "$memory_dir")" = "agileos-sandbox-$leased"
    check "pids.max is --max-pids" test "$(cat "$pids_dir/pids.max")" = 32
    check "$memory_file is --max-memory" test "$(cat "$memory_dir/$memory_file")" = 268435456
    members="$(cat "$pids_dir/cgroup.procs")"
    echo "in the cgroup: $(tr '\n' ' ' <<<"$members")(the launcher is $launcher)"
    check "bubblewrap is inside too (more than the program), the launcher is not" \
      test "$(wc -l <<<"$members")" -ge 2 -a -z "$(grep -x "$launcher" <<<"$members")"
    check "every file of the cgroup is root's and closed to group and others" \
      test -z "$(find "$pids_dir" "$memory_dir" -maxdepth 1 \( ! -uid 0 -o -perm /022 \) -print)"
    check "the leased uid cannot raise its pids.max" \
      setpriv --reuid="$leased" --regid="$leased" --clear-groups sh -c "! echo max 2>/dev/null >'$pids_dir/pids.max'"
    check "the leased uid cannot move a process out" \
      setpriv --reuid="$leased" --regid="$leased" --clear-groups \
      sh -c "! echo $sleeper 2>/dev/null >'$(dirname "$pids_dir")/cgroup.procs'"
  fi
  wait "$launcher"
  check "the launch with cgroup limits exits 0" test $? -eq 0
  check "the cgroup is removed after the program" test -n "$pids_dir" -a ! -e "$pids_dir" -a ! -e "$memory_dir"

  if command -v python3 >/dev/null; then
    # Forks until one fails; each child waits to be killed with the sandbox.
    fork_script='
import os, signal
started = 0
for _ in range(40):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    started += 1
print("started=%d" % started)'
    forks="$(sandbox "${tools[@]}" --max-pids 12 -- /usr/bin/python3 -c "$fork_script")"
    echo "--max-pids 12: $forks"
    check "--max-pids 12 stops a fork loop inside (bubblewrap's processes count too)" \
      awk -F= '$1 == "started" { found = 1; exit !($2 > 0 && $2 < 12) } END { if (!found) exit 1 }' <<<"$forks"
    forks="$(sandbox "${tools[@]}" -- /usr/bin/python3 -c "$fork_script")"
    echo "default --max-pids: $forks"
    check "without a small --max-pids the same loop starts all 40" grep -qx "started=40" <<<"$forks"
    allocate='
data = b"x" * (256 << 20)
print("allocated %d MiB" % (len(data) >> 20))'
    memory_output="$(sandbox "${tools[@]}" --max-memory 64M -- /usr/bin/python3 -c "$allocate" 2>&1)"
    memory_status=$?
    echo "--max-memory 64M, 256 MiB asked: exit $memory_status"
    check "--max-memory 64M ends a program that fills 256 MiB" \
      test "$memory_status" -ne 0 -a -z "$(grep allocated <<<"$memory_output")"
    memory_output="$(sandbox "${tools[@]}" -- /usr/bin/python3 -c "$allocate" 2>&1)"
    check "without --max-memory it fills them" grep -qx "allocated 256 MiB" <<<"$memory_output"
  fi

  # A stale cgroup of a leased uid (its launcher died), with a process in it: killed and replaced.
  if [[ -n "$pids_dir" ]]; then
    stale_dir="$(dirname "$pids_dir")/agileos-sandbox-200151"
    mkdir "$stale_dir"
    sleep 60 &
    stale_sleeper=$!
    echo "$stale_sleeper" >"$stale_dir/cgroup.procs"
    sandbox --uid-base 200151 --uid-count 1 -- /bin/true
    check "a launch whose cgroup name is taken by a stale one runs" test $? -eq 0
    wait "$stale_sleeper" 2>/dev/null
    stale_status=$?
    check "the stale cgroup's process was killed (status $stale_status)" test "$stale_status" -eq 137
    check "the stale cgroup is gone" test ! -e "$stale_dir"
  fi

  sandbox --cgroup off -- /bin/sleep 2.37 &
  launcher=$!
  sleeper="$(pid_of "/bin/sleep 2.37")"
  check "--cgroup off: the program is in no sandbox cgroup" \
    test -n "$sleeper" -a -z "$(grep agileos-sandbox "/proc/$sleeper/cgroup" 2>/dev/null)"
  wait "$launcher"
  refused "--cgroup-parent that does not exist" "is not a cgroup directory" \
    sandbox --cgroup-parent /agileos-no-such-parent --keep-rw "$work/shared" -- /usr/bin/touch "$work/shared/ran"
fi

echo
echo "$((checks - failures)) passed, $failures failed"
((failures == 0))
