#include "docker/sandbox/uid_lease.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::sandbox {
namespace {

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// The lease directory must be root's alone: anyone who could create or remove its files could
// take or fake a lease.
bool makePrivateDirectory(const std::string& dir, std::string* error) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = errnoText("mkdir " + dir);
    return false;
  }
  struct stat status {};
  if (::lstat(dir.c_str(), &status) != 0) {
    *error = errnoText("stat " + dir);
    return false;
  }
  if (!S_ISDIR(status.st_mode) || status.st_uid != 0 || (status.st_mode & 077) != 0) {
    *error = dir + " must be a directory owned by root with mode 0700";
    return false;
  }
  return true;
}

}  // namespace

std::optional<UidLease> UidLease::acquire(const std::string& stateDir, uid_t base, unsigned count,
                                          std::string* error) {
  if (!makePrivateDirectory(stateDir, error)) return std::nullopt;
  const unsigned start = static_cast<unsigned>(::getpid()) % count;
  for (unsigned i = 0; i < count; ++i) {
    const uid_t id = base + (start + i) % count;
    const std::string path = stateDir + "/" + std::to_string(id);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      *error = errnoText("open " + path);
      return std::nullopt;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return UidLease(fd, id);
    ::close(fd);
  }
  *error = "all " + std::to_string(count) + " sandbox uids from " + std::to_string(base) + " are in use";
  return std::nullopt;
}

UidLease::UidLease(UidLease&& other) noexcept : fd_(other.fd_), id_(other.id_) { other.fd_ = -1; }

UidLease::~UidLease() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace agileos::sandbox
