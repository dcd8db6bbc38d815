#include "scheduler/peer_listener.h"

#include <fcntl.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace agileos::scheduler {
namespace {

constexpr int kBacklog = 128;
constexpr auto kInitialBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

std::optional<int> descriptorOfPeer(const std::string& peer) {
  if (peer.rfind("fd:", 0) != 0 || peer.size() == 3 || peer.size() > 13) return std::nullopt;
  int fd = 0;
  for (std::size_t i = 3; i < peer.size(); ++i) {
    if (peer[i] < '0' || peer[i] > '9') return std::nullopt;
    fd = fd * 10 + (peer[i] - '0');
  }
  return fd;
}

PeerListener::~PeerListener() { stop(); }

bool PeerListener::start(const std::string& socket_path, grpc::Server* server, std::string* error,
                         mode_t mode, std::optional<gid_t> group) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof address.sun_path) {
    *error = "socket path too long: " + socket_path;
    return false;
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) {
    *error = errnoText("socket");
    return false;
  }
  // The mode and group are set before listen(): until then a connect is refused, so nobody
  // reaches the socket under the permissions bind() gave it.
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::chmod(socket_path.c_str(), mode) != 0 ||
      (group && ::chown(socket_path.c_str(), static_cast<uid_t>(-1), *group) != 0) ||
      ::listen(listen_fd_, kBacklog) != 0) {
    *error = errnoText("listen on unix:" + socket_path);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  if (::pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    *error = errnoText("pipe");
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  server_ = server;
  thread_ = std::thread([this] { acceptLoop(); });
  return true;
}

void PeerListener::stop() {
  if (thread_.joinable()) {
    const char byte = 0;
    [[maybe_unused]] const ssize_t written = ::write(wake_fds_[1], &byte, 1);
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fds_[0], &wake_fds_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

std::optional<PeerCredentials> PeerListener::credentialsOf(const std::string& peer) const {
  const std::optional<int> fd = descriptorOfPeer(peer);
  if (!fd) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = by_fd_.find(*fd);
  if (it == by_fd_.end()) return std::nullopt;
  return it->second;
}

void PeerListener::acceptLoop() {
  auto backoff = kInitialBackoff;
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("agileosd: poll on the listening socket: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;  // stop()
    // Non-blocking: gRPC drives the descriptor from its poller and expects it so.
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        spdlog::warn("agileosd: accept: {}; backing off {} ms", std::strerror(errno), backoff.count());
        pollfd wake{wake_fds_[0], POLLIN, 0};
        if (::poll(&wake, 1, static_cast<int>(backoff.count())) > 0) return;
        backoff = std::min(backoff * 2, kMaxBackoff);
        continue;
      }
      spdlog::error("agileosd: accept: {}", std::strerror(errno));
      continue;
    }
    backoff = kInitialBackoff;
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
      spdlog::warn("agileosd: SO_PEERCRED: {}; connection dropped", std::strerror(errno));
      ::close(fd);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      by_fd_[fd] = PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
    }
    grpc::AddInsecureChannelFromFd(server_, fd);  // gRPC owns fd from here on
  }
}

}  // namespace agileos::scheduler
