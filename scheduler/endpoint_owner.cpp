#include "scheduler/endpoint_owner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::scheduler {
namespace {

std::string failure(const std::string& path, const std::string& why) { return path + ": " + why; }

// A descriptor of the file at `path` itself (a link is not followed), or -1.
int openPathOnly(const std::string& path) { return ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC); }

}  // namespace

bool recordEndpoint(const std::string& path, uid_t owner, EndpointFile* out, std::string* error) {
  const int fd = openPathOnly(path);
  if (fd < 0) {
    *error = failure(path, std::strerror(errno));
    return false;
  }
  struct stat status {};
  const bool stated = ::fstat(fd, &status) == 0;
  ::close(fd);
  if (!stated || !S_ISSOCK(status.st_mode)) {
    *error = failure(path, "not a socket");
    return false;
  }
  if (status.st_uid != owner) {
    *error = failure(path, "owned by uid " + std::to_string(status.st_uid) + ", not the worker's " +
                               std::to_string(owner));
    return false;
  }
  if ((status.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    *error = failure(path, "open to group or others (mode " + std::to_string(status.st_mode & 07777) + ")");
    return false;
  }
  *out = EndpointFile{path, status.st_dev, status.st_ino};
  return true;
}

bool giveEndpoint(const EndpointFile& file, uid_t uid, std::string* error) {
  const int fd = openPathOnly(file.path);
  if (fd < 0) {
    *error = failure(file.path, std::strerror(errno));
    return false;
  }
  struct stat status {};
  bool ok = ::fstat(fd, &status) == 0 && S_ISSOCK(status.st_mode) && status.st_dev == file.device &&
            status.st_ino == file.inode;
  if (!ok) {
    *error = failure(file.path, "no longer the socket the worker reported");
  } else if (::fchownat(fd, "", uid, static_cast<gid_t>(-1), AT_EMPTY_PATH) != 0) {
    *error = failure(file.path, "cannot give it to uid " + std::to_string(uid) + ": " + std::strerror(errno));
    ok = false;
  }
  ::close(fd);
  return ok;
}

}  // namespace agileos::scheduler
