#include "worker/transport/endpoint_owner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::worker {

bool giveEndpointsTo(const std::vector<std::string>& socketPaths, uid_t uid, std::string* error) {
  for (const std::string& path : socketPaths) {
    // lchown: the path is the worker's own socket; never follow a link someone put in its place.
    if (::lchown(path.c_str(), uid, static_cast<gid_t>(-1)) != 0 || ::chmod(path.c_str(), 0600) != 0) {
      *error = "cannot give " + path + " to uid " + std::to_string(uid) + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace agileos::worker
