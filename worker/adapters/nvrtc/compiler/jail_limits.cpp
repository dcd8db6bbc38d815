// Descriptors, no_new_privs, dumpability and resource limits of the jail (jail.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "worker/adapters/nvrtc/compiler/jail.h"

// Sanitizer runtimes reserve terabytes of address space (shadow memory), so RLIMIT_AS cannot
// hold in a sanitizer build; such builds are for tests only, and say so when they start.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AGILEOS_JAIL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define AGILEOS_JAIL_SANITIZED 1
#endif
#endif

namespace agileos::adapters::nvrtc::jail {
namespace {

std::string failed(const std::string& what) { return what + ": " + std::strerror(errno); }

constexpr rlim_t kMaxDescriptors = 8;  // 0, 1, 2 and room for NVRTC's own (it opens none here)

std::string setLimit(int resource, rlim_t value, const char* name) {
  const rlimit limit{value, value};
  if (::setrlimit(resource, &limit) != 0) return failed(std::string("setrlimit ") + name);
  rlimit check{};
  if (::getrlimit(resource, &check) != 0 || check.rlim_cur != value || check.rlim_max != value) {
    return std::string("setrlimit ") + name + " did not hold";
  }
  return {};
}

}  // namespace

std::string closeExtraDescriptors() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return failed("getrlimit RLIMIT_NOFILE");
  const long highest = files.rlim_max == RLIM_INFINITY || files.rlim_max > (1u << 20)
                           ? (1l << 20)
                           : static_cast<long>(files.rlim_max);
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (long fd = 3; fd < highest; ++fd) ::close(static_cast<int>(fd));
  }
  // Verify: /proc/self/fd lists 0, 1, 2 and the listing's own descriptor only; without /proc,
  // every number up to the limit must be closed.
  if (DIR* listing = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(listing);
    std::string error;
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name == "." || name == ".." || name == "0" || name == "1" || name == "2" ||
          name == std::to_string(own)) {
        continue;
      }
      error = "descriptor " + name + " is still open";
      break;
    }
    ::closedir(listing);
    return error;
  }
  for (long fd = 3; fd < highest; ++fd) {
    if (::fcntl(static_cast<int>(fd), F_GETFD) != -1 || errno != EBADF) {
      return "descriptor " + std::to_string(fd) + " is still open";
    }
  }
  return {};
}

std::string applyLimits(const Limits& limits) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("PR_SET_NO_NEW_PRIVS");
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return failed("PR_SET_DUMPABLE");

  // CPU time is counted from the start of the process: the budget is what is spent so far
  // (loading NVRTC) plus the compilation's. SIGXCPU at the soft limit, SIGKILL at the hard one.
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return failed("getrusage");
  const rlim_t spent = static_cast<rlim_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1;
  const rlimit cpu{spent + limits.cpuSeconds, spent + limits.cpuSeconds + 1};
  if (::setrlimit(RLIMIT_CPU, &cpu) != 0) return failed("setrlimit RLIMIT_CPU");

#ifndef AGILEOS_JAIL_SANITIZED
  if (auto error = setLimit(RLIMIT_AS, limits.addressSpaceBytes, "RLIMIT_AS"); !error.empty()) return error;
#endif
  if (auto error = setLimit(RLIMIT_FSIZE, 0, "RLIMIT_FSIZE"); !error.empty()) return error;
  if (auto error = setLimit(RLIMIT_CORE, 0, "RLIMIT_CORE"); !error.empty()) return error;
  if (auto error = setLimit(RLIMIT_NOFILE, kMaxDescriptors, "RLIMIT_NOFILE"); !error.empty()) return error;
  if (auto error = setLimit(RLIMIT_MEMLOCK, 0, "RLIMIT_MEMLOCK"); !error.empty()) return error;
  if (auto error = setLimit(RLIMIT_MSGQUEUE, 0, "RLIMIT_MSGQUEUE"); !error.empty()) return error;
  return {};
}

bool addressSpaceLimited() {
#ifdef AGILEOS_JAIL_SANITIZED
  return false;
#else
  return true;
#endif
}

}  // namespace agileos::adapters::nvrtc::jail
