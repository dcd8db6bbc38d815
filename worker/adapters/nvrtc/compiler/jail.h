// The jail of agileos-nvrtc-compiler: what the process does to itself, after it has loaded
// NVRTC and before it reads any untrusted input, so that NVRTC can open no file of the host
// whatever the client's program or options say (docs/security-model.md, "NVRTC").
//
// Invariants:
// - Every step either succeeds and is verified, or returns a non-empty reason; the caller then
//   exits without reading the request (fail closed). There is no unjailed mode.
// - After lockDown: the process is in its own mount, IPC, UTS and (where the kernel allows)
//   network namespace, whose root is an empty read-only tmpfs (the host's tree is detached);
//   its ids are unprivileged (65534 by default) with no capabilities, not even in the bounding
//   set; no_new_privs and not dumpable; descriptors 0, 1, 2 only; CPU time, address space,
//   file size, descriptors and core dumps limited; a seccomp filter refuses every system call
//   that names a path, creates a socket or starts a program, and kills on those that could undo
//   the jail (mount, unshare, setns, ptrace, io_uring, pidfd_getfd, bpf, ...).
#pragma once

#include <sys/types.h>

#include <string>

namespace agileos::adapters::nvrtc::jail {

struct Limits {
  unsigned cpuSeconds = 60;  // CPU time for the compilation(s), added to what is spent
  unsigned long long addressSpaceBytes = 4ull << 30;  // RLIMIT_AS of the whole process (NVRTC included)
  uid_t uid = 65534;                                  // the ids the process takes (when started as root)
  gid_t gid = 65534;
};

// Loads what NVRTC would load lazily during a compilation (libnvrtc-builtins), so that no file
// needs to be opened once the jail is up. jail_preload.cpp.
std::string preloadNvrtc();

// Closes every descriptor but 0, 1 and 2, and checks that none is left. jail_limits.cpp.
std::string closeExtraDescriptors();

// The namespaces and the empty root. jail_namespace.cpp.
// `privileged`: set by the call to whether the process was root in its own user namespace and
// so dropped to `limits.uid` itself (else a new user namespace maps it to that id).
std::string enterEmptyRoot(const Limits& limits, bool* privileged);

// Drops every capability (bounding, ambient, permitted, effective, inheritable) and, when
// `privileged`, the groups and ids; verifies. jail_namespace.cpp.
std::string dropPrivileges(const Limits& limits, bool privileged);

// no_new_privs, not dumpable, resource limits. jail_limits.cpp.
std::string applyLimits(const Limits& limits);

// Whether applyLimits sets RLIMIT_AS: not in sanitizer builds (their runtimes reserve terabytes
// of address space); those are test builds, and the compiler says so on stderr.
bool addressSpaceLimited();

// The seccomp filter; verifies that it refuses an open. jail_seccomp.cpp.
std::string installSeccompFilter();

// All of the above in order; empty on success. jail.cpp.
std::string lockDown(const Limits& limits);

}  // namespace agileos::adapters::nvrtc::jail
