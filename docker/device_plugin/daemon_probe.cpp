#include "docker/device_plugin/daemon_probe.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::device_plugin {

bool daemonAcceptsConnections(const std::string& socket_path) {
  struct stat status {};
  if (::stat(socket_path.c_str(), &status) != 0 || !S_ISSOCK(status.st_mode)) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  // Non-blocking: a unix connect completes at once or fails with EAGAIN when the backlog is full;
  // it never waits on the daemon.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const int result = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int error = errno;
  ::close(fd);
  return result == 0 || error == EAGAIN || error == EINPROGRESS;
}

}  // namespace agileos::device_plugin
