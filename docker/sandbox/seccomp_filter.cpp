#include "docker/sandbox/seccomp_filter.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace agileos::sandbox {
namespace {

// clang-format off
const std::vector<std::string> kRefused = {
    // other processes. Not process_vm_readv/writev: the shim reads its own memory with them to
    // check a pointer without faulting (client/session/module_registry.cpp), and against another
    // process they need ptrace access, which only the tenant's own processes (same uid, same PID
    // namespace) could grant.
    "ptrace", "process_madvise", "kcmp", "pidfd_getfd",
    // the mount table and namespaces (bubblewrap's --disable-userns closes nested user namespaces too)
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    // the kernel's own interfaces
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "quotactl",
    "quotactl_fd", "fanotify_init", "syslog", "acct", "swapon", "swapoff", "reboot", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "vhangup", "nfsservctl", "uselib",
    "personality",
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

std::string buildRules(scmp_filter_ctx filter) {
  if (seccomp_attr_set(filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0) {
    return "seccomp_attr_set(BADARCH) failed";
  }
  for (const std::string& name : kRefused) {
    if (auto error = addRule(filter, SCMP_ACT_ERRNO(EPERM), name.c_str()); !error.empty()) return error;
  }
  // clone with a namespace flag: EPERM. clone3 keeps its flags behind a pointer the filter
  // cannot read, so it answers ENOSYS and the C library falls back to clone.
  for (const scmp_datum_t flag : {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                                  CLONE_NEWNET, CLONE_NEWCGROUP}) {
    const scmp_arg_cmp withFlag[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)};
    if (auto error = addRule(filter, SCMP_ACT_ERRNO(EPERM), "clone", 1, withFlag); !error.empty())
      return error;
  }
  if (auto error = addRule(filter, SCMP_ACT_ERRNO(ENOSYS), "clone3"); !error.empty()) return error;
  // No typing into the terminal the program was started from.
  for (const unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    const scmp_arg_cmp ioctl[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request)};
    if (auto error = addRule(filter, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, ioctl); !error.empty()) return error;
  }
  return {};
}

}  // namespace

const std::vector<std::string>& refusedSystemCalls() { return kRefused; }

int compileSeccompFilter(std::string* error) {
  Filter filter(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!filter) {
    *error = "seccomp_init failed";
    return -1;
  }
  if (std::string failed = buildRules(filter.get()); !failed.empty()) {
    *error = failed;
    return -1;
  }
  const int fd = ::memfd_create("agileos-sandbox-seccomp", 0);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return -1;
  }
  if (const int rc = seccomp_export_bpf(filter.get(), fd); rc != 0) {
    *error = std::string("seccomp_export_bpf: ") + std::strerror(-rc);
    ::close(fd);
    return -1;
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    *error = std::string("lseek: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace agileos::sandbox
