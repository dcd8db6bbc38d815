#include "docker/device_plugin/socket_identity.h"

#include <sys/stat.h>

namespace agileos::device_plugin {

std::optional<SocketIdentity> socketIdentity(const std::string& path) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0 || !S_ISSOCK(status.st_mode)) return std::nullopt;
  return SocketIdentity{status.st_dev, status.st_ino};
}

}  // namespace agileos::device_plugin
