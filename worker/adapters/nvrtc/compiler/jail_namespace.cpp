// The namespaces and the empty root of the jail (jail.h), and the privilege drop.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "worker/adapters/nvrtc/compiler/jail.h"

namespace agileos::adapters::nvrtc::jail {
namespace {

std::string failed(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string writeProcFile(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return failed(std::string("open ") + path);
  const ssize_t written = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (written != static_cast<ssize_t>(text.size())) return failed(std::string("write ") + path);
  return {};
}

constexpr int kNamespaces = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

// unshare with a network namespace where the kernel allows one, else without (the seccomp
// filter refuses socket() either way, so the network namespace is a second line only).
bool unshareWithNetwork(int flags) {
  if (::unshare(flags | CLONE_NEWNET) == 0) return true;
  return ::unshare(flags) == 0;
}

// As root of the initial user namespace: new namespaces directly, ids dropped later.
std::string enterAsRoot() {
  if (!unshareWithNetwork(kNamespaces)) return failed("unshare(mount, IPC, UTS namespaces)");
  return {};
}

// Otherwise: a new user namespace too, in which the caller's one uid and gid appear as
// limits.uid / limits.gid (and which grants the capabilities to mount, dropped right after).
std::string enterAsUser(const Limits& limits) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (!unshareWithNetwork(CLONE_NEWUSER | kNamespaces)) return failed("unshare(user, mount namespaces)");
  if (auto error = writeProcFile("/proc/self/setgroups", "deny"); !error.empty()) return error;
  if (auto error = writeProcFile("/proc/self/uid_map",
                                 std::to_string(limits.uid) + " " + std::to_string(uid) + " 1\n");
      !error.empty()) {
    return error;
  }
  return writeProcFile("/proc/self/gid_map", std::to_string(limits.gid) + " " + std::to_string(gid) + " 1\n");
}

// Whether the root directory holds no entry but "." and "..".
std::string checkRootIsEmpty() {
  DIR* root = ::opendir("/");
  if (root == nullptr) return failed("opendir / in the jail");
  std::string error;
  while (const dirent* entry = ::readdir(root)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      error = std::string("the jail's root is not empty: it holds ") + entry->d_name;
      break;
    }
  }
  ::closedir(root);
  if (!error.empty()) return error;
  struct stat status {};
  if (::stat("/proc", &status) == 0 || ::stat("/etc", &status) == 0) {
    return "a host path is still reachable in the jail";
  }
  return {};
}

}  // namespace

std::string enterEmptyRoot(const Limits& limits, bool* privileged) {
  *privileged = ::geteuid() == 0;
  std::string error = *privileged ? enterAsRoot() : enterAsUser(limits);
  if (!error.empty() && *privileged) {
    // Root without CAP_SYS_ADMIN (a container): a user namespace may still be allowed.
    const std::string asRoot = error;
    *privileged = false;
    error = enterAsUser(limits);
    if (!error.empty()) error = asRoot + "; as a user namespace: " + error;
  }
  if (!error.empty()) return error;

  // Nothing done below may reach the host's mount table.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed("make / private");
  // The new root: a tiny tmpfs over /tmp (any existing directory would do; this mount exists
  // only in this namespace).
  if (::mount("agileos-nvrtc-jail", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=16k,nr_inodes=4,mode=0555") != 0) {
    return failed("mount tmpfs for the jail's root");
  }
  if (::chdir("/tmp") != 0) return failed("chdir to the jail's root");
  if (::syscall(SYS_pivot_root, ".", ".") == 0) {
    // The old root is now stacked on the new one: detach it and all of the host's mounts.
    if (::umount2(".", MNT_DETACH) != 0) return failed("detach the host's root");
  } else {
    // pivot_root is refused where / is the initial rootfs (EINVAL); move the tmpfs over / and
    // chroot into it. The host's mounts stay below, unreachable: no descriptor names them, no
    // capability is left to chroot again, and the seccomp filter forbids chroot and mount.
    if (errno != EINVAL) return failed("pivot_root");
    if (::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0) return failed("move the jail's root over /");
    if (::chroot(".") != 0) return failed("chroot to the jail's root");
  }
  if (::chdir("/") != 0) return failed("chdir / in the jail");
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) != 0) {
    return failed("remount the jail's root read-only");
  }
  return checkRootIsEmpty();
}

std::string dropPrivileges(const Limits& limits, bool privileged) {
  // The bounding set first: dropping from it needs CAP_SETPCAP, which the id change removes.
  for (int cap = 0; ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return failed("drop capability from the bounding set");
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return failed("clear the ambient capabilities");
  }
  if (privileged) {
    if (::setgroups(0, nullptr) != 0) return failed("setgroups");
    if (::setresgid(limits.gid, limits.gid, limits.gid) != 0) return failed("setresgid");
    if (::setresuid(limits.uid, limits.uid, limits.uid) != 0) return failed("setresuid");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return failed("capset (drop all capabilities)");

  // Verify: the ids are the unprivileged ones and not root, and no capability is left.
  uid_t ruid = 0, euid = 0, suid = 0;
  gid_t rgid = 0, egid = 0, sgid = 0;
  if (::getresuid(&ruid, &euid, &suid) != 0 || ::getresgid(&rgid, &egid, &sgid) != 0)
    return failed("getresuid");
  if (ruid != limits.uid || euid != limits.uid || suid != limits.uid || ruid == 0 || rgid != limits.gid ||
      egid != limits.gid || sgid != limits.gid) {
    return "the ids did not change to " + std::to_string(limits.uid) + ":" + std::to_string(limits.gid) +
           " (now " + std::to_string(euid) + ":" + std::to_string(egid) + ")";
  }
  if (privileged && ::getgroups(0, nullptr) != 0) return "supplementary groups are left";
  __user_cap_data_struct check[_LINUX_CAPABILITY_U32S_3] = {};
  header = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capget, &header, check) != 0) return failed("capget");
  for (const auto& word : check) {
    if (word.effective != 0 || word.permitted != 0 || word.inheritable != 0) return "capabilities are left";
  }
  if (::prctl(PR_CAPBSET_READ, 0, 0, 0, 0) != 0) return "the bounding set is not empty";
  return {};
}

}  // namespace agileos::adapters::nvrtc::jail
