// The seccomp filter of the jail (jail.h), with libseccomp.
//
// A deny list over a default of "allow", not an allow list: the guarantee that no host file is
// reachable comes from the empty root (jail_namespace.cpp); the filter takes away the system
// calls that could reach a file some other way or undo the jail, whatever the C library of the
// machine (the GPU machines run another glibc than the build machine) happens to call inside
// NVRTC. Calls that name a path fail with EACCES (NVRTC then reports "cannot open" as for any
// missing header); calls with no business in a compiler kill the process.
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "worker/adapters/nvrtc/compiler/jail.h"

namespace agileos::adapters::nvrtc::jail {
namespace {

// Fail with EACCES: everything that opens, names or changes a path, sockets, SysV and POSIX IPC.
// clang-format off
constexpr const char* kRefused[] = {
    "open", "openat", "openat2", "creat", "open_by_handle_at", "name_to_handle_at", "stat", "lstat",
    "newfstatat", "fstatat64", "statx", "statfs", "access", "faccessat", "faccessat2", "readlink",
    "readlinkat", "getdents", "getdents64", "chdir", "fchdir", "truncate", "mkdir", "mkdirat", "mknod",
    "mknodat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
    "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime",
    "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "getxattr", "lgetxattr",
    "fgetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark", "memfd_create",
    "memfd_secret", "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "mq_open",
    "mq_unlink", "shmget", "shmat", "msgget", "semget", "uselib", "acct", "swapon", "swapoff", "quotactl",
    "quotactl_fd", "lookup_dcookie", "sysfs", "ustat", "landlock_create_ruleset",
};
// clang-format on

// Kill the process: undoing the jail, reaching other processes, the kernel's own interfaces.
// clang-format off
constexpr const char* kKilled[] = {
    "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
    "process_madvise", "kcmp", "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "mount", "umount", "umount2",
    "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "unshare", "setns", "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf",
    "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "syslog", "iopl", "ioperm", "setuid", "setgid", "setreuid", "setregid",
    "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid", "capset", "sethostname", "setdomainname",
    "vhangup", "nfsservctl", "seccomp",
};
// clang-format on

using Filter = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

std::string addRule(scmp_filter_ctx filter, std::uint32_t action, const char* name, unsigned count = 0,
                    const scmp_arg_cmp* comparisons = nullptr) {
  const int number = seccomp_syscall_resolve_name(name);
  if (number == __NR_SCMP_ERROR) return {};  // not a system call on this architecture
  const int rc = seccomp_rule_add_array(filter, action, number, count, comparisons);
  if (rc != 0) return std::string("seccomp rule for ") + name + ": " + std::strerror(-rc);
  return {};
}

}  // namespace

std::string installSeccompFilter() {
  Filter filter(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!filter) return "seccomp_init failed";
  // Another architecture's system call numbers (x86 int 0x80, x32) would escape the names
  // below: kill.
  if (seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0 ||
      seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_NNP, 1) != 0) {
    return "seccomp_attr_set failed";
  }
  for (const char* name : kRefused) {
    if (auto error = addRule(filter.get(), SCMP_ACT_ERRNO(EACCES), name); !error.empty()) return error;
  }
  for (const char* name : kKilled) {
    if (auto error = addRule(filter.get(), SCMP_ACT_KILL_PROCESS, name); !error.empty()) return error;
  }
  // clone3's flags are behind a pointer the filter cannot read: ENOSYS makes the C library fall
  // back to clone, whose flags it can.
  if (auto error = addRule(filter.get(), SCMP_ACT_ERRNO(ENOSYS), "clone3"); !error.empty()) return error;
  // clone only for threads (NVRTC starts none today; a thread shares the jail).
  const scmp_arg_cmp notThread[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)};
  if (auto error = addRule(filter.get(), SCMP_ACT_KILL_PROCESS, "clone", 1, notThread); !error.empty()) {
    return error;
  }
  // Signals only to itself (abort() and raise() use tgkill on the own pid).
  const auto self = static_cast<scmp_datum_t>(::getpid());
  const scmp_arg_cmp other[] = {SCMP_A0(SCMP_CMP_NE, self)};
  for (const char* name : {"kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"}) {
    if (auto error = addRule(filter.get(), SCMP_ACT_ERRNO(EPERM), name, 1, other); !error.empty())
      return error;
  }
  if (auto error = addRule(filter.get(), SCMP_ACT_ERRNO(EPERM), "tkill"); !error.empty()) return error;
  // No typing into a terminal the descriptors might lead to, no way back to dumpable.
  for (const unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    const scmp_arg_cmp ioctl[] = {SCMP_A1(SCMP_CMP_EQ, request)};
    if (auto error = addRule(filter.get(), SCMP_ACT_ERRNO(EPERM), "ioctl", 1, ioctl); !error.empty())
      return error;
  }
  const scmp_arg_cmp dumpable[] = {SCMP_A0(SCMP_CMP_EQ, PR_SET_DUMPABLE)};
  if (auto error = addRule(filter.get(), SCMP_ACT_ERRNO(EPERM), "prctl", 1, dumpable); !error.empty()) {
    return error;
  }
  if (const int rc = seccomp_load(filter.get()); rc != 0) {
    return std::string("seccomp_load: ") + std::strerror(-rc);
  }
  // Verify: the filter is in force.
  errno = 0;
  const int fd = ::open("/", O_RDONLY | O_CLOEXEC);
  if (fd >= 0 || errno != EACCES) {
    if (fd >= 0) ::close(fd);
    return "the seccomp filter does not refuse open";
  }
  return {};
}

}  // namespace agileos::adapters::nvrtc::jail
