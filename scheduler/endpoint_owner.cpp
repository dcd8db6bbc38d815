#include "scheduler/endpoint_owner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::scheduler {
namespace {

std::string failure(const std::string& path, const std::string& why) { return path + ": " + why; }

// The file at `path` itself (a link is not followed), opened for fstat/fchownat only, with its
// status; -1 with *error if it cannot be opened or stat-ed.
int openWithStatus(const std::string& path, struct stat* status, std::string* error) {
  const int fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || ::fstat(fd, status) != 0) {
    *error = failure(path, std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// "" if only the owner may use the file, else the problem.
std::string openToOthers(const std::string& path, const struct stat& status) {
  if ((status.st_mode & (S_IRWXG | S_IRWXO)) == 0) return "";
  return failure(path, "open to group or others (mode " + std::to_string(status.st_mode & 07777) + ")");
}

}  // namespace

bool recordEndpoint(const std::string& path, uid_t owner, EndpointFile* out, std::string* error) {
  struct stat status {};
  const int fd = openWithStatus(path, &status, error);
  if (fd < 0) return false;
  ::close(fd);
  if (!S_ISSOCK(status.st_mode)) {
    *error = failure(path, "not a socket");
    return false;
  }
  if (status.st_uid != owner) {
    *error = failure(path, "owned by uid " + std::to_string(status.st_uid) + ", not the worker's " +
                               std::to_string(owner));
    return false;
  }
  if (std::string problem = openToOthers(path, status); !problem.empty()) {
    *error = std::move(problem);
    return false;
  }
  *out = EndpointFile{path, status.st_dev, status.st_ino};
  return true;
}

bool giveEndpoint(const EndpointFile& file, uid_t uid, std::string* error) {
  struct stat status {};
  const int fd = openWithStatus(file.path, &status, error);
  if (fd < 0) return false;
  bool ok = false;
  if (!S_ISSOCK(status.st_mode) || status.st_dev != file.device || status.st_ino != file.inode) {
    *error = failure(file.path, "no longer the socket the worker reported");
  } else if (std::string problem = openToOthers(file.path, status); !problem.empty()) {
    // Its owner (the worker, or the client it was given to) opened it up: handing it on would
    // let every uid connect.
    *error = std::move(problem);
  } else if (::fchownat(fd, "", uid, static_cast<gid_t>(-1), AT_EMPTY_PATH) != 0) {
    *error = failure(file.path, "cannot give it to uid " + std::to_string(uid) + ": " + std::strerror(errno));
  } else {
    ok = true;
  }
  ::close(fd);
  return ok;
}

}  // namespace agileos::scheduler
