#include "worker/transport/shm_call_server.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/shm/handshake.h"
#include "proto/shm/mapped_region.h"
#include "worker/transport/shm_connection.h"

namespace agileos::worker {

ShmCallServer::~ShmCallServer() { shutdown(); }

bool ShmCallServer::start(const std::string& socketPath, std::string* error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socketPath.empty() || socketPath.size() >= sizeof(address.sun_path)) {
    *error = "bad shared-memory socket path: " + socketPath;
    return false;
  }
  std::memcpy(address.sun_path, socketPath.c_str(), socketPath.size() + 1);
  ::unlink(socketPath.c_str());  // a stale socket from a previous worker with this id
  listenFd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // Created 0600 (the umask for the bind), never wider: until a client is attached only this
  // worker's uid and root may connect; the daemon then gives the file to the client's uid
  // (scheduler/endpoint_owner.h).
  const mode_t previousMask = ::umask(0177);
  const bool bound =
      listenFd_ >= 0 && ::bind(listenFd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::umask(previousMask);
  if (!bound || ::listen(listenFd_, 16) != 0 || ::pipe2(wakeFds_, O_CLOEXEC) != 0) {
    *error = "cannot listen on " + socketPath + ": " + std::strerror(errno);
    if (listenFd_ >= 0) ::close(listenFd_);
    listenFd_ = -1;
    return false;
  }
  socketPath_ = socketPath;
  acceptThread_ = std::thread([this] { acceptLoop(); });
  return true;
}

void ShmCallServer::shutdown() {
  if (listenFd_ < 0) return;
  stopping_ = true;
  const char byte = 0;
  [[maybe_unused]] ssize_t ignored = ::write(wakeFds_[1], &byte, 1);
  if (acceptThread_.joinable()) acceptThread_.join();
  std::list<ConnectionThread> remaining;
  {
    std::lock_guard lock(mutex_);
    remaining.swap(connections_);
  }
  for (ConnectionThread& connection : remaining) connection.thread.join();
  ::close(listenFd_);
  ::close(wakeFds_[0]);
  ::close(wakeFds_[1]);
  listenFd_ = -1;
  ::unlink(socketPath_.c_str());
}

std::size_t ShmCallServer::connectionCount() const {
  std::lock_guard lock(mutex_);
  std::size_t open = 0;
  for (const ConnectionThread& connection : connections_) open += connection.done ? 0 : 1;
  return open;
}

void ShmCallServer::reapFinished() {
  std::list<ConnectionThread> finished;
  {
    std::lock_guard lock(mutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if (it->done) finished.splice(finished.end(), connections_, it);
      it = next;
    }
  }
  for (ConnectionThread& connection : finished) connection.thread.join();
}

void ShmCallServer::acceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{listenFd_, POLLIN, 0}, {wakeFds_[0], POLLIN, 0}};
    // The timeout only bounds how long finished threads wait to be joined.
    if (::poll(fds, 2, 1000) < 0 && errno != EINTR) {
      spdlog::error("shm transport: poll: {}", std::strerror(errno));
      return;
    }
    reapFinished();
    if (stopping_ || (fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED || error == EAGAIN) continue;
      // EMFILE, ENFILE, ENOBUFS, ENOMEM last a while and poll keeps reporting the pending
      // connection: wait for connections to end instead of spinning (issue 14). The wake pipe
      // still ends the wait at once when the server stops.
      spdlog::warn("shm transport: accept: {}; backing off", std::strerror(error));
      pollfd wake{wakeFds_[0], POLLIN, 0};
      ::poll(&wake, 1, static_cast<int>(kAcceptBackoff.count()));
      continue;
    }
    // The peer first, before a byte is read or a slot is taken: only root and the uids of the
    // attached clients (WorkerRuntime::admitsPeerUid) get a connection.
    ucred peer{};
    socklen_t peerLength = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peerLength) != 0 ||
        !runtime_.admitsPeerUid(peer.uid)) {
      spdlog::warn("shm transport: refusing a connection from uid {} (not this worker's client)", peer.uid);
      ::close(fd);
      continue;
    }
    std::lock_guard lock(mutex_);
    if (connections_.size() >= kMaxConnections) {
      spdlog::warn("shm transport: refusing a connection: {} already open", connections_.size());
      ::close(fd);
      continue;
    }
    ConnectionThread& connection = connections_.emplace_back();
    connection.thread = std::thread([this, fd, &connection] {
      serve(fd);
      ::close(fd);
      connection.done = true;
    });
  }
}

void ShmCallServer::serve(int socketFd) {
  std::string token;
  std::string error;
  if (!shm::readTokenFrame(socketFd, kHandshakeTimeout, &token, &error)) {
    spdlog::warn("shm transport: handshake failed: {}", error);
    return;
  }
  if (!runtime_.isAttachedToken(token)) {
    spdlog::warn("shm transport: refused a connection with an unknown session token");
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (perSession_[token] >= kMaxConnectionsPerSession) {
      spdlog::warn("shm transport: refused a connection: the session already has {}",
                   kMaxConnectionsPerSession);
      return;
    }
    ++perSession_[token];
  }
  struct Release {
    ShmCallServer* server;
    const std::string& token;
    ~Release() {
      std::lock_guard lock(server->mutex_);
      if (--server->perSession_[token] == 0) server->perSession_.erase(token);
    }
  } release{this, token};
  std::unique_ptr<shm::MappedRegion> region = shm::MappedRegion::create(sizes_, &error);
  if (!region) {
    spdlog::error("shm transport: cannot create a region: {}", error);
    return;
  }
  if (!shm::sendRegionFd(socketFd, region->fd(), &error)) {
    spdlog::warn("shm transport: cannot pass the region: {}", error);
    return;
  }
  spdlog::info("shm transport: connection opened ({} bytes shared)", region->size());
  const std::string reason = serveShmConnection(runtime_, *region, socketFd, token, policy_, stopping_);
  const bool violated = reason.starts_with("protocol violation");
  spdlog::log(violated ? spdlog::level::warn : spdlog::level::info, "shm transport: connection ended: {}",
              reason);
}

}  // namespace agileos::worker
